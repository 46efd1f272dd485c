"""Timeline drawing: one inline SVG per test from the timeline's model (timeline_model.py): a lane per stream
for its kernels (with per-block bars under them), lanes for copies and memsets, an NVTX lane and a host lane.
The block chart of the scheduling tests is block_chart.py.
The geometry is computed here so that the page needs no script to show it; the elements' markup is in
reports/templates/timeline.svg.html, filled through templates.fill, which escapes every name and tooltip.
Python 3.9+ standard library only.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .common import Markup, as_ns, fmt_bytes, fmt_ns, fmt_pct, fmt_rate, fmt_value, plural, slug
from .templates import EMPTY, attrs, fill, join
from .timeline_model import TL_COPY_KINDS, TL_LANE_SEP, TL_MAX_ITEMS, TL_MAX_LANES, timeline_model

TL_WIDTH = 900             # the drawing's width in px, labels included
TL_LABEL_W = 112           # lane labels on the left
TL_RIGHT = 16              # room for the last tick label
TL_PLOT_W = TL_WIDTH - TL_LABEL_W - TL_RIGHT
TL_AXIS_H = 22
TL_ROW_H = 16              # one row of items or NVTX ranges
TL_BLOCK_H = 3             # one row of per-block bars (plus 1 px gap)
TL_HOST_H = 20
TL_MAX_BLOCK_ROWS = 32     # block rows under the kernels of one lane
TL_MAX_BLOCKS = 20000      # block records drawn per test
TL_BLOCK_TIPS = 64         # a kernel with more blocks has them drawn as one shape with one tooltip
TL_MAX_BLOCK_TIPS = 128    # per-block tooltips per drawing
TL_MAX_DRAWING_BYTES = 128 * 1024   # a test's timeline drawings: no zoom when the first takes half of this
TL_MAX_RANGES = 200
TL_MAX_RANGE_ROWS = 10
TL_MAX_HOST = 200
TL_ZOOM_BELOW = 0.25       # a second, zoomed drawing when the items fill less than this share of the span
TL_CHAR_W = 6.1            # width of one character at the drawing's 10 px monospace font

TL_KIND_STYLE = {          # fill, stroke
    "kernel": ("#8cb8f2", "#1f5fae"),
    "memcpy": ("#8fd6a8", "#1a7f4e"),
    "memset": ("#f5c27a", "#a2630f"),
}
TL_OTHER_STYLE = ("#d0d7de", "#57606a")
TL_BLOCK_FILL = "#0b3d91"
TL_RANGE_STYLE = ("#e4d8fb", "#6639ba")
TL_HOST_COLOR = "#cf222e"
TL_LANE_CHARS = 17         # characters of a lane's title shown left of the plot (the tooltip has all of it)

def pack_rows(spans: Sequence[Tuple[float, float]], max_rows: int) -> List[Optional[int]]:
    """A row for each (start, end), in the given order, so that spans in one row do not overlap; None
    where more than max_rows would be needed."""
    row_ends: List[float] = []
    rows: List[Optional[int]] = []
    for start, end in spans:
        for number, last in enumerate(row_ends):
            if start >= last:
                row_ends[number] = max(end, start)
                rows.append(number)
                break
        else:
            if len(row_ends) < max_rows:
                row_ends.append(max(end, start))
                rows.append(len(row_ends) - 1)
            else:
                rows.append(None)
    return rows


def tick_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about six ticks over span ns."""
    raw = max(span / 6.0, 1e-9)
    power = 10.0 ** int(("%e" % raw).split("e")[1])
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def axis_unit(span: float) -> Tuple[float, str]:
    if span >= 2e9:
        return 1e9, "s"
    if span >= 2e6:
        return 1e6, "ms"
    if span >= 2e3:
        return 1e3, "\u00b5s"
    return 1.0, "ns"


def fits(text: str, width: float) -> bool:
    return bool(text) and len(text) * TL_CHAR_W + 6 <= width


