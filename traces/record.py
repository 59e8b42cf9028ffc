"""Records real PyTorch CUDA memory traces for vmmkit's allocator replays.

    python3 traces/record.py --out traces/h200            # every workload, both settings
    python3 traces/record.py --out DIR --only moe_train   # one workload
    python3 traces/record.py --smoke                      # each workload, a few steps, on the CPU, no trace

Each workload runs twice, each time in a fresh Python process: once under
PyTorch's default caching allocator (PYTORCH_CUDA_ALLOC_CONF unset) and once
with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. The child starts the
allocator's history (torch.cuda.memory._record_memory_history) before its
first CUDA allocation, runs the workload, and writes
DIR/<workload>-<native|expandable>.pickle.gz: torch.cuda.memory._snapshot()
with every 'frames' list dropped (no stacks are recorded either), pickled and
gzipped, holding only plain Python values so that pickle.load needs no torch.
The parent collects what each child measured into DIR/pytorch-reserved.json.

Workloads are seeded: shapes come from random.Random(seed), weights and data
from torch.manual_seed, so both settings see the same sequence of requests
(traces/trace_stats.py compares them).
"""

import argparse
import datetime
import gzip
import json
import os
import pickle
import random
import subprocess
import sys
import time

from recording import (
    MAX_ENTRIES, allocator_env, child_result, chosen_workloads, cuda_driver_version, decode_round_robin, gpt,
    kv_decoder, nvidia_smi, plain, seed,
)

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = {"native": None, "expandable": "expandable_segments:True"}
# --seed-offset N (passed to the children through the environment) moves every seed by N: other
# shapes and sizes for the same kinds of workload, to check allocators on traces they were not tuned on.
SEED_OFFSET = int(os.environ.get("VMMKIT_TRACE_SEED_OFFSET", "0"))


# ----------------------------------------------------------------- workloads
# Each takes (torch, device, steps_scale) and runs to completion. torch is passed
# in so that this module imports without PyTorch (the parent process never
# touches CUDA, and trace_stats.py needs no torch). The networks are
# recording.py's, shared with traces/h200-whatif/record.py.


