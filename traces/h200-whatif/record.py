"""Ground truth for vmmkit's what-if replay: PyTorch's own figures under other allocator
settings and memory limits, recorded on a real GPU, one fresh process per run.

    python3 traces/h200-whatif/record.py --out DIR              # every run (on a GPU machine)
    python3 traces/h200-whatif/record.py --out DIR --only kv_decode
    python3 traces/h200-whatif/record.py --verify advice.json --out DIR
    python3 traces/h200-whatif/record.py --smoke                # workloads on the CPU, briefly, no trace

What a recording holds (DIR/results.json, written by this script, never by hand):

* Four seeded workloads (training, inference with a growing KV cache, CUDA graphs, several streams),
  each of which makes exactly the same sequence of allocation requests under every setting (checked:
  results.json's `requests` compares every run's alloc sizes and streams with its reference run).
* Per workload, one process per run:
  - `reference`: PYTORCH_CUDA_ALLOC_CONF unset, no memory limit, the allocator's history recorded from
    before the first CUDA allocation without stacks (as traces/record.py records). Its snapshot is the
    input of every prediction. `reference-repeat` runs it again, to show the figures repeat.
  - settings without a limit: expandable_segments, max_split_size_mb 64 and 256, roundup_power2_divisions
    4 and a per-size list, expandable_segments with max_split_size_mb 128;
  - garbage_collection_threshold 0.6, and 0.8 with max_split_size_mb 128, under a limit of 1.25 times the
    reference's peak (the threshold acts only under a limit);
  - memory limits (torch.cuda.set_per_process_memory_fraction): the reference's own peak (fits, exactly),
    the expandable run's peak, and 90% of the peak requested bytes (below what any allocator can fit), under
    the default allocator, expandable segments and max_split_size_mb 256.
  Each run records PyTorch's max_memory_reserved, memory_stats (num_alloc_retries, num_ooms, ...), and, for
  a run that ended in torch.OutOfMemoryError, the alloc events before the failing request and its size,
  read from the snapshot taken in the except handler (kept: it has the `oom` action).
* Special recordings: history started after warm-up (kv_decode, native and expandable: the history and
  reset_peak_memory_stats() start at the same point, so max_memory_reserved is the window's), a ring buffer
  that overflowed (gpt_train, max_entries about a third of the run's events, native and expandable), and
  `_dump_snapshot` with stacks as users call it (`_record_memory_history()` with its default arguments).

The memory limit: PyTorch computes its allowed bytes as static_cast<size_t>(fraction * totalGlobalMem).
The script picks the fraction whose product is exactly the wanted byte count (`fraction_for`) and records
both; `allowedBytes` is what the allocator enforces.

Snapshots are `torch.cuda.memory._snapshot()` with every 'frames' list dropped, pickled (protocol 4) and
gzipped, holding only plain Python values (traces/recording.py's `plain`), except the stacks file, which is
`_dump_snapshot`'s own pickle.

--verify FILE: FILE is JSON [{workload, allocConf, memoryLimit (bytes or null), predictedPeakReservedBytes}];
each entry runs in its own process as recorded runs do, and DIR/verified.json gets PyTorch's
max_memory_reserved beside the prediction.
"""

import argparse
import contextlib
import datetime
import gzip
import json
import math
import os
import pickle
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # traces/: recording.py (shared with traces/record.py), trace_stats.py

from recording import (  # noqa: E402
    MAX_ENTRIES, allocator_env, child_result, chosen_workloads, cuda_driver_version, decode_round_robin, gpt,
    kv_decoder, nvidia_smi, plain, seed,
)
from trace_stats import summarize  # noqa: E402

MIB = 1 << 20


# ----------------------------------------------------------------- workloads
# Each takes (torch, device, scale, mark): scale > 1 shortens it (the smoke test), and
# mark(name) is called at fixed points (the child starts a late history at one, and reads
# memory_reserved() at each). None of them asks for memory that depends on the data or on
# timing, so every setting sees the same requests. On the CPU (--smoke) shapes shrink. The
# networks are traces/recording.py's, shared with traces/record.py.