def item_tooltip(item: Dict[str, Any], t0: int) -> str:
    raw = item["raw"]
    lines = ["%s \u2014 %s" % (item["label"] or "(unlabelled)", item["kind"]),
             "stream %s%s" % (item["stream"], " (CUPTI stream %s)" % fmt_value(raw["stream_id"])
                              if raw.get("stream_id") is not None else ""),
             "start %s, duration %s" % (fmt_ns(item["s"] - t0, signed=True, exact=True),
                                         fmt_ns(item["e"] - item["s"]))]
    duration = item["e"] - item["s"]
    if item["kind"] in TL_COPY_KINDS or "bytes" in raw:
        parts = []
        if raw.get("bytes") is not None:
            parts.append(fmt_bytes(raw.get("bytes")))
        if raw.get("copy_kind"):
            parts.append(fmt_value(raw.get("copy_kind")))
        if item["kind"] == "memset" and raw.get("dst_kind"):
            parts.append("memory %s" % fmt_value(raw.get("dst_kind")))  # a memset has no source
        elif raw.get("src_kind") or raw.get("dst_kind"):
            parts.append("memory %s \u2192 %s" % (fmt_value(raw.get("src_kind") or "?"),
                                                  fmt_value(raw.get("dst_kind") or "?")))
        if parts:
            lines.append(", ".join(parts))
    # Observation schema 1.4: the hardware channel CUPTI reports (absent from older files and when unknown).
    channel = [fmt_value(raw.get(key)) for key in ("channel_type", "channel_id") if raw.get(key) not in (None, "")]
    if channel:
        lines.append("channel %s" % " ".join(channel))
    if item["kind"] in TL_COPY_KINDS:
        n_bytes = raw.get("bytes")
        if isinstance(n_bytes, int) and not isinstance(n_bytes, bool) and n_bytes >= 0 and duration > 0:
            lines.append("bandwidth %s" % fmt_rate(n_bytes, duration))
        if "overlap_ns" in item:
            if duration > 0:
                lines.append("overlapped by kernels: %s of its interval (%s of %s)" % (
                    fmt_pct(item["overlap_ns"], duration), fmt_ns(item["overlap_ns"]), fmt_ns(duration)))
            else:
                lines.append("overlapped by kernels: n/a (zero duration)")
    if raw.get("name"):
        name = fmt_value(raw.get("name"))
        lines.append("name %s" % (name if len(name) <= 160 else name[:157] + "..."))
    if isinstance(raw.get("blocks"), list) and raw.get("blocks"):
        lines.append("%s recorded" % plural(len(raw["blocks"]), "block"))
    if raw.get("correlation_id") is not None:
        lines.append("correlation %s" % fmt_value(raw.get("correlation_id")))
    return "\n".join(lines)


def lane_title(title: str, suffix: str = "") -> str:
    """A lane's title as shown left of the plot: at most TL_LANE_CHARS characters; a copy lane's suffix
    (" · HtoD") is kept whole and its stream's name shortened instead."""
    if len(title) + len(suffix) <= TL_LANE_CHARS:
        return title + suffix
    room = TL_LANE_CHARS - len(suffix) - 1
    if room < 1:
        return (title + suffix)[:TL_LANE_CHARS - 1] + "\u2026"
    return title[:room] + "\u2026" + suffix


def coalesce(bars: Iterable[Tuple[float, float, float]], join_px: float = 0.5) -> List[Tuple[float, float, float]]:
    """(y, x0, x1) bars with the bars of one row that touch or overlap within join_px joined: at the drawing's
    resolution they look the same, and a row of a thousand back-to-back blocks becomes one bar."""
    out: List[Tuple[float, float, float]] = []
    for y, x0, x1 in sorted(bars):
        if out and out[-1][0] == y and x0 <= out[-1][2] + join_px:
            if x1 > out[-1][2]:
                out[-1] = (y, out[-1][1], x1)
        else:
            out.append((y, x0, x1))
    return out


def bar_path(bars: Iterable[Tuple[float, float, float]], height: float) -> str:
    """One SVG path drawing every (y, x0, x1) bar as a rectangle of the height."""
    return "".join("M%.1f %.1fh%.1fv%.4gh-%.1fz" % (x0, y, x1 - x0, height, x1 - x0)
                   for y, x0, x1 in coalesce(bars))


def blocks_tooltip(who: str, good: Sequence[Tuple[int, int, int, Any]], t0: int) -> str:
    """The tooltip of a kernel's blocks drawn as one shape: how many, on how many SMs, when, the widest gap."""
    sms = {fmt_value(b.get("sm_begin")) for _, _, _, b in good}
    moved = sum(1 for _, _, _, b in good if b.get("sm_end") != b.get("sm_begin"))
    gaps = [as_ns(b.get("max_gap_ns")) for _, _, _, b in good]
    gaps = [g for g in gaps if g is not None]
    lines = ["%s \u2014 %s on %s" % (who, plural(len(good), "block"), plural(len(sms), "SM")),
             "first start %s, last end %s" % (fmt_ns(min(g[0] for g in good) - t0, signed=True, exact=True),
                                              fmt_ns(max(g[1] for g in good) - t0, signed=True, exact=True)),
             "durations %s \u2026 %s" % (fmt_ns(min(g[1] - g[0] for g in good)), fmt_ns(max(g[1] - g[0] for g in good)))]
    if gaps:
        lines.append("largest gap between stamps %s ns" % max(gaps))
    if moved:
        lines.append("%s ended on another SM than it started" % plural(moved, "block"))
    lines.append("one bar per block; bars touching within half a pixel are drawn joined")
    return "\n".join(lines)