def transformer_train(torch, dev, scale):
    """A GPT-style decoder (6 layers, d=768) trained with AdamW under bf16 autocast;
    every step draws its batch size and sequence length anew."""
    F = torch.nn.functional
    rng = random.Random(1 + SEED_OFFSET)
    vocab, d, heads, layers = 8192, 768, 12, 6
    model = gpt(torch, vocab, d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(max(2, 30 // scale)):
        batch, seq = rng.choice([4, 8, 12, 16]), rng.choice([128, 256, 384, 512, 768, 1024])
        idx = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def kv_cache_decode(torch, dev, scale):
    """Inference with per-request KV caches grown by torch.cat at every decoding step:
    twelve requests of different prompt and output lengths, up to four in flight,
    decoded round-robin (one token per request per tick), bf16 weights, batch 8 each."""
    rng = random.Random(2 + SEED_OFFSET)
    vocab, d, heads, layers, beams = 8192, 1024, 16, 4, 8
    step = kv_decoder(torch, dev, torch.bfloat16, vocab, d, heads, layers)
    pending = [(rng.randint(32, 512), max(2, rng.randint(24, 96) // scale)) for _ in range(12)]
    decode_round_robin(torch, dev, step, pending, vocab, beams)


def cnn_train(torch, dev, scale):
    """A ResNet-style convolutional net (4 stages, 64 to 512 channels, batch norm) trained
    with SGD and momentum; image size cycles through six sizes from 64 to 224."""
    nn, F = torch.nn, torch.nn.functional

    class Res(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.skip = (
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                if stride != 1 or cin != cout
                else nn.Identity()
            )

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            return F.relu(self.b2(self.c2(y)) + self.skip(x))

    widths = [64, 128, 256, 512]
    blocks = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, w in enumerate(widths):
        blocks += [Res(cin, w, 1 if i == 0 else 2), Res(w, w, 1)]
        cin = w
    net = nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    sizes = [64, 96, 128, 160, 192, 224]
    if SEED_OFFSET:
        random.Random(3 + SEED_OFFSET).shuffle(sizes)
    for s in range(max(2, 36 // scale)):
        side = sizes[s % len(sizes)]
        x = torch.randn(32, 3, side, side, device=dev)
        y = torch.randint(0, 1000, (32,), device=dev)
        F.cross_entropy(net(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def moe_train(torch, dev, scale):
    """Two mixture-of-experts layers (8 experts, top-2 routing, d=1024, hidden 2048) trained
    with AdamW; the router is biased so experts get very uneven token counts, and the
    token count per step varies, so every expert's activations change size every step."""
    nn, F = torch.nn, torch.nn.functional
    rng = random.Random(4 + SEED_OFFSET)
    d, hidden, experts, top = 1024, 2048, 8, 2

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(d, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * d**-0.5)
            self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * hidden**-0.5)
            # A fixed skew: expert e is favoured in proportion to exp(-e/2).
            self.register_buffer("skew", -0.5 * torch.arange(experts, dtype=torch.float32))

        def forward(self, x):
            gates = F.softmax(self.router(x) + self.skew, dim=-1)
            weight, chosen = gates.topk(top, dim=-1)
            out = torch.zeros_like(x)
            for e in range(experts):
                token, slot = (chosen == e).nonzero(as_tuple=True)
                if token.numel() == 0:
                    continue
                h = F.gelu(x[token] @ self.w1[e]) @ self.w2[e]
                out = out.index_add(0, token, h * weight[token, slot].unsqueeze(-1))
            return x + out

    net = nn.Sequential(nn.LayerNorm(d), MoE(), nn.LayerNorm(d), MoE()).to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    for _ in range(max(2, 30 // scale)):
        tokens = rng.choice([2048, 4096, 6144, 8192, 12288, 16384])
        x = torch.randn(tokens, d, device=dev)
        loss = (net(x) - x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def phases_streams(torch, dev, scale):
    """Three phases with torch.cuda.empty_cache() between them: an MLP trained on batches
    staged by a second stream (allocated there, used on the main stream, so their frees
    wait on record_stream); then large one-off activations of a different shape; then the
    MLP again at another batch size."""
    nn, F = torch.nn, torch.nn.functional
    cuda = dev.type == "cuda"
    mlp = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048)).to(dev)
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-4)
    side = torch.cuda.Stream() if cuda else None

    def train(batch, steps):
        host = [torch.randn(batch, 2048).pin_memory() if cuda else torch.randn(batch, 2048) for _ in range(2)]
        for s in range(steps):
            if cuda:
                with torch.cuda.stream(side):
                    x = host[s % 2].to(dev, non_blocking=True)
                torch.cuda.current_stream().wait_stream(side)
                x.record_stream(torch.cuda.current_stream())
            else:
                x = host[s % 2].to(dev)
            F.mse_loss(mlp(x), x).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x

    def release():
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    rng = random.Random(5 + SEED_OFFSET)
    first, second = (4096, 6144) if not SEED_OFFSET else (rng.choice((2048, 3072, 4096)), rng.choice((5120, 6144, 8192)))
    sides = (3000, 5000, 7000, 9000) if not SEED_OFFSET else tuple(rng.randrange(2000, 10000, 500) for _ in range(4))
    train(first, max(2, 12 // scale))
    release()
    for n in sides:
        a = torch.randn(n, n, device=dev)
        b = (a @ a.T).softmax(-1)
        del a, b
    release()
    train(second, max(2, 12 // scale))


WORKLOADS = {
    "transformer_train": transformer_train,
    "kv_cache_decode": kv_cache_decode,
    "cnn_train": cnn_train,
    "moe_train": moe_train,
    "phases_streams": phases_streams,
}


# ----------------------------------------------------------------- child


def child(workload, setting, out_dir):
    """Runs one workload under the allocator setting the parent put in the environment."""
    import torch

    sys.path.insert(0, HERE)
    from trace_stats import summarize

    seed(torch, SEED_OFFSET)
    # Before the first CUDA allocation, so the history holds every event of the run.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=MAX_ENTRIES)
    dev = torch.device("cuda", 0)
    started = time.time()
    WORKLOADS[workload](torch, dev, 1)
    torch.cuda.synchronize()
    seconds = time.time() - started
    snapshot = plain(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    stats = torch.cuda.memory_stats()

    path = os.path.join(out_dir, f"{workload}-{setting}.pickle.gz")
    with gzip.open(path, "wb", compresslevel=9) as f:
        pickle.dump(snapshot, f, protocol=4)
    trace = summarize(snapshot)
    gpu, driver = nvidia_smi()
    return {
        "workload": workload,
        "setting": setting,
        "seedOffset": SEED_OFFSET,
        "allocConf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudaDriverVersion": cuda_driver_version(),
        "driver": driver,
        "gpu": gpu or torch.cuda.get_device_name(0),
        "maxMemoryReserved": torch.cuda.max_memory_reserved(),
        "maxMemoryAllocated": torch.cuda.max_memory_allocated(),
        "peakRequestedBytes": stats.get("requested_bytes.all.peak"),
        "numAllocRetries": stats.get("num_alloc_retries"),
        "reservedOverRequested": round(torch.cuda.max_memory_reserved() / stats["requested_bytes.all.peak"], 4)
        if stats.get("requested_bytes.all.peak")
        else None,
        "trace": os.path.basename(path),
        "traceBytes": os.path.getsize(path),
        "seconds": round(seconds, 2),
        "maxEntries": MAX_ENTRIES,
        **{f"trace_{k}": v for k, v in trace.items()},
    }


# ----------------------------------------------------------------- parent


def record_all(out_dir, names, jobs):
    """Runs every (workload, setting) in its own process, `jobs` at a time; writes pytorch-reserved.json."""
    os.makedirs(out_dir, exist_ok=True)
    todo = [(w, s) for w in names for s in SETTINGS]
    running, runs, failures = [], [], []
    while todo or running:
        while todo and len(running) < jobs:
            w, s = todo.pop(0)
            env = allocator_env(SETTINGS[s])
            cmd = [sys.executable, os.path.abspath(__file__), "--child", w, s, out_dir]
            running.append((w, s, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)))
        time.sleep(0.2)
        for item in list(running):
            w, s, p = item
            if p.poll() is None:
                continue
            running.remove(item)
            out = p.stdout.read()
            r = child_result(out) if p.returncode == 0 else None
            if r is not None:
                runs.append(r)
                print(f"{w:18} {s:10} events {r['trace_events']:7}  reserved {r['maxMemoryReserved'] / 2**20:9.1f} MiB"
                      f"  requested {r['peakRequestedBytes'] / 2**20:9.1f} MiB  {r['seconds']:.1f} s", flush=True)
            else:
                failures.append({"workload": w, "setting": s, "exit": p.returncode})
                print(f"{w} {s}: failed with exit {p.returncode}", flush=True)
    runs.sort(key=lambda r: (names.index(r["workload"]), list(SETTINGS).index(r["setting"])))
    path = os.path.join(out_dir, "pytorch-reserved.json")
    with open(path, "w") as f:
        json.dump({"script": "traces/record.py", "runs": runs, "failures": failures}, f, indent=1)
        f.write("\n")
    return 1 if failures else 0


def smoke():
    """Every workload on the CPU with few steps: checks the workload code runs, records nothing."""
    import torch

    for name, fn in WORKLOADS.items():
        torch.manual_seed(SEED_OFFSET)
        t = time.time()
        fn(torch, torch.device("cpu"), 15)
        print(f"{name}: ran on the CPU in {time.time() - t:.1f} s", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "h200"))
    ap.add_argument("--only", help="comma-separated workload names")
    ap.add_argument("--jobs", type=int, default=5, help="runs at a time (each its own process)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--seed-offset", type=int, default=0, help="move every seed by N (held-out traces)")
    ap.add_argument("--child", nargs=3, metavar=("WORKLOAD", "SETTING", "DIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.seed_offset and not a.child:
        # The children read it at import; the parent re-executes itself for each run.
        os.environ["VMMKIT_TRACE_SEED_OFFSET"] = str(a.seed_offset)
    if a.child:
        print(json.dumps(child(*a.child)), flush=True)
        return 0
    if a.smoke:
        return smoke()
    return record_all(a.out, chosen_workloads(ap, a.only, WORKLOADS), a.jobs)


if __name__ == "__main__":
    sys.exit(main())
