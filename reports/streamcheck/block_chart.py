"""The block chart of the scheduling tests (observation "block_chart", schema 1.5): every block by SM and time,
coloured by its grid's priority, as vector shapes or, past BC_VECTOR_MAX blocks, as an image. Its frame and
legend come from the timeline's drawing helpers (timeline.py). Python 3.9+ standard library only.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .common import Markup, fmt_ns, fmt_value, plural
from .templates import EMPTY, fill, join
from .timeline import bar_path, drawing_file, legend_key

BC_WIDTH = 960          # drawing width in px
BC_MAX_HEIGHT = 560     # the SM axis is squeezed to this height
BC_VECTOR_MAX = 1500    # a chart with more blocks is drawn as an image (the page's size budget, README)
BC_HIGH = (192, 57, 43)   # colour of the highest priority
BC_LOW = (46, 134, 193)   # colour of the lowest priority
# Colours of the SM partitions (green contexts), in the chart's order: apart from the priority scale's red and blue.
BC_PARTITIONS = ("#27ae60", "#8e44ad", "#f39c12", "#16a085", "#7f8c8d", "#d35400")


def png_data_uri(width: int, height: int, colours: Sequence[str],
                 boxes: Iterable[Tuple[int, float, float, float, float]]) -> str:
    """A palette PNG (white background, colours[i - 1] for index i) with each (index, x0, y0, x1, y1) box
    filled, as a data: URI. Written with zlib and struct only."""
    pixels = [bytearray(width) for _ in range(height)]
    for index, x0, y0, x1, y1 in boxes:
        a, b = max(int(x0), 0), min(max(int(math.ceil(x1)), int(x0) + 1), width)
        top, bottom = max(int(y0), 0), min(max(int(math.ceil(y1)), int(y0) + 1), height)
        if a >= b:
            continue
        run = bytes([index]) * (b - a)
        for y in range(top, bottom):
            pixels[y][a:b] = run
    palette = bytearray(b"\xff\xff\xff")
    for colour in colours:
        palette += bytes.fromhex(colour.lstrip("#")[:6].ljust(6, "8"))
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)) +
           chunk(b"PLTE", bytes(palette)) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def bc_colour(priority: Any, least: Any, greatest: Any) -> str:
    """High priority red, low priority blue, levels between interpolated; grey when unknown."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (priority, least, greatest)):
        return "#888888"
    f = 0.0 if least == greatest else min(max((least - priority) / float(least - greatest), 0.0), 1.0)
    rgb = [int(round(lo + (hi - lo) * f)) for lo, hi in zip(BC_LOW, BC_HIGH)]
    return "#%02x%02x%02x" % tuple(rgb)


def chart_digest(chart: Any) -> Any:
    """What the embedded data keeps of a block chart: how many grids and records (null without a chart)."""
    if not isinstance(chart, dict):
        return None
    grids = chart.get("grids") if isinstance(chart.get("grids"), list) else []
    return {"grids": len(grids), "records": sum(len(g["records"]) for g in grids
                                                if isinstance(g, dict) and isinstance(g.get("records"), list)),
            "records_in": "the observation file"}


def chart_records(grids: Sequence[Dict[str, Any]]) -> Tuple[List[Tuple[int, float, float, int, Any]], int]:
    """The usable block records of the grids as (grid index, t0, t1, sm, max_gap), and how many were malformed
    (not a list of at least three finite numbers with t1 >= t0 >= 0)."""
    rows = []
    bad = 0
    for gi, g in enumerate(grids):
        for r in g.get("records", []) if isinstance(g.get("records"), list) else []:
            ok = (isinstance(r, list) and len(r) >= 3 and
                  all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in r[:3]) and
                  r[1] >= r[0] >= 0)
            if not ok:
                bad += 1
                continue
            gap = r[4] if len(r) >= 5 and isinstance(r[4], (int, float)) and not isinstance(r[4], bool) else 0
            rows.append((gi, float(r[0]), float(r[1]), int(r[2]), gap))
    return rows, bad