# Optional attributes of the drawing's shapes (slots inside a tag take markup: templates.attrs).
TL_FADED = attrs(**{"fill-opacity": "0.45", "stroke-dasharray": "2 1"})   # an unlabelled item
TL_OPEN_DASH = attrs(**{"stroke-dasharray": "4 2"})                        # an NVTX range without an end


class Window:
    """The stretch [w0, w1] of the test's clock (ns) that one drawing shows, and its scale: x = left + (t - w0)
    * scale. It also holds what the drawing may still spend on block records and their tooltips, and counts
    what it left out ("skipped") or drew as one shape ("merged"), because those limits hold for the whole
    drawing, across its lanes."""

    def __init__(self, t0: int, w0: int, w1: int):
        self.t0, self.w0, self.w1 = t0, w0, w1
        self.span = max(w1 - w0, 1)
        self.scale = TL_PLOT_W / float(self.span)
        self.left, self.right = float(TL_LABEL_W), float(TL_LABEL_W + TL_PLOT_W)
        self.blocks_left = TL_MAX_BLOCKS
        self.tips_left = TL_MAX_BLOCK_TIPS
        self.stats = {"skipped": 0, "merged": 0}

    def x_of(self, t: float) -> float:
        return self.left + (t - self.w0) * self.scale

    def shows(self, start: int, end: int) -> bool:
        """Whether [start, end] reaches into the window (a zoomed drawing leaves out what lies outside)."""
        return not (end < self.w0 or start > self.w1)


class Lanes:
    """The lanes of one drawing, top to bottom under the axis: each one's label, background (every other lane
    shaded) and the line under it, and where the next one starts."""

    def __init__(self) -> None:
        self.y = float(TL_AXIS_H)
        self.shade = False
        self.labels: List[Markup] = []

    def add(self, title: str, tooltip: str, height: float, suffix: str = "") -> float:
        """Opens a lane of the height below the last one; returns its top."""
        top = self.y
        self.labels.append(draw_lane(top, title, tooltip, height, self.shade, suffix))
        self.shade = not self.shade
        self.y += height
        return top


def draw_lane(top: float, title: str, tooltip: str, height: float, shade: bool, suffix: str = "") -> Markup:
    """A lane's title left of the plot (shortened: lane_title; the tooltip has all of it), its background when
    shaded, and the line under it across the whole drawing."""
    background = fill("tl_lane_shade", y="%.1f" % top, width=TL_WIDTH, height="%.1f" % height) if shade else EMPTY
    return fill("tl_lane", shade=background, tooltip=tooltip, title=lane_title(title, suffix),
                label_y="%.1f" % (top + min(height, TL_ROW_H + 4) / 2 + 3.5), width=TL_WIDTH,
                bottom="%.1f" % (top + height))


def lane_tooltip(entry: Dict[str, Any], mine: Sequence[Dict[str, Any]]) -> str:
    """A stream lane's tooltip: the stream, its CUPTI stream IDs, what the lane holds and how many items."""
    ids = sorted({fmt_value(it["raw"].get("stream_id")) for it in mine if it["raw"].get("stream_id") is not None})
    direction = entry["direction"]
    what = ""
    if direction:
        what = ", memsets" if direction == "memset" else ", copies" if direction == "memcpy" else \
            ", %s copies" % direction
    return "stream %s%s%s: %s drawn" % (entry["stream"], " (CUPTI stream %s)" % ", ".join(ids) if ids else "",
                                        what, plural(len(mine), "item"))


def plan_blocks(mine: Sequence[Dict[str, Any]],
                stats: Dict[str, int]) -> Tuple[List[Tuple[Dict[str, Any], list, list, int]], int]:
    """For each kernel of a lane that has block records: the kernel, its blocks with a numeric start as
    (start, end, index, record) by start time, their rows (None beyond TL_MAX_BLOCK_ROWS) and how many records
    it has; and how many block rows the lane needs. Records without a numeric start are counted as skipped."""
    plan = []
    n_block_rows = 0
    for it in mine:
        blocks = it["raw"].get("blocks")
        if it["kind"] != "kernel" or not isinstance(blocks, list) or not blocks:
            continue
        good = []
        for index, b in enumerate(blocks):
            bs, be = (as_ns(b.get("t0_ns")), as_ns(b.get("t1_ns"))) if isinstance(b, dict) else (None, None)
            if bs is None:
                stats["skipped"] += 1
                continue
            good.append((bs, be if be is not None and be >= bs else bs, index, b))
        good.sort(key=lambda g: (g[0], g[1]))
        block_rows = pack_rows([(g[0], g[1]) for g in good], TL_MAX_BLOCK_ROWS)
        plan.append((it, good, block_rows, len(blocks)))
        used = [r for r in block_rows if r is not None]
        n_block_rows = max(n_block_rows, max(used) + 1 if used else 0)
    return plan, n_block_rows


