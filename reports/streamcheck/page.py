"""Page rendering: one self-contained HTML page from the model of a run (model.build_model()). The page's
skeleton is reports/templates/page.html, with the style sheet and script it inlines (report.css, report.js);
this module fills it with the header (the run's facts and banners), the sections (sections.py, each row of a
family table from test_row.py) and the data block. Markup lives in the templates; the code chooses which
fragment to fill and computes its values, which the templates escape (templates.py).
The page loads nothing from outside itself (a Content-Security-Policy says so to the browser), and its data
is embedded as <script type="application/json" id="data">. Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Dict, Optional

from .common import GENERATOR, GENERATOR_VERSION, MAX_EVIDENCE_LINES, Markup, fmt_shown, fmt_value, plural
from .page_parts import environment_facts, facts_markup, run_fact
from .sections import (api_section, coverage_section, environment_section, families_section, instruments_section,
                       timelines_section, totals_section)
from .templates import EMPTY, fill, fill_page, join, template_text
from .block_chart import chart_digest
from .timeline import drawings_into, legend_css
from .timeline_model import timeline_without_blocks

# The page's size budget (docs/running.md): on average at most PAGE_BUDGET_PER_TEST bytes for each
# test with a result, plus PAGE_BUDGET_FIXED for the page itself. What keeps it: a kernel's many blocks drawn as one
# shape, block charts of many blocks drawn as an image, no zoomed timeline when the first drawing is large, and a
# data block that keeps the first items of a timeline and counts the rest (timeline.py). The host test
# SizeBudget checks it on a run heavier than a full H100 run.
PAGE_BUDGET_PER_TEST = 48 * 1024
PAGE_BUDGET_FIXED = 128 * 1024


def baseline_fact(baseline: Dict[str, Any]) -> Markup:
    """The baseline file the run's source tree has, its schema and where its values come from; or why none."""
    if not baseline["path"]:
        return fill("muted_small", text=baseline["note"] or "none")
    provenance = baseline.get("provenance")
    return fill("baseline_file", path=baseline["path"],
                schema=fill("baseline_schema", version=baseline["version"]) if baseline["version"] else EMPTY,
                provenance=fill("muted_small_div", text="from " + ", ".join(
                    "%s %s" % (k, fmt_value(v)) for k, v in sorted(provenance.items())
                    if not isinstance(v, (dict, list)))) if isinstance(provenance, dict) else EMPTY)


def header_facts(model: Dict[str, Any], source: Path) -> Markup:
    """The facts that head the page: the run, its environment, where the plans and the baseline file are."""
    run = model["run"]
    facts = [("Run", run_fact(run))] + environment_facts(run["env"])
    facts.append(("Plans", fill("mono_small", text=str(source / "tests"))))
    facts.append(("Baseline", baseline_fact(model["baseline"])))
    return facts_markup(facts)


def banners(model: Dict[str, Any]) -> Markup:
    """The files that could not be read (the first MAX_EVIDENCE_LINES, the rest counted), the rows no baseline
    judged, a source tree at another commit than the run, then the run's notes."""
    out = []
    problems = model["problems"]
    if problems:
        shown = problems[:MAX_EVIDENCE_LINES]
        items = [fill("li", text=p) for p in shown]
        if len(problems) > len(shown):
            items.append(fill("li", text="%d more" % (len(problems) - len(shown))))
        out.append(fill("problems", count=plural(len(problems), "file"), items=join(items)))
    if model.get("unjudged_rows"):
        out.append(fill("banner", kind="warn", text="%s: this run proves its documented behaviors only."
                        % model["unjudged_rows"]))
    if model.get("source_mismatch"):
        out.append(fill("banner", kind="warn", text="The source tree: %s." % model["source_mismatch"]))
    out.extend(fill("banner", kind="warn", text=note) for note in model["run"]["notes"])
    return join(out, "\n")


def navigation(model: Dict[str, Any]) -> Markup:
    links = [("problems", "Problems")] if model["problems"] else []
    links += [("totals", "Totals"), ("coverage", "Coverage"), ("families", "Families"), ("timelines", "Timelines"),
              ("api", "API coverage"), ("instruments", "Instruments"), ("environment", "Environment & build")]
    return join(fill("nav_link", anchor=anchor, label=label) for anchor, label in links)


