"""Page rendering: one self-contained HTML page from the model of a run (model.build_model()). The page's
skeleton is reports/templates/page.html, with the style sheet and script it inlines (report.css, report.js);
this module fills it with the header (the run's facts and banners), the sections (sections.py) and the data
block, and makes the files beside it: each family's rows (sections.py, each row from test_row.py) and each
test's details (test_row.py). Markup lives in the templates; the code chooses which fragment to fill and
computes its values, which the templates escape (templates.py).
The page loads nothing from outside itself and the folders beside it (a Content-Security-Policy says so to
the browser), and its data is embedded as <script type="application/json" id="data">. The page holds the run's
summary and a line per family; a family's rows are a file beside it, families/<family>.js, which report.js
loads when the family is opened, and a test's details (the whole result, observed values, baseline
comparisons, timeline, block chart, and its data) a file per test, details/<ctest name>.js, loaded when its row
is opened: the page's size does not grow with the number of tests, however many or heavy.
Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .common import GENERATOR, GENERATOR_VERSION, Markup, bounded, fmt_shown, fmt_value, plural, slug
from .page_parts import environment_facts, facts_markup, run_fact, test_anchor
from .sections import (api_section, coverage_section, detail_lines, environment_section, families_section,
                       family_rows, instruments_section, tests_by_family, timelines_section, totals_section)
from .templates import EMPTY, fill, fill_page, join, template_text
from .block_chart import chart_digest
from .test_row import test_details
from .timeline import drawings_into, legend_css
from .timeline_model import timeline_without_blocks

# The page's size budget (docs/running.md), whatever the number of tests: the page names tests up to the bounds
# of sections.py (LISTED_TESTS, COVERAGE_NAMED), and holds a line per family and per catalog ID of the plans (the
# coverage table and the API table grow with the source tree's plans and the CUDA headers, not with the run).
# Each family's rows are a file beside the page (family_file), and each test's details (details_file), so a big
# run or a heavy test (a timeline, a block chart, many observed values) weighs on the page no more than a small
# one. The host test SizeBudget checks it on runs of up to 10,000 tests and on runs like the suite's.
PAGE_BUDGET = 1_000_000
# What the data block says of the files beside the page.
FILES_NOTE = ("the page names no test but those it lists: each family's tests are in the file families/<family>.js "
              "beside the page, a script calling streamcheckFamily() with one JSON object {family: the anchor of "
              "the family, html: its rows' markup, tests: each test's ctest_name and status, in the rows' order}; "
              "each test's details in details/<ctest name>.js, a script calling streamcheckDetails() with {row: the "
              "anchor of the test's row, html: its details' markup, test: its data, with its claims and plan_ids} "
              "(characters other than A-Z a-z 0-9 _ . - of a name as _)")


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
        out.append(fill("problems", count=plural(len(problems), "file"),
                        items=join(fill("li", text=p) for p in bounded(problems))))
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
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    if not isinstance(data, float):
        return data
    if data != data or data in (float("inf"), float("-inf")):
        return repr(data)
    return float(fmt_shown(data))


def embed_json(data: Any) -> str:
    """JSON that cannot end its <script> element: every "</" becomes "<\\/" (a valid JSON escape)."""
    text = json.dumps(finite(data), ensure_ascii=True, sort_keys=False, default=str, allow_nan=False,
                      separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def shared_device(tests: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The device facts every test of the run shares (the GPU's name, its timer tick), said once in
    runs[0].device; a test keeps the facts of its own (the clock offset it measured)."""
    devices = [t.get("device") for t in tests.values() if isinstance(t.get("device"), dict)]
    shared = dict(devices[0]) if devices else {}
    for device in devices[1:]:
        shared = {k: v for k, v in shared.items() if k in device and device[k] == v}
    return shared


def test_record(test: Dict[str, Any], run: Dict[str, Any], shared: Dict[str, Any]) -> Dict[str, Any]:
    """A test's data, for machines, in its details file: what the model has, less what is elsewhere. Block
    records stay in the observation file (the details carry their drawing and their counts), and so do timeline
    items beyond the ones drawn; the plan rows' sources are in the page's "coverage"; the device facts and the
    tracing every test shares are the page's runs[0]."""
    tracing = run["env"].get("tracing")

    def in_run(path: Any) -> Any:
        # A result file's path from the run folder (runs[0].dir), as the page's reader finds it wherever it is.
        try:
            return str(Path(path).relative_to(run["dir"])) if isinstance(path, str) else path
        except ValueError:
            return path

    timeline = timeline_without_blocks(test.get("timeline"))
    if isinstance(timeline, dict) and tracing is not None and timeline.get("tracing") == tracing:
        timeline = dict(timeline, tracing="as the run's (runs[0].env.tracing)")
    device = test.get("device")
    if isinstance(device, dict) and shared:
        device = {k: v for k, v in device.items() if k not in shared}
    return dict(test, block_chart=chart_digest(test.get("block_chart")), device=device,
                plan_rows=[{k: v for k, v in r.items() if k != "source"} for r in test.get("plan_rows") or []],
                timeline=timeline, xml_file=in_run(test.get("xml_file")),
                observation_file=in_run(test.get("observation_file")))