def stream_lane(lanes: Lanes, window: Window, entry: Dict[str, Any], mine: Sequence[Dict[str, Any]]) -> List[Markup]:
    """A stream's lane (its kernels, or one of its copy directions): the items in rows where they do not overlap,
    and the block records of its kernels in rows under them."""
    rows = pack_rows([(it["s"], it["e"]) for it in mine], 1000)
    n_rows = max(r for r in rows if r is not None) + 1 if mine else 1
    plan, n_block_rows = plan_blocks(mine, window.stats)
    height = n_rows * TL_ROW_H + n_block_rows * (TL_BLOCK_H + 1) + (4 if n_block_rows else 0) + 4
    direction = entry["direction"]
    top = lanes.add(entry["stream"], lane_tooltip(entry, mine), height, TL_LANE_SEP + direction if direction else "")
    out = [draw_item(it, top + 2 + (row or 0) * TL_ROW_H, window)
           for it, row in zip(mine, rows) if window.shows(it["s"], it["e"])]
    blocks_top = top + 2 + n_rows * TL_ROW_H + 2
    for it, good, block_rows, total in plan:
        out.extend(draw_blocks(it, good, block_rows, total, blocks_top, window))
    return out


def draw_item(it: Dict[str, Any], y: float, window: Window) -> Markup:
    """A kernel, copy or memset as a box from its start to its end (at least 1 px, clipped to the plot), faded
    and dashed when unlabelled, with its label inside where it fits and its details as the tooltip."""
    fill_colour, stroke = TL_KIND_STYLE.get(it["kind"], TL_OTHER_STYLE)
    xs, xe = max(window.x_of(it["s"]), window.left), min(window.x_of(it["e"]), window.right)
    width = max(xe - xs, 1.0)
    label = fill("tl_item_label", x="%.1f" % (xs + 3), y="%.1f" % (y + TL_ROW_H - 6), text=it["label"]) \
        if fits(it["label"], width) else EMPTY
    return fill("tl_item", kind=slug(it["kind"]), tooltip=item_tooltip(it, window.t0), x="%.2f" % xs,
                y="%.1f" % y, width="%.2f" % width, height=TL_ROW_H - 3, fill=fill_colour, stroke=stroke,
                stroke_width="1" if width >= 3 else "0.5", faded=EMPTY if it["label"] else TL_FADED, label=label)


def block_tooltip(who: str, index: int, total: int, b: Dict[str, Any], start: int, end: int, t0: int) -> str:
    """One block record's tooltip: which block of the kernel, its SM (both when it moved), when, how long."""
    sm = "SM %s" % fmt_value(b.get("sm_begin"))
    if b.get("sm_end") != b.get("sm_begin"):
        sm += " at start, SM %s at end" % fmt_value(b.get("sm_end"))
    tip = "%s \u2014 block %d of %d\n%s\nstart %s, duration %s" % (
        who, index + 1, total, sm, fmt_ns(start - t0, signed=True, exact=True), fmt_ns(end - start))
    if b.get("max_gap_ns") is not None:
        tip += "\nlargest gap between stamps %s ns" % fmt_value(b.get("max_gap_ns"))
    return tip


def draw_blocks(it: Dict[str, Any], good: Sequence[Tuple[int, int, int, Any]], rows: Sequence[Optional[int]],
                total: int, top: float, window: Window) -> List[Markup]:
    """A kernel's block records as bars in their rows. While the kernel has few blocks (and the drawing's
    tooltip budget lasts) each is a rect with a tooltip; otherwise they are one path (bars touching within half
    a pixel joined) whose tooltip sums them up, which keeps a kernel of thousands of blocks small."""
    who = it["label"] or "kernel"
    one_by_one = total <= TL_BLOCK_TIPS and window.tips_left >= total
    out: List[Markup] = []
    bars = []
    for (bs, be, index, b), row in zip(good, rows):
        if row is None or window.blocks_left <= 0:
            window.stats["skipped"] += 1
            continue
        if not window.shows(bs, be):
            continue
        window.blocks_left -= 1
        xs, xe = max(window.x_of(bs), window.left), min(window.x_of(be), window.right)
        y = top + row * (TL_BLOCK_H + 1)
        if not one_by_one:
            bars.append((y, xs, max(xe, xs + 1.0)))
            continue
        window.tips_left -= 1
        out.append(fill("tl_block", x="%.2f" % xs, y="%.1f" % y, width="%.2f" % max(xe - xs, 1.0),
                        height=TL_BLOCK_H, fill=TL_BLOCK_FILL,
                        tooltip=block_tooltip(who, index, total, b, bs, be, window.t0)))
    if bars:
        window.stats["merged"] += len(bars)
        out.append(fill("tl_blocks", fill=TL_BLOCK_FILL, d=bar_path(bars, TL_BLOCK_H),
                        tooltip=blocks_tooltip(who, good, window.t0)))
    return out


