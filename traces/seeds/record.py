"""Does advice taken from one run hold on the next? Workloads whose batch and sequence shapes are drawn
from a data seed, recorded on a GPU machine under several seeds; vmmkit advises from seed 0's snapshot
under a memory limit; the advice (and the default, for contrast) then runs under PyTorch on every seed
under that limit, one fresh process per run.

    python3 traces/seeds/record.py --record --out DIR          # stage 1 (GPU): every seed's reference
    node traces/seeds/advise-seeds.mjs > traces/seeds/advice.json   # here: the limit and the advice
    python3 traces/seeds/record.py --run traces/seeds/advice.json --out DIR   # stage 2 (GPU)

Stage 1 writes DIR/references.json and DIR/<workload>--seed<k>.pickle.gz (every seed's run with the
default allocator and no limit, history recorded from before the first CUDA allocation, frames dropped,
as traces/h200-whatif records), and the recording-effect experiment (`compiled`: a torch.compile
(mode='reduce-overhead') training loop run with memory history off, with the recorders' arguments and
with _record_memory_history()'s defaults; no snapshot kept, the segments at the end summarised per pool).

Stage 2 reads advice.json ({limits, runs: [{workload, seed, label, allocConf, memoryLimit}]}) and the
committed references.json, runs every entry, and writes DIR/results.json (never by hand): the machine,
the references, the advice, and what PyTorch did in every run (max_memory_reserved, num_alloc_retries,
num_ooms, whether it raised torch.OutOfMemoryError, whether it asked for what that seed's reference asked
for), and per workload and setting whether it held on every seed.

Limits are set as traces/h200-whatif/record.py sets them (`fraction_for`: the fraction whose product
with totalGlobalMem is exactly the wanted byte count). Both stages record memory history in every run
(the conditions the advice was taken under), except the recording-effect runs that turn it off.
"""

import argparse
import gzip
import importlib.util
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.dirname(HERE)
sys.path.insert(0, TRACES)  # recording.py, trace_stats.py

from recording import MAX_ENTRIES, allocator_env, child_result, gpt, plain, seed  # noqa: E402
from trace_stats import summarize  # noqa: E402


