#!/usr/bin/env python3
"""Reads every cuDeviceGetAttribute value of each GPU from the real driver (ctypes on libcuda, no
vmmkit code) and writes them as JSON, so the simulator's device attributes can be checked against
the part's own answers:

    python3 conformance/gpu/device-attributes.py > conformance/results/h200-device-attributes.json

Attributes named in src/flavors/cuda/constants.ts are listed by name; every id from 1 up to
LAST_ID_TRIED (255) is read, past CU_DEVICE_ATTRIBUTE_MAX, since a driver may answer ids newer than the
cuda.h vmmkit follows (the H200's driver 580 answers 144); an id the driver refuses below
CU_DEVICE_ATTRIBUTE_MAX is recorded with its CUresult, and one past it only when it answers.
"""
import ctypes
import datetime
import json
import os
import re
import subprocess

LAST_ID_TRIED = 255
HERE = os.path.dirname(os.path.abspath(__file__))
CONSTANTS = os.path.join(HERE, "..", "..", "src", "flavors", "cuda", "constants.ts")


def names():
    text = open(CONSTANTS).read()
    found = dict((int(v), n) for n, v in re.findall(r"export const CU_DEVICE_ATTRIBUTE_(\w+) = (\d+);", text))
    limit = next(k for k, n in found.items() if n == "MAX")
    return {k: n for k, n in found.items() if n != "MAX"}, limit


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} returned CUresult {result}")


def main():
    cu = ctypes.CDLL("libcuda.so.1")
    check(cu.cuInit(0), "cuInit")
    count = ctypes.c_int()
    check(cu.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    version = ctypes.c_int()
    check(cu.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
    known, limit = names()
    devices = []
    for ordinal in range(count.value):
        dev = ctypes.c_int()
        check(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        name = ctypes.create_string_buffer(256)
        check(cu.cuDeviceGetName(name, 256, dev), "cuDeviceGetName")
        values, refused = {}, {}
        for attribute in range(1, LAST_ID_TRIED + 1):
            v = ctypes.c_int()
            r = cu.cuDeviceGetAttribute(ctypes.byref(v), attribute, dev)
            key = known.get(attribute, str(attribute))
            if r == 0:
                values[key] = v.value
            elif attribute < limit:
                refused[key] = r
        devices.append({"ordinal": ordinal, "name": name.value.decode(), "values": values, "refused": refused})
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        driver = None
    print(json.dumps({
        "script": "conformance/gpu/device-attributes.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "driver": driver,
        "cudaDriverVersion": version.value,
        "devices": devices,
    }, indent=1))


if __name__ == "__main__":
    main()