def nvtx_lane(lanes: Lanes, window: Window, ranges: Sequence[Dict[str, Any]], t1: int) -> List[Markup]:
    """The NVTX lane, when there are ranges: nested or overlapping ranges in sub-rows (a range beyond
    TL_MAX_RANGE_ROWS is left out); an open range runs to the end of the span."""
    if not ranges:
        return []
    ends = [r["e"] if r["e"] is not None else max(t1, r["s"]) for r in ranges]
    rows = pack_rows([(r["s"], e) for r, e in zip(ranges, ends)], TL_MAX_RANGE_ROWS)
    used = [r for r in rows if r is not None]
    n_rows = max(used) + 1 if used else 1
    top = lanes.add("NVTX", "NVTX ranges (CUPTI marker records)", n_rows * TL_ROW_H + 4)
    return [draw_range(r, end, top + 2 + row * TL_ROW_H, window)
            for r, end, row in zip(ranges, ends, rows) if row is not None]


def range_tooltip(r: Dict[str, Any], t0: int) -> str:
    domain = r["raw"].get("domain")
    return "NVTX range %s%s\nstart %s, %s" % (
        r["name"] or "(unnamed)", " (domain %s)" % fmt_value(domain) if domain else "",
        fmt_ns(r["s"] - t0, signed=True, exact=True),
        "open: no end when collected (end_ns 0); drawn to the end of the span" if r["open"]
        else "duration %s" % fmt_ns(r["e"] - r["s"]))


def draw_range(r: Dict[str, Any], end: int, y: float, window: Window) -> Markup:
    """An NVTX range as a box, dashed while open, clipped to the plot with the clipped side marked in its label
    (the label shortened to the bare name, or left out, where it does not fit); nothing outside the window."""
    xs, xe = window.x_of(r["s"]), window.x_of(end)
    if xe < window.left or xs > window.right:
        return EMPTY
    clipped_left, clipped_right = xs < window.left, xe > window.right
    xs, xe = max(xs, window.left), min(xe, window.right)
    width = max(xe - xs, 1.0)
    label = r["name"] + (" (open)" if r["open"] else "")
    label = ("\u25c2 " if clipped_left else "") + label + (" \u25b8" if clipped_right else "")
    if not fits(label, width):
        label = r["name"] if fits(r["name"], width) else ""
    text = fill("tl_range_label", x="%.1f" % (xs + 3), y="%.1f" % (y + TL_ROW_H - 6), text=label) if label else EMPTY
    fill_colour, stroke = TL_RANGE_STYLE
    return fill("tl_range", classes="range open" if r["open"] else "range", tooltip=range_tooltip(r, window.t0),
                x="%.2f" % xs, y="%.1f" % y, width="%.2f" % width, height=TL_ROW_H - 3, fill=fill_colour,
                stroke=stroke, dash=TL_OPEN_DASH if r["open"] else EMPTY, label=text)


def host_lane(lanes: Lanes, window: Window, host: Sequence[Dict[str, Any]]) -> List[Markup]:
    """The host lane, when the test recorded host events: the first TL_MAX_HOST of them that fall in the window."""
    if not host:
        return []
    top = lanes.add("host", "host moments and host-function intervals the test recorded", TL_HOST_H)
    out: List[Markup] = []
    for e in host[:TL_MAX_HOST]:
        if window.w0 <= e["s"] <= window.w1:
            out.extend(draw_host_event(e, top, window))
    return out


