#!/bin/bash
# What the CUDA driver does with a copy queued on a held stream when its target's access is taken away
# or its range unmapped: conformance/cuda/native/queued_work_probe.c, each experiment in a process of
# its own, through conformance/cuda/run-probe.py, into one JSON transcript
# (conformance/results/h200-queued-work-probe.json is its output on an H200; Note [Queued work and
# access changes] in src/backends/sim/process.ts reads it):
#
#   bash conformance/cuda/queued-work-probe.sh [OUT.json]
#
# Needs gcc, libcuda.so.1 and python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/conformance/results/h200-queued-work-probe.json}
exec python3 "$root/conformance/cuda/run-probe.py" --probe queued_work_probe \
  --script conformance/cuda/queued-work-probe.sh --out "$out" --timeout 60 \
  --method "conformance/cuda/native/queued_work_probe.c, each experiment in a fresh process (primary context \
of device 0): a non-blocking stream held by cuStreamWaitValue32 on a flag in mapped page-locked host memory, \
a 64-byte HtoD copy into 2 MiB of read-write VMM memory queued behind it, then the experiment's change while \
a second thread releases the flag after holdMs; each call's code and milliseconds, whether the change \
returned only after the release (waitedForTheStream), and whether the copy's bytes are there."
