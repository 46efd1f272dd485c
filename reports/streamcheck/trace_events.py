"""A test's timeline as a Chrome trace-event file (JSON object format), which Perfetto (ui.perfetto.dev) and
chrome://tracing open: the same records the report draws, none left out. Three processes: the GPU (a thread
per stream lane: kernels, and copies and memsets per direction), the SMs (a thread per SM: the kernels'
per-block records, where the observation has them) and the host (the NVTX ranges, and the host events).
Times are microseconds from the test's first record, so that no precision is lost to CUPTI's ~1.8e18 ns.
Python 3.9+ standard library only.
"""

from __future__ import annotations

from typing import Any, Dict, List

from .common import as_ns, fmt_value
from .timeline_model import TL_LANE_SEP, timeline_model

GPU_PID, SM_PID, HOST_PID = 1, 2, 3
NVTX_TID, HOST_TID = 1, 2


def us(ns: int, t0: int) -> float:
    return (ns - t0) / 1000.0


def complete(name: str, pid: int, tid: int, start: int, end: int, t0: int, cat: str,
             args: Dict[str, Any]) -> Dict[str, Any]:
    event = {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": us(start, t0),
             "dur": max(end - start, 0) / 1000.0}
    if args:
        event["args"] = args
    return event


def meta(what: str, pid: int, tid: int, name: str) -> Dict[str, Any]:
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def plain(raw: Dict[str, Any], leave_out: tuple = ()) -> Dict[str, Any]:
    """A record's fields as trace arguments (scalars as they are, anything else as text)."""
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else fmt_value(v)
            for k, v in raw.items() if k not in leave_out}


def chrome_trace(test: Dict[str, Any], gpu: str) -> Dict[str, Any]:
    """The trace of one test whose observation has a timeline."""
    model = timeline_model(test["timeline"])
    t0 = model["t0"]
    events: List[Dict[str, Any]] = [meta("process_name", GPU_PID, 0, "GPU: %s" % gpu),
                                    meta("process_name", SM_PID, 0, "SMs (per-block records)"),
                                    meta("process_name", HOST_PID, 0, "host"),
                                    meta("thread_name", HOST_PID, NVTX_TID, "NVTX ranges"),
                                    meta("thread_name", HOST_PID, HOST_TID, "host events")]
    lanes: Dict[tuple, int] = {}
    sms = set()
    for it in model["items"]:
        if it["lane"] not in lanes:
            lanes[it["lane"]] = len(lanes) + 1
            stream, direction = it["lane"]
            events.append(meta("thread_name", GPU_PID, lanes[it["lane"]],
                               "stream %s" % stream + (TL_LANE_SEP + direction if direction else "")))
        name = it["label"] or fmt_value(it["raw"].get("name")) or it["kind"]
        events.append(complete(name, GPU_PID, lanes[it["lane"]], it["s"], it["e"], t0, it["kind"],
                               plain(it["raw"], ("blocks",))))
        blocks = it["raw"].get("blocks")
        for index, b in enumerate(blocks if isinstance(blocks, list) else []):
            start = as_ns(b.get("t0_ns")) if isinstance(b, dict) else None
            if start is None:
                continue
            end = as_ns(b.get("t1_ns"))
            sm = b.get("sm_begin")
            sm = sm if isinstance(sm, int) and not isinstance(sm, bool) else -1
            sms.add(sm)
            # Its times are the event's; the rest of the record (the largest gap in its spin, an SM it ended on
            # if not the one it began on) stays, under names short enough for a file of many thousand blocks.
            events.append(complete("%s #%d" % (name, index), SM_PID, sm + 1, start,
                                   end if end is not None and end >= start else start, t0, "block",
                                   plain(b, ("t0_ns", "t1_ns", "sm_begin") + (("sm_end",) if b.get("sm_end") == sm
                                                                            else ()))))
    events.extend(meta("thread_name", SM_PID, sm + 1, "SM %d" % sm if sm >= 0 else "SM unknown") for sm in sorted(sms))
    for r in model["ranges"]:
        end = r["e"] if r["e"] is not None else model["t1"]
        events.append(complete(r["name"] + (" (open)" if r["open"] else ""), HOST_PID, NVTX_TID, r["s"], end, t0,
                               "nvtx", plain(r["raw"])))
    for h in model["host"]:
        if h["e"] is None:
            events.append({"name": h["label"] or "host event", "cat": "host", "ph": "i", "s": "t", "pid": HOST_PID,
                           "tid": HOST_TID, "ts": us(h["s"], t0), "args": plain(h["raw"])})
        else:
            events.append(complete(h["label"] or "host event", HOST_PID, HOST_TID, h["s"], h["e"], t0, "host",
                                   plain(h["raw"])))
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"test": test["ctest_name"], "t0_ns": t0, "clock": fmt_value(test["timeline"].get("clock")),
                          "generator": "streamcheck report"}}