def draw_host_event(e: Dict[str, Any], top: float, window: Window) -> List[Markup]:
    """A host event: a tick with a marker in the host lane (its label beside it where the drawing has room) and
    a faint line up through the lanes above; one with an end (a host function, a host latch's wait) is also a
    bar from its start to its end, drawn under the tick."""
    x = window.x_of(e["s"])
    label = e["label"] or "(no label)"
    at = fmt_ns(e["s"] - window.t0, signed=True, exact=True)
    out = []
    tip = "host: %s\nat %s" % (label, at)
    if e["e"] is not None:
        x_end = max(window.x_of(min(e["e"], window.w1)), x + 1.0)
        out.append(fill("tl_host_interval", x="%.2f" % x, y="%.1f" % (top + 3), width="%.2f" % (x_end - x),
                        height="%.1f" % (TL_HOST_H - 5), colour=TL_HOST_COLOR,
                        tooltip="host: %s\nfrom %s for %s" % (label, at, fmt_ns(e["e"] - e["s"]))))
        tip += ", for %s" % fmt_ns(e["e"] - e["s"])
    text = fill("tl_host_label", x="%.1f" % (x + 4), y="%.1f" % (top + TL_HOST_H - 6), colour=TL_HOST_COLOR,
                text=e["label"]) if e["label"] and x + 4 + len(e["label"]) * TL_CHAR_W <= TL_WIDTH else EMPTY
    out.append(fill("tl_host_guide", x="%.2f" % x, top=TL_AXIS_H, bottom="%.1f" % top, colour=TL_HOST_COLOR))
    out.append(fill("tl_host", tooltip=tip, x="%.2f" % x, top="%.1f" % (top + 3),
                    bottom="%.1f" % (top + TL_HOST_H - 2), colour=TL_HOST_COLOR, marker_y="%.1f" % (top + 9),
                    label=text))
    return out


def tick_decimals(value: float) -> int:
    """The decimals (at most 6) that show a tick step of value units exactly."""
    decimals = 0
    while decimals < 6 and abs(round(value, decimals) - value) > 1e-9 * max(1.0, value):
        decimals += 1
    return decimals


def time_axis(window: Window, height: int) -> Markup:
    """The time axis: round ticks of the offset from the test's t0 in one unit chosen by the window's span
    (at most about a hundred), each with a faint line down through the lanes."""
    divisor, unit = axis_unit(window.span)
    step = tick_step(window.span)
    decimals = tick_decimals(step / divisor)
    ticks = []
    first = math.ceil((window.w0 - window.t0) / step)
    k = first
    while True:
        offset = k * step
        x = window.x_of(window.t0 + offset)
        if x > window.right + 0.01:
            break
        if x >= window.left - 0.01:
            ticks.append(fill("tl_tick", x="%.2f" % x, top=TL_AXIS_H - 4, bottom=height, label_x="%.1f" % x,
                              text="%.*f" % (decimals, offset / divisor)))
        k += 1
        if k - first > 100:
            break
    return fill("tl_axis", unit=unit, ticks=join(ticks), left="%.1f" % window.left, right="%.1f" % window.right,
                y=TL_AXIS_H)


def timeline_svg(model: Dict[str, Any], w0: int, w1: int, caption: str) -> Tuple[Markup, Dict[str, int]]:
    """One drawing of the window [w0, w1] (ns on the test's clock): a lane per stream for its kernels, then its
    copy lanes, the NVTX lane and the host lane, under the time axis.
    Returns the SVG and {"skipped": block records not drawn, "merged": block records drawn as one shape}."""
    window = Window(model["t0"], w0, w1)
    lanes = Lanes()
    body: List[Markup] = []
    for entry in model["lanes"]:
        body.extend(stream_lane(lanes, window, entry, [it for it in model["drawn"] if it["lane"] == entry["key"]]))
    body.extend(nvtx_lane(lanes, window, model["ranges"][:TL_MAX_RANGES], model["t1"]))
    body.extend(host_lane(lanes, window, model["host"]))
    height = int(lanes.y + 1)
    return fill("tl_svg", width=TL_WIDTH, height=height, caption=caption, lanes=join(lanes.labels),
                axis=time_axis(window, height), body=join(body)), window.stats


def timeline_summary(model: Dict[str, Any]) -> str:
    parts = [plural(len(model["items"]), "item")]
    streams = {it["stream"] for it in model["items"]}
    if streams:
        parts[0] += " on %s" % plural(len(streams), "stream")
    parts.append(plural(len(model["ranges"]), "NVTX range"))
    if model["host"]:
        parts.append(plural(len(model["host"]), "host event"))
    copies = model["copies"]
    if copies["count"]:
        # Copies and memsets: the share of their summed time that the union of the test's kernels covered.
        parts.append(plural(copies["count"], "copy", "copies"))
        parts.append("%s of copy time overlapped by kernels" % fmt_pct(copies["overlap_ns"], copies["time_ns"])
                     if copies["time_ns"] > 0 else "no copy time (zero durations)")
    parts.append("span %s" % fmt_ns(model["t1"] - model["t0"]))
    if model["items"]:
        parts.append("items' extent %s" % fmt_ns(max(it["e"] for it in model["items"]) -
                                                 min(it["s"] for it in model["items"])))
    return ", ".join(parts)