def family_path(family: str) -> str:
    """Where a family's rows are, from the page: its anchor without "f-" (report.js finds it so)."""
    return "families/%s.js" % slug(family)


def family_file(family: str, tests: List[Dict[str, Any]]) -> str:
    """A family's file: a script that hands the page the markup of the family's rows (sections.family_rows) and
    each test's name and status, as one JSON object: streamcheckFamily({"family": ..., "html": ..., "tests": ...});"""
    return ("// The tests of one family of a streamcheck report: its page runs this when the family is opened.\n"
            "streamcheckFamily(%s);\n" % embed_json({
                "family": "f-" + slug(family), "html": str(family_rows(tests)),
                "tests": [{"ctest_name": t["ctest_name"], "status": t["status"]} for t in tests]}))


def details_path(test: Dict[str, Any]) -> str:
    """Where a test's details are, from the page: its row's anchor without "t-" (report.js finds it so)."""
    return "details/%s.js" % slug(test["ctest_name"])


def details_file(test: Dict[str, Any], html: Markup, record: Dict[str, Any]) -> str:
    """A test's details file: a script that hands the page the markup of the test's details and its data
    (test_record) as one JSON object: streamcheckDetails({"row": ..., "html": ..., "test": ...});"""
    return ("// The details of one test of a streamcheck report: its page runs this when the test's row is opened.\n"
            "streamcheckDetails(%s);\n" % embed_json({"row": test_anchor(test), "html": str(html), "test": record}))


def coverage_data(coverage: Dict[str, Any]) -> Dict[str, Any]:
    """The coverage of catalog IDs for machines, without its lists of tests, which grow with the run (the tests
    a plan row names and their results, those of an ID no plan lists, those a plan of the suite's own tests
    misses): each test's record (its details file) has the IDs it claims and those its plan gives it (plan_ids).
    An ID's detail is as the page shows it (detail_lines)."""
    names = ("planned", "results", "missing", "tests", "unlisted")

    def entry(row: Dict[str, Any]) -> Dict[str, Any]:
        # The raw Tests cell of a plan row is its parsed "planned" names again.
        out = {k: v for k, v in row.items() if k != "tests_cell" and not (k in names and isinstance(v, (list, dict)))}
        if "detail" in row:
            out["detail"] = detail_lines(row["detail"])
        return out
    return dict(coverage, **{part: [entry(r) for r in coverage.get(part) or []]
                             for part in ("rows", "unplanned", "self_tested")})


def page_data(model: Dict[str, Any], source: Path) -> Dict[str, Any]:
    """The data block: what the page shows, for machines. The tests of each family are in its file, each
    test's data in its details file (FILES_NOTE)."""
    run = model["run"]
    return {
        "generator": {"name": GENERATOR, "version": GENERATOR_VERSION},
        "runs": [{"dir": run["dir"], "id": run["id"], "env": run["env"], "notes": run["notes"],
                  "device": shared_device(model["tests"])}],
        "problems": bounded(model["problems"]),
        "source": str(source),
        "totals": model["totals"],
        "coverage": coverage_data(model["coverage"]),
        # The plans' rows are in the coverage rows and in the plans themselves: their IDs are enough here.
        "plans": {family: dict({k: v for k, v in plan.items() if k != "rows"},
                               ids=[row.get("id") for row in plan.get("rows") or []])
                  if isinstance(plan, dict) else plan for family, plan in model["plans"].items()},
        "files": FILES_NOTE,
        "families": [{"family": family, "file": family_path(family), "tests": len(tests)}
                     for family, tests in tests_by_family(model).items()],
        "instruments": model["instruments"],
        "baseline": {k: v for k, v in model["baseline"].items() if k != "entries"},
    }


def render_report(model: Dict[str, Any], source: Path) -> Tuple[str, Dict[str, str]]:
    """The page of one run, and the files to write beside it (path from the page -> text): each family's rows
    (family_file), each test's details (details_file) and the drawings of its timeline and block chart, which
    its details show in frames."""
    files = {family_path(family): family_file(family, tests) for family, tests in tests_by_family(model).items()}
    drawings_into(files)
    try:
        shared = shared_device(model["tests"])
        for test in model["tests"].values():
            files[details_path(test)] = details_file(test, test_details(test, model["baseline"]),
                                                     test_record(test, model["run"], shared))
        return render_page(model, source, embed_json(page_data(model, source))), files
    finally:
        drawings_into(None)