def render_page(model: Dict[str, Any], source: Path, data_json: str) -> str:
    """The page: page.html with the header, the sections in their order, the footer and the data block."""
    run = model["run"]
    title = "streamcheck report \u2014 %s" % run["id"]
    if model["totals"]["failed"]:
        title = "[%d FAILED] %s" % (model["totals"]["failed"], title)
    sections = [totals_section(model), coverage_section(model, source), families_section(model),
                timelines_section(model), api_section(model, source), instruments_section(model),
                environment_section(model)]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The style sheet and the script are files of the installation, and the data block is JSON made safe to
    # embed (embed_json): markup as they are, where anything else is escaped.
    return fill_page("page.html", title=title, css=Markup(template_text("report.css") + legend_css()),
                     heading="streamcheck report", facts=header_facts(model, source), banners=banners(model),
                     nav=navigation(model), sections=join(sections, "\n"),
                     footer="Generated by %s %s at %s from %s." % (GENERATOR, GENERATOR_VERSION, now, run["dir"]),
                     data=Markup(data_json), script=Markup(template_text("report.js")))


def finite(data: Any) -> Any:
    """The data with NaN and infinities as strings (JSON.parse rejects them as numbers), and every other float
    to the precision the page shows (six significant digits, one decimal from 100,000 on; the result files keep
    every digit)."""
    if isinstance(data, float) and (data != data or data in (float("inf"), float("-inf"))):
        return repr(data)
    if isinstance(data, float):
        return float(fmt_shown(data))
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def embed_json(data: Any) -> str:
    """JSON that cannot end its <script> element: every "</" becomes "<\\/" (a valid JSON escape)."""
    text = json.dumps(finite(data), ensure_ascii=True, sort_keys=False, default=str, allow_nan=False,
                      separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def page_data(model: Dict[str, Any], source: Path) -> Dict[str, Any]:
    """The data block: what the page shows, for machines. Block records stay in the observation files (the page
    carries their drawing and their counts), and so do timeline items beyond the ones drawn."""
    run = model["run"]
    tests = model["tests"]
    tracing = run["env"].get("tracing")

    def in_run(path: Any) -> Any:
        # A result file's path from the run folder (runs[0].dir), as the page's reader finds it wherever it is.
        try:
            return str(Path(path).relative_to(run["dir"])) if isinstance(path, str) else path
        except ValueError:
            return path

    def kept_timeline(tl: Any) -> Any:
        # Every test of a run traces the same way: the run's record says how, once.
        kept = timeline_without_blocks(tl)
        if isinstance(kept, dict) and tracing is not None and kept.get("tracing") == tracing:
            kept = dict(kept, tracing="as the run's (runs[0].env.tracing)")
        return kept

    # Device facts every test of the run shares (the GPU's name, its timer tick) are said once, in runs[0].device;
    # a test keeps the facts of its own (the clock offset it measured).
    devices = [tests[name].get("device") for name in tests if isinstance(tests[name].get("device"), dict)]
    shared = dict(devices[0]) if devices else {}
    for device in devices[1:]:
        shared = {k: v for k, v in shared.items() if k in device and device[k] == v}

    def own_device(device: Any) -> Any:
        return {k: v for k, v in device.items() if k not in shared} if isinstance(device, dict) and shared else device

    return {
        "generator": {"name": GENERATOR, "version": GENERATOR_VERSION},
        "runs": [{"dir": run["dir"], "id": run["id"], "env": run["env"], "notes": run["notes"], "device": shared}],
        "problems": model["problems"],
        "source": str(source),
        "totals": model["totals"],
        # The raw Tests cell of each plan row is its parsed "planned" names again.
        "coverage": dict(model["coverage"], rows=[{k: v for k, v in row.items() if k != "tests_cell"}
                                                  for row in model["coverage"]["rows"]]),
        # The plans' rows are in the coverage rows and in the plans themselves: their IDs are enough here.
        "plans": {family: dict({k: v for k, v in plan.items() if k != "rows"},
                               ids=[row.get("id") for row in plan.get("rows") or []])
                  if isinstance(plan, dict) else plan for family, plan in model["plans"].items()},
        # A test's plan rows name their IDs; the rows' sources are in "coverage".
        "tests": [dict(tests[name], block_chart=chart_digest(tests[name].get("block_chart")),
                       device=own_device(tests[name].get("device")),
                       plan_rows=[{k: v for k, v in r.items() if k != "source"}
                                  for r in tests[name].get("plan_rows") or []],
                       timeline=kept_timeline(tests[name].get("timeline")),
                       xml_file=in_run(tests[name].get("xml_file")),
                       observation_file=in_run(tests[name].get("observation_file"))) for name in sorted(tests)],
        "instruments": model["instruments"],
        "baseline": {k: v for k, v in model["baseline"].items() if k != "entries"},
    }


def render_report(model: Dict[str, Any], source: Path, drawing_files: Optional[Dict[str, str]] = None) -> str:
    """The page of one run. With drawing_files (a dict), the timelines' drawings are put there (path from the
    page -> SVG document) for the caller to write beside the page, which shows each in a frame."""
    drawings_into(drawing_files)
    try:
        return render_page(model, source, embed_json(page_data(model, source)))
    finally:
        drawings_into(None)