def _whatif():
    """traces/h200-whatif/record.py as a module (its folder's name is no identifier): its limit
    arithmetic, OOM reading, request comparison and machine description are reused, not copied."""
    spec = importlib.util.spec_from_file_location("whatif_record", os.path.join(TRACES, "h200-whatif", "record.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


W = _whatif()
MIB = 1 << 20
SEEDS = [0, 1, 2, 3, 4]


# ----------------------------------------------------------------- workloads
# Each takes (torch, dev, data_seed) and returns the shapes it drew. Shapes come from
# random.Random(salt + seed); weights and data from torch.manual_seed(seed) (recording.seed).


def gpt_train(torch, dev, s):
    """Training with token-budget batches: a GPT-style decoder (6 layers, d=768, vocab 8192, traces/
    recording.py's) with AdamW under bf16 autocast, 16 steps; each step draws a sequence length from 128
    to 1024 and takes as many rows as fit 12,288 tokens (batch = 12288 // seq), as fairseq-style
    max_tokens batching does. The peak depends on the drawn lengths, the fragmentation on their order."""
    F = torch.nn.functional
    rng = random.Random(1000 + s)
    vocab, d, heads, layers, tokens = 8192, 768, 12, 6, 12288
    shapes = []
    for _ in range(16):
        seq = rng.randint(128, 1024)
        shapes.append((max(1, tokens // seq), seq))
    seed(torch, s)
    model = gpt(torch, vocab, d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch, seq in shapes:
        idx = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del idx, logits, loss
    return {"steps": [list(x) for x in shapes]}


def hf_generate(torch, dev, s):
    """Inference through transformers' generate() with its KV cache (DynamicCache, grown by torch.cat
    each token): a randomly initialised Llama (4 layers, d=1024, 16 heads, MLP 2816, vocab 32000) in bf16,
    7 requests served one after another, each with a batch drawn from {1, 2, 4, 8, 12, 16}, a prompt of
    32 to 768 tokens and 16 to 64 new tokens (greedy, min_new_tokens = max_new_tokens). Nothing bounds a
    request's size: a seed that draws a larger batch and prompt needs more memory."""
    from transformers import LlamaConfig, LlamaForCausalLM

    rng = random.Random(2000 + s)
    reqs = [(rng.choice([1, 2, 4, 8, 12, 16]), rng.randint(32, 768), rng.randint(16, 64)) for _ in range(7)]
    seed(torch, s)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048)
    model = LlamaForCausalLM(cfg).to(dev, torch.bfloat16).eval()
    model.generation_config.pad_token_id = 0
    with torch.no_grad():
        for batch, prompt, new in reqs:
            ids = torch.randint(3, 32000, (batch, prompt), device=dev)
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                                 do_sample=False, pad_token_id=0)
            del ids, out
    import transformers
    return {"requests": [list(r) for r in reqs], "transformers": transformers.__version__}


def timm_train(torch, dev, s):
    """Image training with a pixel budget: timm's resnet50 (torchvision's where timm is missing), SGD with
    momentum under bf16 autocast, 12 steps; each step draws an image side from 128 to 288 (multiples of 32)
    and takes as many images as fit 48 images of 224x224 (batch = 48*224*224 // side^2). cuDNN's workspace
    sizes follow the shapes (benchmark off, deterministic algorithms)."""
    F = torch.nn.functional
    rng = random.Random(3000 + s)
    budget = 48 * 224 * 224
    shapes = []
    for _ in range(12):
        side = rng.choice([128, 160, 192, 224, 256, 288])
        shapes.append((max(1, budget // (side * side)), side))
    seed(torch, s)
    try:
        import timm
        model, source = timm.create_model("resnet50", num_classes=1000), f"timm {timm.__version__}"
    except ImportError:
        import torchvision
        model, source = torchvision.models.resnet50(num_classes=1000), f"torchvision {torchvision.__version__}"
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for batch, side in shapes:
        x = torch.randn(batch, 3, side, side, device=dev)
        y = torch.randint(0, 1000, (batch,), device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = model(x)
        loss = F.cross_entropy(out.float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, y, out, loss
    return {"steps": [list(x) for x in shapes], "model": source}


def compiled(torch, dev, s):
    """The recording-effect experiment: a small decoder (4 of recording.py's layers, d=512, 8 heads) plus a
    head, compiled with torch.compile(mode='reduce-overhead') (inductor's CUDA graph trees), trained 12
    steps at one shape (batch 8, 256 tokens) with AdamW, then 6 compiled inference calls under no_grad."""
    from recording import decoder_layer

    F = torch.nn.functional
    seed(torch, s)
    nn = torch.nn
    Layer = decoder_layer(torch, 512, 8)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(4096, 512)
            self.blocks = nn.ModuleList(Layer() for _ in range(4))
            self.head = nn.Linear(512, 4096, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for b in self.blocks:
                x = b(x)[0]
            return self.head(x)

    model = Net().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    fn = torch.compile(model, mode="reduce-overhead")
    for _ in range(12):
        idx = torch.randint(0, 4096, (8, 257), device=dev)
        loss = F.cross_entropy(fn(idx[:, :-1]).float().view(-1, 4096), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del idx, loss
    with torch.no_grad():
        for _ in range(6):
            out = fn(torch.randint(0, 4096, (8, 256), device=dev))
            del out
    return {"shape": [8, 256], "counters": inductor_counters()}


def inductor_counters():
    """Dynamo's and Inductor's counters (cache hits and misses among them), for the compiled runs."""
    from torch._dynamo.utils import counters

    return {k: dict(v) for k, v in counters.items() if v}


def compiled_loss(torch, dev, s):
    """`compiled`'s network with the loss inside the compiled function (more reductions for Inductor to
    tune): torch.compile(mode='reduce-overhead') of model + cross_entropy, 12 training steps at batch 8 x
    256 tokens, then 6 compiled evaluations of the loss under no_grad."""
    from recording import decoder_layer

    F = torch.nn.functional
    seed(torch, s)
    nn = torch.nn
    Layer = decoder_layer(torch, 512, 8)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(4096, 512)
            self.blocks = nn.ModuleList(Layer() for _ in range(4))
            self.head = nn.Linear(512, 4096, bias=False)

        def forward(self, idx):
            x = self.emb(idx[:, :-1])
            for b in self.blocks:
                x = b(x)[0]
            return F.cross_entropy(self.head(x).float().view(-1, 4096), idx[:, 1:].reshape(-1))

    model = Net().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    fn = torch.compile(model, mode="reduce-overhead")
    for _ in range(12):
        loss = fn(torch.randint(0, 4096, (8, 257), device=dev))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
    with torch.no_grad():
        for _ in range(6):
            out = fn(torch.randint(0, 4096, (8, 257), device=dev))
            del out
    return {"shape": [8, 256], "counters": inductor_counters()}


WORKLOADS = {"gpt_train": gpt_train, "hf_generate": hf_generate, "timm_train": timm_train}
EXTRA = {"compiled": compiled, "compiled_loss": compiled_loss}
HISTORY = {  # how a run records the allocator's history
    "recorder": {"enabled": "all", "context": None, "stacks": "python", "max_entries": MAX_ENTRIES},
    "defaults": {},  # _record_memory_history() as users call it: context and stacks 'all'
    "state": {"enabled": "state", "context": None, "stacks": "python", "max_entries": MAX_ENTRIES},  # no trace
    "off": None,
}


# ----------------------------------------------------------------- child


def pools_of(segments):
    """The cached segments at the end, per private pool ((0, 0) is the default pool)."""
    out = {}
    for seg in segments:
        key = str(tuple(seg.get("segment_pool_id", (0, 0))))
        p = out.setdefault(key, {"segments": 0, "totalSize": 0, "activeSize": 0, "sizes": []})
        p["segments"] += 1
        p["totalSize"] += seg["total_size"]
        p["activeSize"] += seg.get("active_size", 0)
        p["sizes"].append(seg["total_size"])
    for p in out.values():
        p["sizes"].sort(reverse=True)
    return out


def child(spec, out_dir):
    import torch

    OOM = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    dev = torch.device("cuda", 0)
    total = torch.cuda.get_device_properties(0).total_memory
    fraction = allowed = None
    if spec.get("limit") is not None:
        fraction = W.fraction_for(spec["limit"], total)
        allowed = int(fraction * float(total))
        torch.cuda.set_per_process_memory_fraction(fraction, 0)
    history = HISTORY[spec.get("history", "recorder")]
    if history is not None:
        torch.cuda.memory._record_memory_history(**history)  # before the first CUDA allocation
    fn = WORKLOADS.get(spec["workload"]) or EXTRA[spec["workload"]]
    ended, error, drew, snapshot = "ok", None, None, None
    started = time.time()
    try:
        drew = fn(torch, dev, spec["seed"])
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - an OOM is the point; anything else is recorded too
        ended = "oom" if isinstance(e, OOM) else "error"
        error = {"type": type(e).__name__, "message": str(e)[:600]}
        if history is not None:
            snapshot = plain(torch.cuda.memory._snapshot())  # in the handler: the trace has the oom action
    seconds = time.time() - started
    stats = torch.cuda.memory_stats(0)
    result = {
        "name": spec["name"], "workload": spec["workload"], "seed": spec["seed"], "kind": spec["kind"],
        "label": spec["label"], "allocConf": spec["conf"], "limit": spec.get("limit"), "fraction": fraction,
        "allowedBytes": allowed, "deviceTotalBytes": total, "history": spec.get("history", "recorder"),
        "ended": ended, "error": error, "drew": drew,
        "maxMemoryReserved": torch.cuda.max_memory_reserved(0),
        "maxMemoryAllocated": torch.cuda.max_memory_allocated(0),
        "memoryReservedAtEnd": torch.cuda.memory_reserved(0),
        "peakRequestedBytes": stats.get("requested_bytes.all.peak"),
        "numAllocRetries": stats.get("num_alloc_retries"), "numOoms": stats.get("num_ooms"),
        "memoryStats": {k: stats.get(k) for k in W.STAT_KEYS},
        "seconds": round(seconds, 2), "torch": torch.__version__, "cuda": torch.version.cuda,
    }
    if history is None or history.get("enabled") == "state":
        torch.cuda.memory._record_memory_history(enabled=None)
        result["poolsAtEnd"] = pools_of(torch.cuda.memory_snapshot())
        return result
    if snapshot is None:
        snapshot = plain(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    result["poolsAtEnd"] = pools_of(snapshot["segments"])
    result["allocatorSettings"] = snapshot.get("allocator_settings")
    result["trace"] = summarize(snapshot)
    result["oom"] = W.oom_of(snapshot)
    result["tracePeakEqualsMaxReserved"] = result["trace"]["peakSegmentBytes"] == result["maxMemoryReserved"]
    if spec.get("keep"):
        path = os.path.join(out_dir, f"{spec['name']}.pickle.gz")
        with gzip.open(path, "wb", compresslevel=9) as f:
            pickle.dump(snapshot, f, protocol=4)
        result["file"] = os.path.basename(path)
    elif spec["kind"] == "limit":
        path = os.path.join(out_dir, f"{spec['name']}.requests.json")  # for the parent's comparison
        sizes, ords = W.requests_of(snapshot)
        with open(path, "w") as f:
            json.dump([sizes, ords], f)
        result["requestsFile"] = os.path.basename(path)
    return result


# ----------------------------------------------------------------- parent


def launch(spec, out_dir, log_dir):
    env = allocator_env(spec["conf"])
    env.update(spec.get("env", {}))
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec), out_dir]
    log = open(os.path.join(log_dir, f"{spec['name']}.log"), "w")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    return {"spec": spec, "proc": p, "log": log, "started": time.time()}


def run_all(specs, out_dir, n_jobs, deadline, child_timeout):
    """Each spec in its own process, n_jobs at a time; returns (results in spec order, failures)."""
    log_dir = os.path.join(out_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    todo, running, done, failures = list(specs), [], {}, []
    t0 = time.time()
    while todo or running:
        while todo and len(running) < n_jobs and time.time() - t0 < deadline:
            running.append(launch(todo.pop(0), out_dir, log_dir))
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
            name = r["spec"]["name"]
            res = child_result(p.stdout.read())
            if res is not None:
                res["exitCode"] = p.returncode
                done[name] = res
                print(f"{name:44} {res['ended']:5} reserved {res['maxMemoryReserved'] / MIB:8.0f} MiB "
                      f"retries {res['numAllocRetries']} ooms {res['numOoms']} {res['seconds']:.1f} s", flush=True)
            else:
                with open(os.path.join(log_dir, f"{name}.log")) as f:
                    tail = f.read()[-3000:]
                failures.append({"name": name, "exit": p.returncode, "killed": late or over, "stderrTail": tail})
                print(f"{name}: failed (exit {p.returncode})\n{tail}", flush=True)
        if over and todo:
            failures += [{"name": s["name"], "why": "not started before the deadline"} for s in todo]
            todo = []
    shutil.rmtree(log_dir, ignore_errors=True)
    return [done[s["name"]] for s in specs if s["name"] in done], failures


def record(out_dir, n_jobs, deadline, child_timeout, repeats):
    os.makedirs(out_dir, exist_ok=True)
    info = W.machine_info()
    started = time.time()
    specs = []
    for hist in ("off", "recorder", "defaults", "state"):  # first: compiling takes longest
        for rep in range(repeats):
            specs.append({"name": f"compiled--history-{hist}-{rep}", "workload": "compiled", "seed": 0,
                          "kind": "recording-effect", "label": f"history-{hist}", "conf": None, "history": hist,
                          "keep": hist == "recorder" and rep == 0})
    for w in WORKLOADS:
        for s in SEEDS:
            specs.append({"name": f"{w}--seed{s}", "workload": w, "seed": s, "kind": "reference",
                          "label": "reference", "conf": None, "keep": True})
    runs, failures = run_all(specs, out_dir, n_jobs, deadline, child_timeout)
    for r in runs:
        if r.get("file"):
            r["fileBytes"] = os.path.getsize(os.path.join(out_dir, r["file"]))
    result = {
        "script": "traces/seeds/record.py --record", "argv": sys.argv[1:], **info,
        "torch": runs[0]["torch"] if runs else None, "cuda": runs[0]["cuda"] if runs else None,
        "deviceTotalBytes": runs[0]["deviceTotalBytes"] if runs else None,
        "wallSeconds": round(time.time() - started, 1),
        "workloads": {w: " ".join(f.__doc__.split()) for w, f in {**WORKLOADS, **EXTRA}.items()},
        "seeds": SEEDS, "historyArguments": {k: v for k, v in HISTORY.items()},
        "references": [r for r in runs if r["kind"] == "reference"],
        "recordingEffect": [r for r in runs if r["kind"] == "recording-effect"],
        "failures": failures,
    }
    with open(os.path.join(out_dir, "references.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 1 if failures else 0


def effect_specs(out_dir):
    """The recording-effect follow-up: each compiled workload with history on and off, first each with
    a cold compile cache of its own (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), then each again on the
    cache the other setting left (history off on the cache a history run warmed, and the reverse)."""
    cold, warm = [], []
    for w in EXTRA:
        for hist in ("off", "recorder"):
            cache = os.path.join(out_dir, "caches", f"{w}-{hist}")
            other = os.path.join(out_dir, "caches", f"{w}-{'recorder' if hist == 'off' else 'off'}")
            base = {"workload": w, "seed": 0, "kind": "recording-effect", "conf": None, "history": hist}
            cold.append(dict(base, name=f"{w}--cold-history-{hist}", label=f"cold-history-{hist}", cacheFrom=None,
                             env={"TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": os.path.join(cache, "triton")}))
            warm.append(dict(base, name=f"{w}--warm-history-{hist}", label=f"warm-history-{hist}",
                             cacheFrom=f"{w}--cold-history-{'recorder' if hist == 'off' else 'off'}",
                             env={"TORCHINDUCTOR_CACHE_DIR": other, "TRITON_CACHE_DIR": os.path.join(other, "triton")}))
    return cold, warm


def run_advice(path, refs_path, out_dir, n_jobs, deadline, child_timeout, effect, labels=None):
    """Runs every entry of advice.json under its limit and writes results.json."""
    with open(path) as f:
        advice = json.load(f)
    with open(refs_path) as f:
        refs = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    info = W.machine_info()
    started = time.time()
    specs = []
    for e in advice["runs"]:
        if labels and e["label"] not in labels:
            continue
        specs.append({"name": f"{e['workload']}--seed{e['seed']}--{e['label']}", "workload": e["workload"],
                      "seed": e["seed"], "kind": "limit", "label": e["label"], "conf": e.get("allocConf"),
                      "limit": e.get("memoryLimit")})
    cold, warm = effect_specs(out_dir) if effect else ([], [])
    runs, failures = run_all(cold + specs, out_dir, n_jobs, deadline, child_timeout)
    if warm:  # after the cold runs: their caches are the warm runs' caches
        more, more_failures = run_all(warm, out_dir, n_jobs, max(60.0, deadline - (time.time() - started)), child_timeout)
        runs, failures = runs + more, failures + more_failures
    by_ref = {(r["workload"], r["seed"]): r for r in refs["references"]}
    for r in runs:
        if r.get("requestsFile"):
            p = os.path.join(out_dir, r.pop("requestsFile"))
            with open(p) as f:
                sizes, ords = json.load(f)
            os.remove(p)
            ref = by_ref.get((r["workload"], r["seed"]))
            if ref and ref.get("file"):
                ref_req = W.requests_of(W.load_snapshot(os.path.join(HERE, ref["file"])))
                r["requests"] = compare_lists(r, ref_req, (sizes, ords))
    summary = {}
    for r in runs:
        if r["kind"] != "limit":
            continue
        key = f"{r['workload']} {r['label']}"
        s = summary.setdefault(key, {"workload": r["workload"], "label": r["label"], "allocConf": r["allocConf"],
                                     "allowedBytes": r["allowedBytes"], "seeds": {}, "heldOnEverySeed": True})
        s["seeds"][str(r["seed"])] = {"ended": r["ended"], "maxMemoryReserved": r["maxMemoryReserved"],
                                      "numAllocRetries": r["numAllocRetries"], "numOoms": r["numOoms"]}
        s["heldOnEverySeed"] = s["heldOnEverySeed"] and r["ended"] == "ok"
    result = {
        "script": "traces/seeds/record.py --run", "argv": sys.argv[1:], **info,
        "labels": labels,  # the advice's runs that were run (None: all)
        "torch": runs[0]["torch"] if runs else None, "cuda": runs[0]["cuda"] if runs else None,
        "deviceTotalBytes": runs[0]["deviceTotalBytes"] if runs else None,
        "wallSeconds": round(time.time() - started, 1),
        "references": {k: refs[k] for k in ("date", "gpu", "driver", "torch", "cuda", "seeds", "workloads")},
        "referenceRuns": [{k: r.get(k) for k in ("workload", "seed", "drew", "maxMemoryReserved",
                                                  "peakRequestedBytes", "numAllocRetries", "file",
                                                  "tracePeakEqualsMaxReserved")} for r in refs["references"]],
        "advice": advice,
        "runs": [r for r in runs if r["kind"] == "limit"],
        "predictionsMatched": match_predictions(advice, runs),
        "recordingEffect": [r for r in runs if r["kind"] != "limit"],
        "recordingEffectSpecs": [{k: s.get(k) for k in ("name", "workload", "history", "cacheFrom")} for s in cold + warm],
        "summary": list(summary.values()),
        "failures": failures,
    }
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 1 if failures else 0


def match_predictions(advice, runs):
    """Each run beside vmmkit's prediction for it (advice.json's, made before the run)."""
    by = {(r["workload"], r["seed"], r["label"]): r for r in runs if r["kind"] == "limit"}
    out = []
    for p in advice.get("predictions", []):
        r = by.get((p["workload"], p["seed"], p["label"]))
        if r is None:
            continue
        out.append({**{k: p[k] for k in ("workload", "seed", "label", "allocConf", "predictedPeakReservedBytes")},
                    "predictedOom": p["predictedOoms"] > 0, "maxMemoryReserved": r["maxMemoryReserved"],
                    "oom": r["ended"] == "oom", "sameVerdict": (p["predictedOoms"] > 0) == (r["ended"] == "oom"),
                    "relativeError": (p["predictedPeakReservedBytes"] - r["maxMemoryReserved"]) / r["maxMemoryReserved"]})
    return out


def compare_lists(run, ref_requests, requests):
    """traces/h200-whatif's compare_requests, on request lists instead of a snapshot."""
    sizes, ords = requests
    ref_sizes, ref_ords = ref_requests
    out = {"allocs": len(sizes), "referenceAllocs": len(ref_sizes)}
    if run.get("oom"):
        k = run["oom"]["allocsBefore"]
        out["sameAsReferenceBeforeOom"] = sizes[:k] == ref_sizes[:k] and ords[:k] == ref_ords[:k]
    else:
        out["sameAsReference"] = sizes == ref_sizes and ords == ref_ords
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--run", metavar="ADVICE")
    ap.add_argument("--references", default=os.path.join(HERE, "references.json"))
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--effect", action="store_true", help="with --run: the recording-effect follow-up too")
    ap.add_argument("--labels", help="with --run: only the advice's runs of these comma-separated labels")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each recording-effect variant")
    ap.add_argument("--deadline", type=float, default=420)
    ap.add_argument("--child-timeout", type=float, default=300)
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "DIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child[0]), a.child[1])), flush=True)
        sys.stderr.flush()
        os._exit(0)
    if a.record:
        return record(a.out, a.jobs, a.deadline, a.child_timeout, a.repeats)
    if a.run:
        labels = a.labels.split(",") if a.labels else None
        return run_advice(a.run, a.references, a.out, a.jobs, a.deadline, a.child_timeout, a.effect, labels)
    ap.error("--record or --run ADVICE")


if __name__ == "__main__":
    sys.exit(main())