def fmt_size(n: int) -> str:
    return "%.0f KiB" % (n / 1024.0)


def legend_key(label: str, fill_colour: str, stroke: str, extra: str = "") -> Markup:
    """A key whose colours are its own (a block chart's grids)."""
    return fill("legend_key_colour", label=label, fill=fill_colour, stroke=stroke, extra=extra)


def legend_keys() -> List[Tuple[str, str, str, str]]:
    """(label, fill, stroke, extra style) of the legend's keys, in order."""
    keys = [(kind, f, s, "") for kind, (f, s) in TL_KIND_STYLE.items()]
    keys.append(("block", TL_BLOCK_FILL, TL_BLOCK_FILL, ";height:4px"))
    keys.append(("NVTX range",) + TL_RANGE_STYLE + ("",))
    keys.append(("host event", TL_HOST_COLOR, TL_HOST_COLOR, ";width:3px"))
    return keys


def legend_css() -> str:
    """The legend's colours as one style rule per key, written once per page (every timeline's legend names them)."""
    return "".join(".tl-key-%s i { background:%s;border-color:%s%s }\n" % (slug(label), f, s, extra)
                   for label, f, s, extra in legend_keys())


def timeline_legend() -> Markup:
    """The key of every timeline drawing, written once above the family tables (each timeline links to it)."""
    keys = [fill("legend_key", label=label, key=slug(label)) for label, _, _, _ in legend_keys()]
    keys.append(fill("legend_copies"))
    keys.append(fill("legend_unlabelled"))
    return join(keys)


def clock_line(tl: Dict[str, Any], model: Dict[str, Any]) -> Markup:
    """The clock, its map from %globaltimer, and the record counts, under the drawing."""
    clock_map = tl.get("clock_map") if isinstance(tl.get("clock_map"), dict) else {}
    line = [fill("clock", clock=tl.get("clock") or "not stated")]
    if clock_map:
        if clock_map.get("valid") is False:
            line.append(fill("clock_map_invalid"))
        elif clock_map.get("consistent") is False:  # schema 1.9; absent before
            line.append(fill("clock_map_inconsistent"))
        offset = clock_map.get("globaltimer_to_cupti_offset_ns")
        line.append(fill("clock_offset", offset=offset if offset is not None else "\u2014"))
        residual = clock_map.get("residual_ns")
        line.append("residual %s ns%s" % (fmt_value(residual if residual is not None else "\u2014"),
                                          " (%s)" % plural(clock_map["samples"], "sample")
                                          if isinstance(clock_map.get("samples"), int) else ""))
    else:
        line.append("no clock map")
    line.append(plural(len(model["items"]), "item"))
    unlabelled = tl.get("unlabelled_records")
    line.append("%s unlabelled" % fmt_value(unlabelled if unlabelled is not None else "\u2014"))
    dropped = tl.get("dropped_records_in_process")
    if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped:
        line.append(fill("dropped_records", count=plural(dropped, "CUPTI record")))
    return join(line, " \u00b7 ")


# Where the drawings go: None keeps them in the page; a dict (path from the page -> SVG document) takes them out
# of it, and the page shows each in a frame loaded when the timeline is opened (the page's size, issue of a
# run's 188 drawings: 1.7 MB of a 3.1 MB page). render_report sets it for one page.
_drawing_files: Optional[Dict[str, str]] = None


def drawings_into(files: Optional[Dict[str, str]]) -> None:
    global _drawing_files
    _drawing_files = files


def standalone_svg(svg: str) -> str:
    """A drawing as a document of its own: the SVG namespace, and the page's hover outline."""
    return svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1).replace(
        ">", "><style>g.item:hover rect, g.range:hover rect, rect.block:hover { stroke: #000; stroke-width: 1.5; }"
        "</style>", 1) + "\n"


def drawing_file(svg: Markup, name: str) -> Optional[Dict[str, str]]:
    """Where drawings go beside the page (drawings_into): the drawing written as the file `name`, and its width
    and height for the frame that shows it; None when drawings stay in the page."""
    if _drawing_files is None:
        return None
    _drawing_files[name] = standalone_svg(svg)
    size = dict(re.findall(r'\b(width|height)="(\d+)"', svg[:svg.find(">")]))
    return {"width": size.get("width", "900"), "height": size.get("height", "200")}


def drawing(caption: str, svg: Markup, name: str) -> Markup:
    """A drawing with its caption: in the page, or in the file `name` (from the page) shown in a frame."""
    size = drawing_file(svg, name)
    if size is None:
        return fill("drawing", caption=caption, svg=svg)
    return fill("drawing_file", caption=caption, src=name, width=size["width"], height=size["height"])


