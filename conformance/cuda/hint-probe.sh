#!/bin/bash
# Where the CUDA driver places reservations and when it honours an address hint, on this machine's
# GPU 0: builds conformance/cuda/native/hint_probe.c, runs each of its experiments in a process of
# its own, and writes one JSON transcript (conformance/results/h200-hint-probe.json is its output
# on an H200; Note [Driver VA placement] in src/backends/sim/va-allocator.ts reads it):
#
#   bash conformance/cuda/hint-probe.sh [OUT.json] [EXPERIMENT...]   # default: every experiment
#
# Needs gcc, libcuda.so.1 and python3. Format: { "script", "date", "gpu", "driver", "cudaDriverVersion",
# "experiments": { name: { "seconds", "exit", "events": [...] } } }, the events as hint_probe.c logs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/conformance/results/h200-hint-probe.json}
shift || true
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
gcc -O2 -Wall -Wextra "$root/conformance/cuda/native/hint_probe.c" -o "$build/hint_probe" -ldl
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <("$build/hint_probe" --list)
for name in "${names[@]}"; do
  start=$(date +%s.%N)
  rc=0
  timeout 120 "$build/hint_probe" "$name" > "$build/$name.json" 2> "$build/$name.err" || rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  echo "$name $rc $seconds" >> "$build/runs.txt"
  echo "hint_probe $name: exit $rc, $seconds s" >&2
done
smi=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
python3 - "$build" "$out" "$smi" <<'PY'
import datetime, json, os, sys
build, out, smi = sys.argv[1], sys.argv[2], sys.argv[3]
smi = [s.strip() for s in smi.split(",")] if smi else []
experiments, version = {}, None
for line in open(os.path.join(build, "runs.txt")):
    name, rc, seconds = line.split()
    entry = {"seconds": round(float(seconds), 2), "exit": int(rc)}
    try:
        body = json.load(open(os.path.join(build, name + ".json")))
        version = body.get("cudaDriverVersion", version)
        entry["events"] = body["events"]
    except (ValueError, KeyError) as e:
        entry["error"] = f"no JSON ({e}): {open(os.path.join(build, name + '.err')).read()[-400:]}"
    experiments[name] = entry
result = {
    "script": "conformance/cuda/hint-probe.sh",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "gpu": smi[0] if smi else None,
    "driver": smi[1] if len(smi) > 1 else None,
    "cudaDriverVersion": version,
    "method": "conformance/cuda/native/hint_probe.c, each experiment in a fresh process (cuInit, primary "
    "context of device 0): every cuMemAddressReserve logged with size, alignment, hint, result code, address "
    "(raw, and in MiB from the experiment's reference reservation), and the process mappings of 1 MiB or more "
    "the call added or removed (/proc/self/maps).",
    "experiments": experiments,
}
bad = [n for n, e in experiments.items() if e["exit"] != 0 or "error" in e]
if len(bad) == len(experiments):
    # No experiment ran (no GPU, no libcuda.so.1): the committed transcript stays as it is.
    sys.exit(f"every experiment failed ({experiments[bad[0]].get('error', 'exit ' + str(experiments[bad[0]]['exit']))}); nothing written")
with open(out, "w") as f:
    f.write(json.dumps(result, indent=None, separators=(",", ":")).replace('{"op"', '\n{"op"') + "\n")
print(f"{len(experiments)} experiments -> {out}" + (f"; failed: {', '.join(bad)}" if bad else ""))
sys.exit(1 if bad else 0)
PY
