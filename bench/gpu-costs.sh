#!/bin/bash
# The CUDA driver's cost per VMM call, by size, on this machine's GPU 0: builds
# bench/native/driver_costs.c, runs it, and writes the table the replay tool's
# cost model reads (bench/results/h200-driver-costs.json is its output on an H200):
#
#   bash bench/gpu-costs.sh [OUT.json]     # default bench/results/h200-driver-costs.json
#
# It writes on every run (a GPU script's output is its measurement: no --write), and by default over
# the tracked table, which is what it is for: run it on the GPU machine and copy the file back.
#
# Needs gcc, cuda.h (CUDA_HOME, default /usr/local/cuda), libcuda.so.1 and python3.
# Format: { "script", "date", "gpu", "driver", "cudaDriverVersion", "calls": { call: [[bytes, us], ...] },
# "perHandle": { call: [[handles, us], ...] }, "reps": [[bytes, n], ...], "method" }, sizes ascending,
# us the median over reps (see Note [How each call is timed] in driver_costs.c).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench/results/h200-driver-costs.json}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
gcc -O2 -Wall -I"${CUDA_HOME:-/usr/local/cuda}/include" "$root/bench/native/driver_costs.c" -o "$build/driver_costs" -ldl
"$build/driver_costs" > "$build/raw.json"
smi=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
python3 - "$build/raw.json" "$out" "$smi" <<'PY'
import datetime, json, re, sys
raw = json.load(open(sys.argv[1]))
smi = [s.strip() for s in sys.argv[3].split(",")] if sys.argv[3] else []
result = {
    "script": "bench/gpu-costs.sh",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "gpu": smi[0] if smi else raw["deviceName"],
    "driver": smi[1] if len(smi) > 1 else None,
    "cudaDriverVersion": raw["cudaDriverVersion"],
    "calls": {k: sorted(v) for k, v in raw["calls"].items()},
    "perHandle": {k: sorted(v) for k, v in raw["perHandle"].items()},
    "reps": raw["reps"],
    "method": "bench/native/driver_costs.c: each call timed on its own (CLOCK_MONOTONIC) inside a cycle "
    "reserve, create, map, setAccess (read-write), cuCtxSynchronize (idle, that size mapped), unmap, release, "
    "addressFree, cuMemAlloc, cuMemFree at one size, after untimed warm-up cycles; median over reps. "
    "perHandle: N separately created 2 MiB handles mapped side by side, one cuMemSetAccess and one cuMemUnmap "
    "over all N; median over 101 reps (41 at N = 64).",
}
text = json.dumps(result, indent=1)
# One [x, us] pair per line.
text = re.sub(r"\[\s+(-?[\d.]+),\s+(-?[\d.]+)\s+\]", r"[\1, \2]", text)
with open(sys.argv[2], "w") as f:
    f.write(text + "\n")
c = result["calls"]
us = lambda call, size: dict(map(tuple, c[call]))[size]
print(f"{result['gpu']} driver {result['driver']}: create 2 MiB {us('cuMemCreate', 2 << 20)} us, "
      f"1 GiB {us('cuMemCreate', 1 << 30)} us; setAccess 2 MiB {us('cuMemSetAccess', 2 << 20)} us; "
      f"per-handle setAccess {result['perHandle']['cuMemSetAccess']}")
PY