def timeline_html(tl: Dict[str, Any], anchor: str, trace: str) -> Markup:
    """The collapsed timeline of one test: legend, the drawing (and a zoom on the items when they fill
    a small part of the span), the clock line, what was left out, and the link to its whole trace (trace:
    the path of its Chrome trace file from the page)."""
    model = timeline_model(tl)
    t0, t1 = model["t0"], max(model["t1"], model["t0"] + 1)
    svg, stats = timeline_svg(model, t0, t1, "timeline of the whole test")
    drawings = [drawing("whole test: t0 = first record, %s" % fmt_ns(t1 - t0), svg, "timelines/%s.svg" % anchor)]
    drawn = model["drawn"]
    notes_first: List[str] = []
    # The test's own NVTX range usually covers its set-up, so the items fill a sliver of the span:
    # then a second drawing zooms on the labelled items (on all drawn items when none is labelled).
    focus = [it for it in drawn if it["label"]] or drawn
    if focus:
        first = min(it["s"] for it in focus)
        last = max(it["e"] for it in focus)
        extent = last - first
        if extent < TL_ZOOM_BELOW * (t1 - t0) and len(svg) > TL_MAX_DRAWING_BYTES // 2:
            notes_first.append("no zoomed drawing: the whole-test drawing already takes %s of the %s a test's "
                               "drawings may take" % (fmt_size(len(svg)), fmt_size(TL_MAX_DRAWING_BYTES)))
        elif extent < TL_ZOOM_BELOW * (t1 - t0):
            pad = max(extent // 40, 500)
            z0, z1 = max(first - pad, t0), min(last + pad, t1)
            zoom_svg, _ = timeline_svg(model, z0, max(z1, z0 + 1), "timeline zoomed on the items")
            what = "the labelled items" if focus is not drawn else "the items"
            outside = sum(1 for it in drawn if it["e"] < z0 or it["s"] > z1)
            caption = "zoom on %s: %s \u2026 %s (%s)%s; ranges and items reaching past it are clipped" % (
                what, fmt_ns(z0 - t0, signed=True), fmt_ns(z1 - t0, signed=True), fmt_ns(z1 - z0),
                ", %s outside" % plural(outside, "item") if outside else "")
            # The test's own work first: the whole test is mostly the fixture's set-up.
            drawings.insert(0, drawing(caption, zoom_svg, "timelines/%s-zoom.svg" % anchor))

    notes = notes_first + left_out_notes(model, stats)
    return fill("timeline", anchor=anchor, summary=timeline_summary(model), trace=trace, drawings=join(drawings, "\n"),
                clock=clock_line(tl, model), notes=join(fill("tl_note", text=note) for note in notes))


def left_out_notes(model: Dict[str, Any], stats: Dict[str, int]) -> List[str]:
    """What the whole-test drawing left out or drew as one shape, and why, under the drawing: the drawing's
    limits keep a page of many tests small, so the reader must see where it shows less than the file holds."""
    notes = []
    left_out = len(model["items"]) - len(model["drawn"])
    if left_out:
        why = ["at most %d items per test, the first by start time" % TL_MAX_ITEMS]
        if model["lanes_refused"]:
            # Lanes: a stream's kernels, and one for each of its copy directions.
            why.append("%s beyond the first %d not drawn" % (plural(model["lanes_refused"], "lane"), TL_MAX_LANES))
        if model["streams_refused"]:
            why.append("%s with nothing drawn" % plural(model["streams_refused"], "stream"))
        notes.append("%d of %d items not drawn (%s)" % (left_out, len(model["items"]), "; ".join(why)))
    if len(model["ranges"]) > TL_MAX_RANGES:
        notes.append("%d of %d NVTX ranges not drawn" % (len(model["ranges"]) - TL_MAX_RANGES, len(model["ranges"])))
    if len(model["host"]) > TL_MAX_HOST:
        notes.append("%d of %d host events not drawn" % (len(model["host"]) - TL_MAX_HOST, len(model["host"])))
    if stats["skipped"]:
        notes.append("%s not drawn (at most %d rows per stream, %d per test)"
                     % (plural(stats["skipped"], "block record"), TL_MAX_BLOCK_ROWS, TL_MAX_BLOCKS))
    if stats["merged"]:
        notes.append("%s drawn as one shape per kernel, without a tooltip each (kernels with more than %d blocks; "
                     "the kernel's tooltip sums them up, the observation file has every record)"
                     % (plural(stats["merged"], "block record"), TL_BLOCK_TIPS))
    if model["bad"]:
        notes.append("%s without a numeric start_ns ignored" % plural(model["bad"], "entry", "entries"))
    return notes