def place_blocks(rows: Sequence[Tuple[int, float, float, int, Any]]) -> Tuple[list, List[int], int]:
    """Each block's slot: within its SM, the lowest slot free at its start. Returns the blocks as
    (grid index, t0, t1, sm, slot, max_gap), the SMs in order, and the most slots any SM needed."""
    slots_of_sm: Dict[int, List[float]] = {}
    placed = []
    for gi, t0, t1, sm, gap in sorted(rows, key=lambda x: (x[3], x[1])):
        ends = slots_of_sm.setdefault(sm, [])
        slot = next((i for i, end in enumerate(ends) if end <= t0), len(ends))
        if slot == len(ends):
            ends.append(t1)
        else:
            ends[slot] = t1
        placed.append((gi, t0, t1, sm, slot, gap))
    return placed, sorted(slots_of_sm), max(len(v) for v in slots_of_sm.values())


def chart_partitions(chart: Dict[str, Any]) -> List[Tuple[str, Set[int], str]]:
    """The chart's SM partitions ("partitions": [{"label", "sms"}], written where grids ran in green contexts) as
    (label, SM ids, colour); an entry of the wrong shape is left out."""
    found = chart.get("partitions") if isinstance(chart.get("partitions"), list) else []
    out = []
    for p in (p for p in found if isinstance(p, dict) and isinstance(p.get("sms"), list)):
        sms = {sm for sm in p["sms"] if isinstance(sm, int) and not isinstance(sm, bool)}
        out.append((fmt_value(p.get("label")), sms, BC_PARTITIONS[len(out) % len(BC_PARTITIONS)]))
    return out