def gpt_train(torch, dev, scale, mark):
    """Training: a GPT-style decoder (6 layers, d=768, vocab 8192) with AdamW under bf16 autocast, 14
    steps whose batch and sequence length change every step; the two largest steps come last, so the
    run's peak falls in its final third (the ring-buffer recording relies on that)."""
    F = torch.nn.functional
    cpu = dev.type == "cpu"
    rng = random.Random(11)
    vocab, d, heads, layers = 8192, (128 if cpu else 768), 4 if cpu else 12, 6
    steps = max(3, 14 // scale)
    shapes = [(rng.choice([4, 8, 12]), rng.choice([256, 384, 512, 640, 768, 1024])) for _ in range(steps - 2)]
    shapes += [(16, 1024), (16, 960)]
    if cpu:
        shapes = [(2, max(16, t // 16)) for _, t in shapes]
    model = gpt(torch, vocab, d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i, (batch, seq) in enumerate(shapes):
        mark(f"step{i}")
        idx = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del idx, logits, loss


def kv_decode(torch, dev, scale, mark):
    """Inference: bf16, 4 layers d=1024; 10 requests (prompts 64 to 512 tokens, 12 to 40 new tokens,
    8 beams each), up to 4 in flight, decoded round-robin; each step grows every layer's K and V cache by
    torch.cat, so every step allocates a slightly longer copy and frees the old one."""
    cpu = dev.type == "cpu"
    rng = random.Random(12)
    vocab, d, heads, layers, beams = 8192, (128 if cpu else 1024), (4 if cpu else 16), 4, 8
    step = kv_decoder(torch, dev, torch.float32 if cpu else torch.bfloat16, vocab, d, heads, layers)
    pending = [(rng.randint(64, 512), max(2, rng.randint(12, 40) // scale)) for _ in range(10)]
    if cpu:
        pending = [(p // 8, n) for p, n in pending[:5]]
    decode_round_robin(torch, dev, step, pending, vocab, beams, admit=lambda i: mark(f"admit{i}"))


def graphs_serve(torch, dev, scale, mark):
    """CUDA graphs: a bf16 MLP stack (4 blocks, d=2048, hidden 8192) with a 16384-way output,
    captured with torch.cuda.graph at 4096, 2048, 1024 and 512 tokens into one shared private pool
    (largest first, as servers capture), a sampling graph in a pool of its own, 24 served batches
    (graph replays, eager pre- and post-processing, every fourth one an eager long batch), then a
    small MLP trained 8 steps through torch.cuda.make_graphed_callables (forward and backward graphs,
    private pool), then two eager long batches. Every graph lives to the end. torch.cuda.graph calls
    torch.cuda.empty_cache() before each capture."""
    nn, F = torch.nn, torch.nn.functional
    cuda = dev.type == "cuda"
    rng = random.Random(13)
    d, hidden, vocab = (2048, 8192, 16384) if cuda else (64, 256, 512)
    sizes = [4096, 2048, 1024, 512] if cuda else [64, 32, 16, 8]
    dtype = torch.bfloat16 if cuda else torch.float32

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.up, self.down = nn.LayerNorm(d), nn.Linear(d, hidden), nn.Linear(hidden, d)

        def forward(self, x):
            return x + self.down(F.gelu(self.up(self.ln(x))))

    body = nn.Sequential(*[Block() for _ in range(4)]).to(dev, dtype).eval()
    head = nn.Linear(d, vocab, bias=False).to(dev, dtype).eval()

    def forward(x):
        return head(body(x)).float().softmax(-1)

    def side_warmup(fn, *args):
        """The warm-up torch.cuda.graph's documentation asks for: a few runs on a side stream."""
        if not cuda:
            return
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn(*args)
        torch.cuda.current_stream().wait_stream(s)

    graphs = {}
    with torch.no_grad():
        pool = None
        for n in sizes:
            mark(f"capture{n}")
            static_in = torch.zeros(n, d, device=dev, dtype=dtype)
            side_warmup(forward, static_in)
            if cuda:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    static_out = forward(static_in)
                pool = pool if pool is not None else g.pool()
            else:
                g, static_out = None, forward(static_in)
            graphs[n] = (g, static_in, static_out)

        mark("capture-sampler")
        samp_in = torch.zeros(sizes[0], vocab, device=dev)

        def sample(p):
            return (p * 1.25).softmax(-1).cumsum(-1).argmax(-1)

        side_warmup(sample, samp_in)
        if cuda:
            samp_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(samp_graph):  # a private pool of its own
                samp_out = sample(samp_in)
        else:
            samp_graph, samp_out = None, sample(samp_in)

        mark("serve")
        for it in range(max(2, 24 // scale)):
            n = rng.choice([s * 3 // 4 for s in sizes] + sizes[1:])
            x = torch.randn(n, d, device=dev, dtype=dtype)
            size = min(s for s in sizes if s >= n)
            g, static_in, static_out = graphs[size]
            static_in[:n].copy_(x)
            if cuda:
                g.replay()
            else:
                static_out = forward(static_in)
            probs = static_out[:n].clone()
            samp_in[:n].copy_(probs)
            if cuda:
                samp_graph.replay()
            tokens = samp_out[:n].clone()
            top = probs.topk(4, dim=-1).indices
            del x, probs, tokens, top
            if it % 4 == 3:  # a batch longer than any graph: eager
                long = torch.randn(rng.choice([5000, 6144, 8192]) if cuda else 100, d, device=dev, dtype=dtype)
                out = forward(long)
                del long, out

    mark("train")
    mlp = nn.Sequential(nn.Linear(d // 2, d * 2), nn.GELU(), nn.Linear(d * 2, d // 2)).to(dev)
    opt = torch.optim.SGD(mlp.parameters(), lr=1e-3, momentum=0.9)
    batch = sizes[1]
    graphed = torch.cuda.make_graphed_callables(mlp, (torch.randn(batch, d // 2, device=dev),)) if cuda else mlp
    for _ in range(max(2, 8 // scale)):
        x = torch.randn(batch, d // 2, device=dev)
        loss = F.mse_loss(graphed(x), x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss

    mark("long")
    with torch.no_grad():
        for n in (12288, 10240) if cuda else (128, 96):
            out = forward(torch.randn(n, d, device=dev, dtype=dtype))
            del out
    del graphs, samp_graph, samp_out, samp_in  # every graph lived to the end


def streams_pipeline(torch, dev, scale, mark):
    """Several streams: an MLP (2048 -> 8192 -> 2048) trained with Adam on batches copied in on two
    alternating copy streams; a third stream computes each batch's target from it, so the batch is used
    on three streams (record_stream on two) and its frees wait on events (free_requested and
    free_completed apart; each step ends with a synchronize, so they complete at the next step's first
    malloc whatever the GPU's timing). Between two training phases of different batch sizes, one-off
    large matrix products on the side stream (memory that only that stream can reuse), then synchronize
    and empty_cache()."""
    nn, F = torch.nn, torch.nn.functional
    cuda = dev.type == "cuda"
    rng = random.Random(14)
    d, hidden = (2048, 8192) if cuda else (64, 256)
    mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d)).to(dev)
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-4)
    proj = torch.randn(d, d, device=dev) / math.sqrt(d)
    copy_a, copy_b, side = (torch.cuda.Stream() for _ in range(3)) if cuda else (None, None, None)
    host = {}

    def on(s):
        return torch.cuda.stream(s) if cuda else contextlib.nullcontext()

    def hosted(b):
        if b not in host:
            host[b] = torch.randn(b, d).pin_memory() if cuda else torch.randn(b, d)
        return host[b]

    def train(steps, batches):
        for step in range(steps):
            b = rng.choice(batches) if cuda else rng.choice(batches) // 64
            s = copy_a if step % 2 == 0 else copy_b
            with on(s):
                x = hosted(b).to(dev, non_blocking=True)
                noise = torch.randn_like(x) * 0.01
            if cuda:
                side.wait_stream(s)
            with on(side):
                target = torch.tanh((x + noise) @ proj)
            if cuda:
                main = torch.cuda.current_stream()
                x.record_stream(side)
                noise.record_stream(side)
                main.wait_stream(side)
                x.record_stream(main)  # no loop variable: it would keep the last tensor alive into the next step
                noise.record_stream(main)
                target.record_stream(main)
            loss = F.mse_loss(mlp(x), target)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x, noise, target, loss
            if cuda:
                # Note [Deterministic cross-stream frees]: the batch's frees wait on events, and the
                # allocator completes them at the first malloc that finds the events done. Without
                # this, when that is depends on the GPU's timing, and so (in two recordings) did the
                # reserved peak. With it, every free completes at the next step's first malloc.
                torch.cuda.synchronize()

    mark("phase1")
    train(max(2, 16 // scale), [1024, 2048, 3072, 4096])
    mark("phase2")
    for n in (3000, 5000, 7000, 6000) if cuda else (30, 50):
        with on(side):
            a = torch.randn(n, n, device=dev)
            b = (a @ a.T).softmax(-1)
            del a, b
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    mark("phase3")
    train(max(2, 16 // scale), [2048, 4096, 6144, 8192])


WORKLOADS = {
    "gpt_train": gpt_train,
    "kv_decode": kv_decode,
    "graphs_serve": graphs_serve,
    "streams_pipeline": streams_pipeline,
}

# ----------------------------------------------------------------- the runs

SETTINGS = {  # label -> PYTORCH_CUDA_ALLOC_CONF, for runs without a limit
    "expandable": "expandable_segments:True",
    "mss64": "max_split_size_mb:64",
    "mss256": "max_split_size_mb:256",
    "rp4": "roundup_power2_divisions:4",
    "rplist": "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
    "es-mss128": "expandable_segments:True,max_split_size_mb:128",
}
GC_SETTINGS = {  # garbage collection acts only under a limit: 1.25 times the reference's peak
    "gc06": "garbage_collection_threshold:0.6",
    "gc08-mss128": "garbage_collection_threshold:0.8,max_split_size_mb:128",
}
# label -> (PYTORCH_CUDA_ALLOC_CONF, which limit); limits are computed from stage-one runs (limit_bytes).
LIMIT_RUNS = {
    "limit-peak": (None, "peak"),
    "limit-espeak": (None, "espeak"),
    "limit-req90": (None, "req90"),
    "es-limit-espeak": ("expandable_segments:True", "espeak"),
    "es-limit-req90": ("expandable_segments:True", "req90"),
    "mss256-limit-espeak": ("max_split_size_mb:256", "espeak"),
}
LIMIT_RULES = {
    "peak": "the reference run's max_memory_reserved",
    "espeak": "the expandable run's max_memory_reserved",
    "req90": "90% of the reference's peak requested bytes, rounded down to a MiB",
    "gc": "1.25 times the reference's max_memory_reserved, rounded down to 2 MiB",
}
MIDRUN = {"workload": "kv_decode", "mark": "admit4"}  # history and peak stats start at the 5th admission
RING = {"workload": "gpt_train", "share": 0.35}  # max_entries: 35% of the reference run's events
STACKS = {"workload": "gpt_train", "scale": 3}  # 4 steps


def limit_bytes(rule, ref, es):
    if rule == "peak":
        return ref["maxMemoryReserved"]
    if rule == "espeak":
        return es["maxMemoryReserved"]
    if rule == "req90":
        return int(0.9 * ref["peakRequestedBytes"]) // MIB * MIB
    if rule == "gc":
        return int(1.25 * ref["maxMemoryReserved"]) // (2 * MIB) * (2 * MIB)
    raise ValueError(rule)


def fraction_for(limit, total):
    """The fraction f for which PyTorch's static_cast<size_t>(f * double(total)) is exactly `limit`
    (or the nearest below it, should no double give it exactly)."""
    f = limit / total
    while int(f * float(total)) < limit:
        f = math.nextafter(f, 2.0)
    while int(f * float(total)) > limit:
        f = math.nextafter(f, 0.0)
    return f


def plan_jobs(names):
    """Every run, in the order they may start: (name, build), build(done) giving the run's spec once
    the stage-one runs it depends on are done (None while they are not; 'failed' if one failed)."""
    jobs = []

    def fixed(spec):
        return lambda done: spec

    def needs(workload, make):
        def build(done):
            ref, es = done.get(f"{workload}--reference"), done.get(f"{workload}--expandable")
            if ref == "failed" or es == "failed":
                return "failed"
            if ref is None or es is None:
                return None
            return make(ref, es)

        return build

    for w in names:
        jobs.append((f"{w}--reference", fixed({"workload": w, "kind": "reference", "label": "reference", "conf": None})))
        jobs.append((f"{w}--expandable", fixed({"workload": w, "kind": "setting", "label": "expandable", "conf": SETTINGS["expandable"]})))
    for w in names:
        # The reference once more: the workload's figures do not depend on the GPU's timing.
        jobs.append((f"{w}--reference-repeat", fixed({"workload": w, "kind": "repeat", "label": "reference-repeat", "conf": None})))
        for label, conf in SETTINGS.items():
            if label != "expandable":
                jobs.append((f"{w}--{label}", fixed({"workload": w, "kind": "setting", "label": label, "conf": conf})))
    if MIDRUN["workload"] in names:
        w = MIDRUN["workload"]
        for label, conf in (("midrun-native", None), ("midrun-expandable", SETTINGS["expandable"])):
            spec = {"workload": w, "kind": "midrun", "label": label, "conf": conf, "startAt": MIDRUN["mark"]}
            jobs.append((f"{w}--{label}", fixed(spec)))
    if STACKS["workload"] in names:
        # First in the queue: symbolizing C++ stacks can be slow. The second run, with PyTorch's fast
        # in-process symbolizer, is a fallback: its file is kept only if the first run failed.
        w = STACKS["workload"]
        spec = {"workload": w, "kind": "stacks", "label": "stacks", "conf": None, "scale": STACKS["scale"]}
        jobs.insert(0, (f"{w}--stacks", fixed(spec)))
        fast = dict(spec, label="stacks-fast", env={"TORCH_SYMBOLIZE_MODE": "fast"})
        jobs.insert(1, (f"{w}--stacks-fast", fixed(fast)))
    for w in names:
        for label, conf in GC_SETTINGS.items():
            jobs.append((f"{w}--{label}", needs(w, lambda ref, es, w=w, label=label, conf=conf: {
                "workload": w, "kind": "gc", "label": label, "conf": conf,
                "limit": limit_bytes("gc", ref, es), "limitRule": "gc"})))
        for label, (conf, rule) in LIMIT_RUNS.items():
            jobs.append((f"{w}--{label}", needs(w, lambda ref, es, w=w, label=label, conf=conf, rule=rule: {
                "workload": w, "kind": "limit", "label": label, "conf": conf,
                "limit": limit_bytes(rule, ref, es), "limitRule": rule})))
    if RING["workload"] in names:
        w = RING["workload"]
        for label, conf, base in (("ring-native", None, "reference"), ("ring-expandable", SETTINGS["expandable"], "expandable")):
            jobs.append((f"{w}--{label}", needs(w, lambda ref, es, w=w, label=label, conf=conf, base=base: {
                "workload": w, "kind": "ring", "label": label, "conf": conf,
                "maxEntries": int(RING["share"] * (ref if base == "reference" else es)["trace"]["events"])})))
    return jobs


# ----------------------------------------------------------------- child


def trace_window(snapshot, reserved_at_end):
    """Reserved bytes over a trace that may start mid-run: at its start (the end's figure less what the
    trace's segment events added) and at its peak. Exact: every change of reserved memory is a segment
    event (segment_alloc/free native, segment_map/unmap expandable)."""
    events = snapshot["device_traces"][0] if snapshot["device_traces"] else []
    sign = {"segment_alloc": 1, "segment_free": -1, "segment_map": 1, "segment_unmap": -1}
    held = peak = 0
    for e in events:
        s = sign.get(e["action"])
        if s:
            held += s * e["size"]
            peak = max(peak, held)
    start = reserved_at_end - held
    return {"reservedAtStart": start, "peakReserved": start + peak, "reservedAtEnd": reserved_at_end}


def oom_of(snapshot):
    """The first `oom` action: its index, the alloc events before it, its size and device_free."""
    events = snapshot["device_traces"][0] if snapshot["device_traces"] else []
    allocs = 0
    for i, e in enumerate(events):
        if e["action"] == "oom":
            return {"eventIndex": i, "allocsBefore": allocs, "size": e["size"],
                    "deviceFree": e.get("device_free", e.get("addr")), "entry": dict(e)}
        if e["action"] == "alloc":
            allocs += 1
    return None


STAT_KEYS = [
    "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "num_sync_all_streams",
    "reserved_bytes.all.peak", "allocated_bytes.all.peak", "requested_bytes.all.peak", "active_bytes.all.peak",
    "reserved_bytes.all.current", "allocated_bytes.all.current", "inactive_split_bytes.all.peak",
    "oversize_allocations.peak", "oversize_segments.peak",
]


def child(spec, out_dir):
    """One run, in this fresh process, under the allocator setting the parent put in the environment."""
    import torch

    OOM = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    seed(torch, 0)
    dev = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(0)
    total = props.total_memory
    mem_get_info_total = torch.cuda.mem_get_info(0)[1]  # now: after a failed capture it may not answer
    fraction = allowed = None
    if spec.get("limit") is not None:
        fraction = fraction_for(spec["limit"], total)
        allowed = int(fraction * float(total))
        torch.cuda.set_per_process_memory_fraction(fraction, 0)
    kind = spec["kind"]
    history = {"enabled": "all", "context": None, "stacks": "python", "max_entries": MAX_ENTRIES}
    if kind == "ring":
        history["max_entries"] = spec["maxEntries"]
    marks = []
    window = {}

    def mark(name):
        m = {"mark": name, "reserved": torch.cuda.memory_reserved(0), "allocated": torch.cuda.memory_allocated(0)}
        if kind == "midrun" and name == spec["startAt"]:
            torch.cuda.memory._record_memory_history(**history)
            torch.cuda.reset_peak_memory_stats(0)
            window.update(startedAt=name, reservedAtStart=m["reserved"], allocatedAtStart=m["allocated"])
        marks.append(m)

    if kind == "stacks":
        torch.cuda.memory._record_memory_history()  # as users call it: default arguments
    elif kind != "midrun":
        torch.cuda.memory._record_memory_history(**history)  # before the first CUDA allocation
    ended, error = "ok", None
    started = time.time()
    snapshot = None
    try:
        WORKLOADS[spec["workload"]](torch, dev, spec.get("scale", 1), mark)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - an OOM is the point; anything else is recorded too
        chain, c = [], e
        while c is not None and len(chain) < 5:  # an OOM inside a graph capture surfaces as capture_end's error
            chain.append({"type": type(c).__name__, "message": str(c)[:600]})
            c = c.__cause__ or c.__context__
        ended = "oom" if isinstance(e, OOM) else "error"
        error = dict(chain[0], chain=chain[1:], oomInChain=any(t["type"] == OOM.__name__ for t in chain))
        if kind != "stacks":
            snapshot = plain(torch.cuda.memory._snapshot())  # in the handler: the trace has the oom action
    seconds = time.time() - started
    stats = torch.cuda.memory_stats(0)
    reserved_end = torch.cuda.memory_reserved(0)
    result = {
        "name": spec["name"], "workload": spec["workload"], "kind": kind, "label": spec["label"],
        "allocConf": spec["conf"], "limit": spec.get("limit"), "limitRule": spec.get("limitRule"),
        "fraction": fraction, "allowedBytes": allowed, "deviceTotalBytes": total,
        "memGetInfoTotalBytes": mem_get_info_total,
        "ended": ended, "error": error,
        "maxMemoryReserved": torch.cuda.max_memory_reserved(0),
        "maxMemoryAllocated": torch.cuda.max_memory_allocated(0),
        "memoryReservedAtEnd": reserved_end,
        "peakRequestedBytes": stats.get("requested_bytes.all.peak"),
        "numAllocRetries": stats.get("num_alloc_retries"),
        "numOoms": stats.get("num_ooms"),
        "memoryStats": {k: stats.get(k) for k in STAT_KEYS},
        "marks": marks,
        "seconds": round(seconds, 2),
        "torch": torch.__version__, "cuda": torch.version.cuda,
    }
    if kind == "stacks":
        path = os.path.join(out_dir, f"{spec['name']}.pickle")
        t = time.time()
        torch.cuda.memory._dump_snapshot(path)
        result.update(file=os.path.basename(path), dumpSeconds=round(time.time() - t, 2), history="_record_memory_history() defaults")
        torch.cuda.memory._record_memory_history(enabled=None)
        with open(path, "rb") as f:
            snapshot = pickle.load(f)
        result["trace"] = summarize(snapshot)
        result["stackFrames"] = sum(len(e.get("frames") or []) for e in snapshot["device_traces"][0])
        return result
    if snapshot is None:
        snapshot = plain(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    result["allocatorSettings"] = snapshot.get("allocator_settings")
    result["maxEntries"] = history["max_entries"]
    result["trace"] = summarize(snapshot)
    result["oom"] = oom_of(snapshot)
    if kind not in ("midrun", "ring"):
        # A whole-run history: its segment events add up to PyTorch's own peak (traces/README.md).
        result["tracePeakEqualsMaxReserved"] = result["trace"]["peakSegmentBytes"] == result["maxMemoryReserved"]
    if kind in ("midrun", "ring"):
        derived = trace_window(snapshot, reserved_end)
        window.update({f"trace{k[0].upper()}{k[1:]}": v for k, v in derived.items()})
        if kind == "midrun":
            window["maxMemoryReservedSinceStart"] = result["maxMemoryReserved"]
        else:
            # The ring holds the newest events; the run's peak is PyTorch's own figure for the window
            # when it fell inside it (the workload puts it in the final steps).
            window["peakInWindow"] = derived["peakReserved"] == result["maxMemoryReserved"]
        window["segmentsAtEnd"] = sum(s["total_size"] for s in snapshot["segments"])
        result["window"] = window
    path = os.path.join(out_dir, f"{spec['name']}.pickle.gz")
    with gzip.open(path, "wb", compresslevel=9) as f:
        pickle.dump(snapshot, f, protocol=4)
    result["file"] = os.path.basename(path)
    return result


# ----------------------------------------------------------------- parent


def requests_of(snapshot):
    """Alloc sizes and stream ordinals (streams numbered by first use) of device 0's trace."""
    events = snapshot["device_traces"][0] if snapshot["device_traces"] else []
    streams, sizes, ords = {}, [], []
    for e in events:
        if e["action"] == "alloc":
            sizes.append(e["size"])
            ords.append(streams.setdefault(e["stream"], len(streams)))
    return sizes, ords


def load_snapshot(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return pickle.load(f)


def event_shape(snapshot):
    """Device 0's (action, size) sequence with each run of consecutive frees sorted: the order in which
    one statement frees several tensors (say, an autocast cache's) can change between runs, and with no
    malloc between them it cannot change what the allocator does."""
    events = snapshot["device_traces"][0] if snapshot["device_traces"] else []
    out, batch = [], []
    for e in events:
        if e["action"] in ("free_requested", "free_completed"):
            batch.append((e["action"], e["size"]))
            continue
        out += sorted(batch)
        batch = []
        out.append((e["action"], e["size"]))
    return out + sorted(batch)


def compare_requests(run, ref_requests, snapshot):
    """Whether the run asked for what its reference asked for: all of it (a run that completed), the
    part before the failing request (an OOM), or its tail (a history that started late or wrapped;
    there stream ordinals are not compared, as the window may start after a stream's first use)."""
    sizes, ords = requests_of(snapshot)
    ref_sizes, ref_ords = ref_requests
    out = {"allocs": len(sizes), "referenceAllocs": len(ref_sizes)}
    if run["kind"] in ("midrun", "ring"):
        k = len(sizes)
        out["windowStartAlloc"] = len(ref_sizes) - k
        out["sameAsReferenceTail"] = k <= len(ref_sizes) and sizes == ref_sizes[len(ref_sizes) - k:]
    elif run.get("oom"):
        k = run["oom"]["allocsBefore"]
        out["sameAsReferenceBeforeOom"] = sizes[:k] == ref_sizes[:k] and ords[:k] == ref_ords[:k]
        out["referenceAllocAtOom"] = ref_sizes[k] if k < len(ref_sizes) else None
    else:
        out["sameAsReference"] = sizes == ref_sizes and ords == ref_ords
    return out


def launch(name, spec, out_dir, log_dir):
    env = allocator_env(spec["conf"])
    env.update(spec.get("env", {}))
    env["PYTHONUNBUFFERED"] = "1"
    spec = dict(spec, name=name)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec), out_dir]
    log = open(os.path.join(log_dir, f"{name}.log"), "w")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    return {"name": name, "spec": spec, "proc": p, "log": log, "started": time.time()}


def run_jobs(jobs, out_dir, n_jobs, deadline, child_timeout):
    """Runs the jobs, n_jobs processes at a time; returns (done: name -> result, failures)."""
    log_dir = os.path.join(out_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    done, failures, running = {}, [], []
    todo = list(jobs)
    t0 = time.time()
    while todo or running:
        for item in list(todo):
            if len(running) >= n_jobs:
                break
            name, build = item
            spec = build(done)
            if spec is None:
                continue
            todo.remove(item)
            if spec == "failed":
                done[name] = "failed"
                failures.append({"name": name, "why": "a run it depends on failed"})
                continue
            running.append(launch(name, spec, out_dir, log_dir))
        time.sleep(0.2)
        over = time.time() - t0 > deadline
        for r in list(running):
            p = r["proc"]
            late = time.time() - r["started"] > child_timeout
            if p.poll() is None and not (late or over):
                continue
            if p.poll() is None:
                p.kill()  # this parent's own child, by its handle
                p.wait()
            running.remove(r)
            r["log"].close()
            res = child_result(p.stdout.read())
            if res is not None:  # a run that printed its result counts, whatever its teardown did
                res["exitCode"] = p.returncode
                done[r["name"]] = res
                print(f"{r['name']:36} {res['ended']:5} reserved {res['maxMemoryReserved'] / MIB:9.1f} MiB"
                      f"  retries {res['numAllocRetries']}  ooms {res['numOoms']}  {res['seconds']:.1f} s", flush=True)
            else:
                done[r["name"]] = "failed"
                with open(os.path.join(log_dir, f"{r['name']}.log")) as f:
                    tail = f.read()[-3000:]
                failures.append({"name": r["name"], "exit": p.returncode, "killed": late or over, "stderrTail": tail})
                print(f"{r['name']}: failed (exit {p.returncode}{', killed' if late or over else ''})\n{tail}", flush=True)
        if over:
            for name, _ in todo:
                failures.append({"name": name, "why": "not started before the deadline"})
            todo = []
    return done, failures


def machine_info():
    gpu, driver = nvidia_smi()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu, "driver": driver, "cudaDriverVersion": cuda_driver_version(),
        "python": sys.version.split()[0],
    }


def record_all(out_dir, names, n_jobs, deadline, child_timeout, keep_limit):
    os.makedirs(out_dir, exist_ok=True)
    info = machine_info()
    started = time.time()
    done, failures = run_jobs(plan_jobs(names), out_dir, n_jobs, deadline, child_timeout)
    runs = [r for r in done.values() if r != "failed"]
    order = {w: i for i, w in enumerate(names)}
    runs.sort(key=lambda r: (order[r["workload"]], r["name"]))
    refs, shapes = {}, {}
    for r in runs:
        if r["kind"] == "reference":
            snap = load_snapshot(os.path.join(out_dir, r["file"]))
            refs[r["workload"]], shapes[r["workload"]] = requests_of(snap), event_shape(snap)
    kept = 0
    for r in runs:
        path = os.path.join(out_dir, r["file"])
        if r["workload"] in refs and r["kind"] != "stacks":  # the stacks run is a shorter run of its own
            snap = load_snapshot(path)
            r["requests"] = compare_requests(r, refs[r["workload"]], snap)
            if r["kind"] == "repeat":  # every event, not just the requests, as the reference had it
                r["requests"]["sameEventsAsReference"] = event_shape(snap) == shapes[r["workload"]]
        if r["kind"] == "stacks" and os.path.getsize(path) > keep_limit * 4:
            r["rawBytes"] = os.path.getsize(path)
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
            r["file"], r["gzippedHere"] = r["file"] + ".gz", True
            path += ".gz"
        r["fileBytes"] = os.path.getsize(path)
        # Keep every snapshot that matters to a test (reference, OOM, late or wrapped history, stacks)
        # and the others while they are small.
        must = r["kind"] in ("reference", "midrun", "ring", "stacks") or r["ended"] != "ok"
        if not must and r["fileBytes"] > keep_limit:
            os.remove(path)
            r["file"], r["fileDropped"] = None, "larger than --keep-limit"
        else:
            kept += r["fileBytes"]
    fallback = next((r for r in runs if r["label"] == "stacks-fast"), None)
    if fallback and any(r["label"] == "stacks" for r in runs) and fallback.get("file"):
        kept -= fallback["fileBytes"]
        os.remove(os.path.join(out_dir, fallback["file"]))
        fallback["file"], fallback["fileDropped"] = None, "the default-symbolizer stacks run succeeded"
    shutil.rmtree(os.path.join(out_dir, "logs"), ignore_errors=True)
    first = runs[0] if runs else {}
    result = {
        "script": "traces/h200-whatif/record.py",
        "argv": sys.argv[1:],
        **info,
        "torch": first.get("torch"), "cuda": first.get("cuda"),
        "deviceTotalBytes": first.get("deviceTotalBytes"),
        "wallSeconds": round(time.time() - started, 1),
        "workloads": {w: " ".join(WORKLOADS[w].__doc__.split()) for w in names},
        "limitRules": LIMIT_RULES,
        "runs": runs,
        "failures": failures,
        "keptSnapshotBytes": kept,
    }
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{len(runs)} runs, {len(failures)} failures, {kept / MIB:.1f} MiB of snapshots, "
          f"{time.time() - started:.0f} s", flush=True)
    return 1 if failures else 0


def verify(path, out_dir, n_jobs, deadline, child_timeout, reference_dir):
    """Runs each recommended setting under PyTorch and writes verified.json beside the predictions."""
    with open(path) as f:
        wanted = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    jobs = []
    for i, w in enumerate(wanted):
        if w["workload"] not in WORKLOADS:
            raise SystemExit(f"unknown workload {w['workload']!r}; known: {', '.join(WORKLOADS)}")
        spec = {"workload": w["workload"], "kind": "verify", "label": f"verify{i}", "conf": w.get("allocConf"),
                "limit": w.get("memoryLimit")}
        jobs.append((f"{w['workload']}--verify{i}", lambda done, spec=spec: spec))
    info = machine_info()
    done, failures = run_jobs(jobs, out_dir, n_jobs, deadline, child_timeout)
    out = []
    for i, w in enumerate(wanted):
        name = f"{w['workload']}--verify{i}"
        r = done.get(name)
        entry = dict(w, run=name)
        if isinstance(r, dict):
            actual, predicted = r["maxMemoryReserved"], w.get("predictedPeakReservedBytes")
            ref_path = os.path.join(reference_dir, f"{w['workload']}--reference.pickle.gz")
            snap_path = os.path.join(out_dir, r["file"])
            requests = None
            if os.path.exists(ref_path):
                requests = compare_requests(r, requests_of(load_snapshot(ref_path)), load_snapshot(snap_path))
            os.remove(snap_path)
            entry.update(
                maxMemoryReserved=actual, ended=r["ended"], oom=r["oom"], numAllocRetries=r["numAllocRetries"],
                allowedBytes=r["allowedBytes"], fraction=r["fraction"], requests=requests,
                relativeError=None if predicted is None or actual == 0 else (predicted - actual) / actual,
                withinTwoPercent=None if predicted is None or actual == 0 else abs(predicted - actual) <= 0.02 * actual,
                torch=r["torch"],
            )
        else:
            entry["failed"] = True
        out.append(entry)
    shutil.rmtree(os.path.join(out_dir, "logs"), ignore_errors=True)
    with open(os.path.join(out_dir, "verified.json"), "w") as f:
        json.dump({"script": "traces/h200-whatif/record.py --verify", "input": os.path.basename(path), **info,
                   "verified": out, "failures": failures}, f, indent=1)
        f.write("\n")
    return 1 if failures else 0


def smoke():
    """Every workload on the CPU with few steps (no trace), and the run plan against made-up figures."""
    import torch

    for name, fn in WORKLOADS.items():
        torch.manual_seed(0)
        t = time.time()
        seen = []
        fn(torch, torch.device("cpu"), 4, seen.append)
        print(f"{name}: ran on the CPU in {time.time() - t:.1f} s; marks {seen}", flush=True)
    fake = {"maxMemoryReserved": 5000 * MIB, "peakRequestedBytes": 4100 * MIB + 12345, "trace": {"events": 30000}}
    done = {}
    for w in WORKLOADS:
        done[f"{w}--reference"] = fake
        done[f"{w}--expandable"] = dict(fake, maxMemoryReserved=4400 * MIB)
    jobs = plan_jobs(list(WORKLOADS))
    total = 150_109_880_320
    for name, build in jobs:
        spec = build(done)
        if spec.get("limit") is not None:
            f = fraction_for(spec["limit"], total)
            assert int(f * float(total)) == spec["limit"], (name, spec["limit"])
    print(f"{len(jobs)} runs planned; every limit is reached exactly by its fraction", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", help="comma-separated workload names")
    ap.add_argument("--jobs", type=int, default=12, help="runs at a time (each its own process)")
    ap.add_argument("--deadline", type=float, default=480, help="seconds after which no run starts and running ones are killed")
    ap.add_argument("--child-timeout", type=float, default=300)
    ap.add_argument("--keep-limit", type=int, default=1_500_000, help="bytes; larger optional snapshots are dropped")
    ap.add_argument("--verify", metavar="FILE")
    ap.add_argument("--reference-dir", default=HERE, help="where --verify finds the reference snapshots")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "DIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child[0]), a.child[1])), flush=True)
        sys.stderr.flush()
        os._exit(0)  # no interpreter teardown: graphs and streams left after an OOM need not be destroyed
    if a.smoke:
        return smoke()
    if a.verify:
        return verify(a.verify, a.out, a.jobs, a.deadline, a.child_timeout, a.reference_dir)
    names = chosen_workloads(ap, a.only, WORKLOADS)
    return record_all(a.out, names, a.jobs, a.deadline, a.child_timeout, a.keep_limit)


if __name__ == "__main__":
    sys.exit(main())
