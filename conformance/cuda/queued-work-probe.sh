#!/bin/bash
# What the CUDA driver does with a copy queued on a held stream when its target's access is taken away
# or its range unmapped: builds conformance/cuda/native/queued_work_probe.c, runs each experiment in a
# process of its own, and writes one JSON transcript (conformance/results/h200-queued-work-probe.json is
# its output on an H200; Note [Queued work and access changes] in src/backends/sim/process.ts reads it):
#
#   bash conformance/cuda/queued-work-probe.sh [OUT.json]
#
# Needs gcc, libcuda.so.1 and python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/conformance/results/h200-queued-work-probe.json}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
gcc -O2 -Wall -Wextra "$root/conformance/cuda/native/queued_work_probe.c" -o "$build/probe" -ldl -lpthread
for name in $("$build/probe" --list); do
  rc=0
  timeout 60 "$build/probe" "$name" > "$build/$name.json" 2> "$build/$name.err" || rc=$?
  echo "$name $rc" >> "$build/runs.txt"
  echo "queued_work_probe $name: exit $rc" >&2
done
smi=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
python3 - "$build" "$out" "$smi" <<'PY'
import datetime, json, os, sys
build, out, smi = sys.argv[1], sys.argv[2], sys.argv[3]
smi = [s.strip() for s in smi.split(",")] if smi else []
experiments = {}
for line in open(os.path.join(build, "runs.txt")):
    name, rc = line.split()
    entry = {"exit": int(rc)}
    try:
        entry.update(json.load(open(os.path.join(build, name + ".json"))))
    except ValueError as e:
        entry["error"] = f"no JSON ({e}): {open(os.path.join(build, name + '.err')).read()[-400:]}"
    experiments[name] = entry
result = {
    "script": "conformance/cuda/queued-work-probe.sh",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "gpu": smi[0] if smi else None,
    "driver": smi[1] if len(smi) > 1 else None,
    "method": "conformance/cuda/native/queued_work_probe.c, each experiment in a fresh process (primary context "
    "of device 0): a non-blocking stream held by cuStreamWaitValue32 on a flag in mapped page-locked host memory, "
    "a 64-byte HtoD copy into 2 MiB of read-write VMM memory queued behind it, then the experiment's change while "
    "a second thread releases the flag after holdMs; each call's code and milliseconds, whether the change "
    "returned only after the release (waitedForTheStream), and whether the copy's bytes are there.",
    "experiments": experiments,
}
bad = [n for n, e in experiments.items() if e["exit"] != 0 or "error" in e]
if len(bad) == len(experiments):
    # No experiment ran (no GPU, no libcuda.so.1): the committed transcript stays as it is.
    sys.exit(f"every experiment failed ({experiments[bad[0]].get('error', 'exit ' + str(experiments[bad[0]]['exit']))}); nothing written")
with open(out, "w") as f:
    f.write(json.dumps(result, indent=1) + "\n")
print(f"{len(experiments)} experiments -> {out}" + (f"; failed: {', '.join(bad)}" if bad else ""))
sys.exit(1 if bad else 0)
PY