def partition_strips(partitions: Sequence[Tuple[str, Set[int], str]], sm_ids: Sequence[int], per_sm: int,
                     row_h: float, left: int, top: int) -> Markup:
    """A strip left of the plot beside each run of consecutive SM rows of one partition, in its colour."""
    runs: List[Tuple[int, int, int]] = []  # (partition, first row, rows)
    for row, sm in enumerate(sm_ids):
        k = next((k for k, (_, sms, _) in enumerate(partitions) if sm in sms), None)
        if k is None:
            continue
        if runs and runs[-1][0] == k and runs[-1][1] + runs[-1][2] == row:
            runs[-1] = (k, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((k, row, 1))
    return join(fill("bc_partition", x=left - 6, y="%.2f" % (top + first * per_sm * row_h),
                     height="%.2f" % (rows * per_sm * row_h), fill=partitions[k][2], tooltip=partitions[k][0])
                for k, first, rows in runs)


def grid_tooltip(g: Dict[str, Any], n_blocks: int) -> str:
    return "%s, priority %s, %s" % (fmt_value(g.get("label")), fmt_value(g.get("priority")), plural(n_blocks, "block"))


def block_chart_plot(grids: Sequence[Dict[str, Any]], paths: Dict[int, List[Tuple[float, float, float]]],
                     colours: Sequence[str], raster: bool, left: int, top: int, plot_h: int, bar_h: float) -> Markup:
    """The chart's bars: one path per grid; or, for a chart of many blocks (raster), one palette image of the plot
    (a pixel per time step and slot row), a few kB where the shapes would take a hundred; the legend names the
    colours, the observation file has every record."""
    if not raster:
        return join(fill("bc_grid", fill=colours[gi], d=bar_path(bars, bar_h),
                         tooltip=grid_tooltip(grids[gi], len(bars))) for gi, bars in paths.items())
    plot_w = BC_WIDTH - left - 8
    image = png_data_uri(plot_w, plot_h, colours, (
        (gi + 1, x0 - left, y - top, x1 - left, y - top + max(bar_h, 1.0))
        for gi, bars in paths.items() for y, x0, x1 in bars))
    return fill("bc_image", x=left, y=top, width=plot_w, height=plot_h, href=image,
                tooltip="; ".join(grid_tooltip(grids[gi], len(bars)) for gi, bars in paths.items()))


def block_chart_legend(grids: Sequence[Dict[str, Any]], placed: Sequence[tuple], colours: Sequence[str],
                       partitions: Sequence[Tuple[str, Set[int], str]] = ()) -> Markup:
    """A key per grid: its colour, label, priority, process (when the chart names one) and block count; then a key
    per SM partition: its colour, label and SM count."""
    keys = []
    for gi, g in enumerate(grids):
        keys.append(legend_key("%s (priority %s%s, %s)" % (
            fmt_value(g.get("label")), fmt_value(g.get("priority")),
            ", " + fmt_value(g["process"]) if g.get("process") else "",
            plural(sum(1 for p in placed if p[0] == gi), "block")), colours[gi], colours[gi]))
    for label, sms, colour in partitions:
        keys.append(legend_key("partition %s (%s)" % (label, plural(len(sms), "SM")), colour, colour))
    return join(keys)


def block_chart_svg(grids: Sequence[Dict[str, Any]], placed: Sequence[tuple], sm_ids: Sequence[int], per_sm: int,
                    colours: Sequence[str], partitions: Sequence[Tuple[str, Set[int], str]] = ()) -> Markup:
    """Every placed block as a bar: time across (from the first block), SM and slot down, the SM axis squeezed
    to BC_MAX_HEIGHT; a time axis of five ticks under it, the first and last SM named on the left, and beside the
    SM rows of each partition a strip in its colour."""
    sm_row = {sm: i for i, sm in enumerate(sm_ids)}
    n_rows = len(sm_ids) * per_sm
    row_h = max(min(4.0, BC_MAX_HEIGHT / float(n_rows)), 0.25)
    left, top = 46, 6
    height = int(top + n_rows * row_h + 22)
    t_end = max(t1 for _, _, t1, _, _, _ in placed) or 1.0
    xs = (BC_WIDTH - left - 8) / t_end
    # One shape per grid; a slot's blocks that follow each other within half a pixel are drawn joined, which
    # at this resolution looks the same and keeps a chart of thousands of blocks small.
    paths: Dict[int, List[Tuple[float, float, float]]] = {}
    for gi, t0, t1, sm, slot, gap in placed:
        y = round(top + (sm_row[sm] * per_sm + slot) * row_h, 2)
        x0 = left + t0 * xs
        paths.setdefault(gi, []).append((y, x0, x0 + max((t1 - t0) * xs, 0.5)))
    plot = join([partition_strips(partitions, sm_ids, per_sm, row_h, left, top),
                 block_chart_plot(grids, paths, colours, len(placed) > BC_VECTOR_MAX, left, top,
                                  max(int(math.ceil(n_rows * row_h)), 1), row_h * 0.9)])
    axis_y = top + n_rows * row_h + 2
    ticks = join(fill("bc_tick", x="%.1f" % (left + t * xs), y="%.1f" % (axis_y + 14), text=fmt_ns(t))
                 for t in (t_end * k / 4.0 for k in range(5)))
    return fill("bc_svg", width=BC_WIDTH, height=height, plot=plot, left=left, right=BC_WIDTH - 8,
                axis_y="%.1f" % axis_y, ticks=ticks, first_y=top + 10, first_sm=sm_ids[0],
                last_y="%.1f" % (axis_y - 2), last_sm=sm_ids[-1])


def block_chart_html(chart: Dict[str, Any], name: Optional[str] = None) -> Markup:
    """Every block of the test's grids as a bar: time across, SM (and slot within it) down, coloured by
    stream priority. Malformed rows are counted and left out. Where the page's drawings go beside it
    (drawings_into), the chart goes into the file `name` (from the page) and the page shows it in a frame."""
    grids = [g for g in chart.get("grids", []) if isinstance(g, dict)] if isinstance(chart.get("grids"), list) else []
    rows, bad = chart_records(grids)
    if not rows:
        return fill("muted_small_div", text="block chart: no usable block records%s" % (
            " (%s malformed)" % plural(bad, "row") if bad else ""))
    placed, sm_ids, per_sm = place_blocks(rows)
    least, greatest = chart.get("priority_least"), chart.get("priority_greatest")
    colours = [bc_colour(g.get("priority"), least, greatest) for g in grids]
    partitions = chart_partitions(chart)
    summary = "%s of %s, %s SMs, at most %d blocks at once on one SM (limit %s)" % (
        plural(len(placed), "block"), plural(len(grids), "grid"), len(sm_ids), per_sm,
        fmt_value(chart.get("max_blocks_per_sm", "\u2014")))
    notes = fill("tl_note", text="%s left out" % plural(bad, "malformed row")) if bad else EMPTY
    svg = block_chart_svg(grids, placed, sm_ids, per_sm, colours, partitions)
    size = drawing_file(svg, name) if name is not None else None
    if size is not None:
        svg = fill("drawing_frame", src=name, width=size["width"], height=size["height"], title="blocks")
    return fill("block_chart", summary=summary, legend=block_chart_legend(grids, placed, colours, partitions), svg=svg,
                notes=notes)
