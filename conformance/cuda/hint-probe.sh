#!/bin/bash
# Where the CUDA driver places reservations and when it honours an address hint, on this machine's
# GPU 0: conformance/cuda/native/hint_probe.c, each experiment in a process of its own, through
# conformance/cuda/run-probe.py, into one JSON transcript (conformance/results/h200-hint-probe.json
# is its output on an H200; Note [Driver VA placement] in src/backends/sim/va-allocator.ts reads it):
#
#   bash conformance/cuda/hint-probe.sh [OUT.json] [EXPERIMENT...]   # default: every experiment
#
# Needs gcc, libcuda.so.1 and python3. The events are as hint_probe.c logs them, one a line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/conformance/results/h200-hint-probe.json}
shift || true
exec python3 "$root/conformance/cuda/run-probe.py" --probe hint_probe --script conformance/cuda/hint-probe.sh \
  --out "$out" --timeout 120 --events-per-line \
  --method "conformance/cuda/native/hint_probe.c, each experiment in a fresh process (cuInit, primary \
context of device 0): every cuMemAddressReserve logged with size, alignment, hint, result code, address \
(raw, and in MiB from the experiment's reference reservation), and the process mappings of 1 MiB or more \
the call added or removed (/proc/self/maps)." "$@"
