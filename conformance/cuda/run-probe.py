"""Run one of conformance/cuda/native's C probes and write its JSON transcript.

The probes' shell scripts (hint-probe.sh, queued-work-probe.sh) call this with what is theirs:

    python3 conformance/cuda/run-probe.py --probe NAME --script SCRIPT --out OUT.json \
        --method TEXT [--timeout S] [--events-per-line] [EXPERIMENT...]

It builds conformance/cuda/native/NAME.c with gcc, runs each experiment (default: every one
`NAME --list` names) in a process of its own, since a probe may leave the driver unusable, and
writes { script, date, gpu, driver, [cudaDriverVersion,] method, experiments: { name: { seconds,
exit, ...what the probe printed } } }. When no experiment ran (no GPU, no libcuda.so.1) it writes
nothing, so a committed transcript stays as it is, and exits 1; it exits 1 too, after writing,
when some failed.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

NATIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native")


def gpu() -> list:
    """nvidia-smi's name and driver release of GPU 0, or nothing without one."""
    try:
        line = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=False,
        ).stdout.splitlines()
    except OSError:
        return []
    return [s.strip() for s in line[0].split(",")] if line else []


def run(probe: str, name: str, timeout: float) -> dict:
    """One experiment in a process of its own: its seconds, exit status and what it printed."""
    start = time.monotonic()
    try:
        done = subprocess.run([probe, name], capture_output=True, text=True, timeout=timeout, check=False)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        rc, out, err = 124, partial, f"timed out after {timeout} s"
    entry = {"seconds": round(time.monotonic() - start, 2), "exit": rc}
    try:
        body = json.loads(out)
        entry.update({k: v for k, v in body.items() if k != "experiment"})
    except ValueError as e:
        entry["error"] = f"no JSON ({e}): {err[-400:]}"
    return entry


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--events-per-line", action="store_true", help="compact JSON, one event a line")
    ap.add_argument("experiments", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as build:
        probe = os.path.join(build, a.probe)
        source = os.path.join(NATIVE, a.probe + ".c")
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", source, "-o", probe, "-ldl", "-lpthread"], check=True)
        names = a.experiments or subprocess.run([probe, "--list"], capture_output=True, text=True,
                                                check=True).stdout.split()
        experiments = {}
        for name in names:
            experiments[name] = run(probe, name, a.timeout)
            e = experiments[name]
            print(f"{a.probe} {name}: exit {e['exit']}, {e['seconds']} s", file=sys.stderr)
    # The driver's version, where the probe reports it: the transcript's, not each experiment's.
    versions = [e.pop("cudaDriverVersion") for e in experiments.values() if "cudaDriverVersion" in e]
    smi = gpu()
    result = {
        "script": a.script,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": smi[0] if smi else None,
        "driver": smi[1] if len(smi) > 1 else None,
        **({"cudaDriverVersion": versions[-1]} if versions else {}),
        "method": a.method,
        "experiments": experiments,
    }
    bad = [n for n, e in experiments.items() if e["exit"] != 0 or "error" in e]
    if len(bad) == len(experiments):
        first = experiments[bad[0]] if bad else {}
        print(f"every experiment failed ({first.get('error', 'exit ' + str(first.get('exit')))}); nothing written",
              file=sys.stderr)
        return 1
    with open(a.out, "w") as f:
        if a.events_per_line:
            f.write(json.dumps(result, separators=(",", ":")).replace('{"op"', '\n{"op"') + "\n")
        else:
            f.write(json.dumps(result, indent=1) + "\n")
    print(f"{len(experiments)} experiments -> {a.out}" + (f"; failed: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
