"""What a PyTorch memory snapshot's trace holds, without PyTorch.

    python3 traces/trace_stats.py traces/h200/*.pickle.gz

Prints, per trace: the events per device, the count of each action, the peak
of requested bytes live (alloc minus free_completed, as the caching allocator
counts its requested_bytes statistic), and the peak of bytes the allocator held
from the driver (segment_alloc minus segment_free for the native allocator,
segment_map minus segment_unmap for expandable segments). traces/record.py
uses summarize() for the figures it writes into pytorch-reserved.json, and
this command recomputes them from the committed files.
"""

import gzip
import json
import pickle
import sys
from collections import Counter

# Actions that change what the allocator holds from the driver, with their sign.
SEGMENT_SIGN = {"segment_alloc": 1, "segment_free": -1, "segment_map": 1, "segment_unmap": -1}


def load(path):
    with gzip.open(path, "rb") as f:
        return pickle.load(f)


def summarize(snapshot, device=0):
    """Counts and running peaks of one device's trace (a list of TraceEntry dicts)."""
    traces = snapshot["device_traces"]
    events = traces[device] if device < len(traces) else []
    actions = Counter(e["action"] for e in events)
    live = {}  # addr -> requested size of the live block there
    requested = peak_requested = 0
    held = peak_held = 0
    unmatched_frees = 0
    streams = set()
    for e in events:
        action = e["action"]
        streams.add(e.get("stream", 0))
        if action == "alloc":
            live[e["addr"]] = e["size"]
            requested += e["size"]
            peak_requested = max(peak_requested, requested)
        elif action == "free_completed":
            size = live.pop(e["addr"], None)
            if size is None:
                unmatched_frees += 1
            else:
                requested -= size
        elif action in SEGMENT_SIGN:
            held += SEGMENT_SIGN[action] * e["size"]
            peak_held = max(peak_held, held)
    return {
        "events": len(events),
        "eventsPerDevice": [len(t) for t in traces],
        "actions": dict(sorted(actions.items())),
        "streams": len(streams),
        "peakRequested": peak_requested,
        "peakSegmentBytes": peak_held,
        "segmentBytesAtEnd": held,
        "liveBlocksAtEnd": len(live),
        "unmatchedFrees": unmatched_frees,
    }


def main(paths):
    for path in paths:
        s = summarize(load(path))
        print(path)
        print("  " + json.dumps(s))


if __name__ == "__main__":
    main(sys.argv[1:])
