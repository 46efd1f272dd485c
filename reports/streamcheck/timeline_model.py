"""The timeline's model: what a test's observation "timeline" (schema 1.1+) holds, sorted into what is drawn —
a lane per stream for its kernels, lanes for copies and memsets by direction, the NVTX ranges and the host
events — with what was left out, and the trimmed copy the page's data block keeps. No drawing here
(timeline.py draws it). Python 3.9+ standard library only.
"""

from __future__ import annotations

import bisect
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .common import as_ns, dig, fmt_value, slug

TL_MAX_ITEMS = 200         # items drawn per test
TL_MAX_LANES = 48          # stream lanes drawn per test
TL_DATA_ITEMS = 3          # timeline items, ranges and host events per test in the page's data block

# Copies and memsets are drawn on lanes of their own, after every kernel lane: one per (stream, direction).
TL_COPY_KINDS = ("memcpy", "memset")
TL_LANE_SEP = " \u00b7 "
TL_DIRECTION_ORDER = {"HtoD": 0, "DtoH": 1, "DtoD": 2}   # then any other copy kind, then memset


def timeline_state(test: Dict[str, Any]) -> str:
    """'none' (no timeline object), 'off' (tracing off), 'empty' (on, nothing recorded) or 'drawn'."""
    tl = test.get("timeline")
    if not isinstance(tl, dict):
        return "none"
    if dig(tl, "tracing", "enabled") is not True:
        return "off"
    model = timeline_model(tl)
    return "drawn" if model["items"] or model["ranges"] else "empty"


def entries_of(tl: Dict[str, Any], key: str) -> Tuple[List[Dict[str, Any]], int]:
    """The well-formed entries of tl[key] (objects with a numeric start_ns), and how many were not."""
    raw = tl.get(key)
    if not isinstance(raw, list):
        return [], 0 if raw is None else 1
    good, bad = [], 0
    for entry in raw:
        if isinstance(entry, dict) and as_ns(entry.get("start_ns")) is not None:
            good.append(entry)
        else:
            bad += 1
    return good, bad


def copy_direction(item: Dict[str, Any]) -> str:
    """The copy lane's word for a memcpy or memset item: its copy kind (HtoD, DtoH, DtoD, ...), "memset",
    or "memcpy" where the file names no copy kind."""
    if item["kind"] == "memset":
        return "memset"
    kind = item["raw"].get("copy_kind")
    if kind is None or kind == "":
        return "memcpy"
    return kind if isinstance(kind, str) else fmt_value(kind)


def merge_intervals(spans: Iterable[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The union of [start, end) intervals as sorted, disjoint intervals; empty intervals are dropped."""
    merged: List[Tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def covered_ns(start: int, end: int, union: Sequence[Tuple[int, int]], union_starts: Sequence[int]) -> int:
    """How much of [start, end) the disjoint, sorted intervals of union cover."""
    total = 0
    index = max(bisect.bisect_right(union_starts, start) - 1, 0)
    while index < len(union) and union[index][0] < end:
        a, b = union[index]
        total += max(0, min(b, end) - max(a, start))
        index += 1
    return total


def model_items(entries: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The items with integer times (an end before the start counts as the start), their kind, stream, label and
    lane: (stream, "") for kernels and items of any other kind, (stream, copy direction) for copies and memsets."""
    items = []
    for entry in entries:
        start = as_ns(entry["start_ns"])
        end = as_ns(entry.get("end_ns"))
        item = {"raw": entry, "s": start, "e": end if end is not None and end >= start else start,
                "kind": str(entry.get("kind") or "?"), "stream": fmt_value(entry.get("stream"))
                if entry.get("stream") not in (None, "") else "(no stream)",
                "label": entry.get("label") if isinstance(entry.get("label"), str) else ""}
        item["lane"] = (item["stream"], copy_direction(item) if item["kind"] in TL_COPY_KINDS else "")
        items.append(item)
    return items


def model_ranges(entries: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The NVTX ranges with integer times; a range without an end (end_ns missing or 0) is open."""
    ranges = []
    for entry in entries:
        start = as_ns(entry["start_ns"])
        end = as_ns(entry.get("end_ns"))
        is_open = end is None or end == 0
        ranges.append({"raw": entry, "s": start, "e": None if is_open else max(end, start), "open": is_open,
                       "name": fmt_value(entry.get("name")) if entry.get("name") is not None else ""})
    return ranges


def model_host(entries: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The host events with integer times and a text label."""
    host = []
    for e in entries:
        start = as_ns(e["start_ns"])
        end = as_ns(e.get("end_ns"))
        host.append({"raw": e, "s": start,
                     # An interval (a host function, a latch's wait) when it has a later end; a moment otherwise.
                     "e": end if end is not None and end > start else None,
                     "label": e.get("label") if isinstance(e.get("label"), str)
                     else "" if e.get("label") is None else fmt_value(e.get("label"))})
    return host


def copy_overlap(items: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    """Sets each copy's and memset's overlap_ns, the part of its interval that any kernel of the test overlapped,
    and returns their count, summed time and summed overlap."""
    kernels = merge_intervals((it["s"], it["e"]) for it in items if it["kind"] == "kernel")
    kernel_starts = [a for a, _ in kernels]
    copies = {"count": 0, "time_ns": 0, "overlap_ns": 0}
    for item in items:
        if item["kind"] in TL_COPY_KINDS:
            item["overlap_ns"] = covered_ns(item["s"], item["e"], kernels, kernel_starts)
            copies["count"] += 1
            copies["time_ns"] += item["e"] - item["s"]
            copies["overlap_ns"] += item["overlap_ns"]
    return copies


def first_items(items: Sequence[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[Tuple[str, str]], set]:
    """What is drawn of items sorted by start time: the first TL_MAX_ITEMS, in at most TL_MAX_LANES lanes;
    the lanes in the order they were opened, and the lanes refused."""
    opened: List[Tuple[str, str]] = []
    opened_set: set = set()
    refused: set = set()
    drawn = []
    for item in items:
        if len(drawn) >= TL_MAX_ITEMS:
            break
        if item["lane"] not in opened_set:
            if len(opened) >= TL_MAX_LANES:
                refused.add(item["lane"])
                continue
            opened.append(item["lane"])
            opened_set.add(item["lane"])
        drawn.append(item)
    return drawn, opened, refused


def ordered_lanes(opened: Sequence[Tuple[str, str]]) -> List[Dict[str, Any]]:
    """The lanes in drawing order: the kernel lanes by their stream's first item, then the copy lanes, by stream
    in the same order and, within a stream, HtoD, DtoH, DtoD, any other copy kind, memset."""
    stream_rank: Dict[str, int] = {}
    for stream, _ in opened:
        stream_rank.setdefault(stream, len(stream_rank))

    def lane_order(key: Tuple[str, str]) -> Tuple[int, int, int, str, int]:
        stream, direction = key
        if not direction:
            return 0, stream_rank[stream], 0, "", 0
        rank = TL_DIRECTION_ORDER.get(direction, 4 if direction == "memset" else 3)
        return 1, stream_rank[stream], rank, direction, opened.index(key)

    return [{"key": (stream, direction), "stream": stream, "direction": direction,
             "name": stream + TL_LANE_SEP + direction if direction else stream}
            for stream, direction in sorted(opened, key=lane_order)]


def timeline_model(tl: Dict[str, Any]) -> Dict[str, Any]:
    """Items, ranges and host events with integer times, the span, and what is drawn of them.
    Times stay integers (CUPTI's are ~1.8e18 ns, beyond a double's exact range) until t0 is subtracted.
    Lanes: one per stream for its kernels (and items of any other kind), then one per (stream, copy direction)
    for its memcpy and memset items (observation schema 1.4 adds their channel), so that a copy is drawn under
    the kernels it overlaps. Each copy and memset also gets the time a kernel of the test overlapped it."""
    raw_items, bad_items = entries_of(tl, "items")
    raw_ranges, bad_ranges = entries_of(tl, "ranges")
    raw_host, bad_host = entries_of(tl, "host_events")
    items, ranges, host = model_items(raw_items), model_ranges(raw_ranges), model_host(raw_host)

    starts = [x["s"] for x in items] + [x["s"] for x in ranges] + [x["s"] for x in host]
    t0 = min(starts) if starts else 0
    ends = [x["e"] for x in items] + [x["e"] for x in ranges if not x["open"]] + \
        [x["e"] for x in host if x["e"] is not None] + starts
    t1 = max(ends) if ends else 0

    copies = copy_overlap(items)
    items.sort(key=lambda x: (x["s"], x["e"]))
    drawn, opened, refused = first_items(items)
    drawn_streams = {stream for stream, _ in opened}
    ranges.sort(key=lambda x: (x["s"], -(x["e"] if x["e"] is not None else t1)))
    host.sort(key=lambda x: x["s"])
    return {"t0": t0, "t1": t1, "items": items, "drawn": drawn, "lanes": ordered_lanes(opened),
            "lanes_refused": len(refused), "streams_refused": len({s for s, _ in refused} - drawn_streams),
            "copies": copies, "ranges": ranges, "host": host, "bad": bad_items + bad_ranges + bad_host}


def timeline_note(test: Dict[str, Any]) -> Optional[str]:
    """One line for the Result cell when a timeline object exists but nothing is drawn."""
    tl = test.get("timeline")
    state = timeline_state(test)
    if state == "off":
        reason = dig(tl, "tracing", "reason")
        return "no timeline: tracing off (%s)" % (reason if isinstance(reason, str) and reason else "no reason given")
    if state == "empty":
        return "timeline: tracing on, nothing recorded (%s unlabelled)" % fmt_value(tl.get("unlabelled_records", 0))
    return None


def timeline_anchor(test: Dict[str, Any]) -> str:
    return "tl-" + slug(test["ctest_name"])


def trace_path(test: Dict[str, Any]) -> str:
    """Where the report writes the test's Chrome trace (trace_events.py), from the report's folder."""
    return "traces/%s.json" % slug(test["ctest_name"])


def timeline_without_blocks(tl: Any) -> Any:
    """The timeline as the embedded data keeps it (the page's size budget): the first TL_DATA_ITEMS items,
    ranges and host events, each kernel's per-block records as their count, and how many of each the
    observation file holds (<key>_in_file); the drawing shows up to TL_MAX_ITEMS items."""
    if not isinstance(tl, dict) or not isinstance(tl.get("items"), list):
        return tl
    items = []
    for it in tl["items"][:TL_DATA_ITEMS]:
        if isinstance(it, dict) and isinstance(it.get("blocks"), list):
            it = dict(it, blocks=len(it["blocks"]))
        items.append(it)
    kept = dict(tl, items=items, items_in_file=len(tl["items"]))
    for key in ("ranges", "host_events"):
        if isinstance(tl.get(key), list):
            kept[key] = tl[key][:TL_DATA_ITEMS]
            kept[key + "_in_file"] = len(tl[key])
    return kept
