"""Page rendering: one self-contained HTML page from the model of a run (model.build_model()). The page's
skeleton and its repeated pieces are templates (reports/templates/report.html, fragments.html, report.css,
report.js), filled with string.Template; this module computes what goes into them and escapes every value.
The page loads nothing from outside itself (a Content-Security-Policy says so to the browser), and its data
is embedded as <script type="application/json" id="data">. Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .common import (BASELINE_LABEL, COVERAGE_LABEL, COVERAGE_ORDER, GENERATOR, GENERATOR_VERSION,
                     MAX_EVIDENCE_LINES, MUTATION_KIND_TITLE, TEST_LABEL, TEST_ORDER, as_ns, breakable,
                     cuda_version, dig, flatten, fmt_duration, fmt_ns, fmt_value, h, inline_md, plural, slug)
from .model import is_unjudged, same_value
from .results import run_mode as results_run_mode
from .templates import fill, fill_page, template_text
from .timeline import (block_chart_html, chart_digest, timeline_anchor, timeline_html, timeline_model,
                       timeline_note, timeline_state, timeline_summary, timeline_without_blocks)

# The page's size budget (README, "Reading the results"): on average at most PAGE_BUDGET_PER_TEST bytes for each
# test with a result, plus PAGE_BUDGET_FIXED for the page itself. What keeps it: a kernel's many blocks drawn as one
# shape, block charts of many blocks drawn as an image, no zoomed timeline when the first drawing is large, and a
# data block that keeps the first items of a timeline and counts the rest (timeline.py). The host test
# SizeBudget checks it on a run heavier than a full H100 run.
PAGE_BUDGET_PER_TEST = 48 * 1024
PAGE_BUDGET_FIXED = 128 * 1024

# Failure text shown per failure at most (the XML file has all of it).
MAX_FAILURE_CHARS = 8000

def badge(status: str, label: Optional[str] = None, title: Optional[str] = None) -> str:
    text = label if label is not None else TEST_LABEL.get(status, COVERAGE_LABEL.get(status, status))
    extra = ' title="%s"' % h(title) if title else ""
    return '<span class="st st-%s"%s>%s</span>' % (h(slug(status)), extra, h(text))


def kv_list(values: Dict[str, Any]) -> str:
    if not values:
        return '<span class="muted">\u2014</span>'
    items = ['<span>%s<i>=</i>%s</span>' % (h(str(k)), h(v)) for k, v in values.items()]
    return '<div class="kvlist">%s</div>' % "".join(items)


def test_anchor(test: Dict[str, Any]) -> str:
    return "t-" + slug(test["ctest_name"])


def watchdog_text(entry: Dict[str, Any]) -> str:
    """One fired gate: "gate 2 holding s1: watchdog 2000 ms, waited 2.000 s; unexpected: ..."."""
    held = entry.get("held")
    waited = as_ns(entry.get("waited_ns"))
    text = "gate %s%s: watchdog %s ms%s" % (
        fmt_value(entry.get("gate")), " holding %s" % fmt_value(held) if held not in (None, "") else "",
        fmt_value(entry.get("watchdog_ms")), ", waited %s" % fmt_ns(waited) if waited is not None else "")
    if entry.get("expected") is True:
        return text + "; expected (a test of the watchdog itself)"
    return text + "; unexpected: the test fails, a check made while the gate was supposed to be closed proves nothing"


def watchdog_tags(test: Dict[str, Any]) -> List[str]:
    """Tags for the Result cell: fired watchdogs, unexpected ones (a failure) apart from expected ones."""
    tags = []
    fired = test["watchdog"]
    unexpected = [w for w in fired if w.get("expected") is not True]
    expected = [w for w in fired if w.get("expected") is True]
    for group, cls, label, title in (
            (unexpected, "watchdog", "watchdog fired (unexpected)",
             "a gate was not opened before its watchdog ended it: the test fails (gates listed below)"),
            (expected, "watchdog-expected", "watchdog fired (expected)",
             "a test of the watchdog itself: its firing is expected (gates listed below)")):
        if group:
            tags.append('<span class="tag %s" title="%s">%s%s</span>' % (
                cls, h(title), label, " \u00d7%d" % len(group) if len(group) > 1 else ""))
    if not fired and test["watchdog_summary"]:
        # XML only: the property counts the gates but does not say whether they were expected.
        tags.append('<span class="tag watchdog" title="from the GoogleTest XML; the observation file, which says '
                    'whether it was expected, is missing">watchdog: %s</span>' % h(test["watchdog_summary"]))
    return tags


def evidence_lists(test: Dict[str, Any]) -> List[str]:
    """The fired gates and the invalid gate checks of a test, one line each (at most MAX_EVIDENCE_LINES)."""
    out = []
    for title, lines, cls in (("watchdog fired", [watchdog_text(w) for w in test["watchdog"]], "watchdog"),
                              ("invalid checks", list(test["invalid_checks"]), "invalid")):
        if not lines:
            continue
        shown = lines[:MAX_EVIDENCE_LINES]
        more = len(lines) - len(shown)
        note = ""
        if cls == "invalid" and test["invalid_checks_from_xml"]:
            note = ' <span class="muted">(the last one, from the XML)</span>'
        out.append('<div class="evidence %s small"><b>%s (%d):</b>%s<ul>%s%s</ul></div>' % (
            cls, title, len(lines), note, "".join("<li>%s</li>" % h(line) for line in shown),
            "<li class=\"muted\">%d more in the observation file</li>" % more if more else ""))
    return out


def gpu_fact(env: Dict[str, Any]) -> str:
    """The GPU line of a run: name, capability, SMs, copy engines, UUID; or why there was none."""
    gpu = env.get("gpu")
    if not isinstance(gpu, dict):
        reason = env.get("gpu_unavailable_reason") or "no reason recorded"
        return "<b>no GPU:</b> %s" % h(reason)
    parts = [h(gpu.get("name") or "unnamed GPU")]
    if gpu.get("compute_capability") is not None:
        parts.append("CC %s" % h(gpu.get("compute_capability")))
    if gpu.get("arch"):
        parts.append(h(gpu.get("arch")))
    if gpu.get("sm_count") is not None:
        parts.append("%s SMs" % h(gpu.get("sm_count")))
    if gpu.get("async_engine_count") is not None:
        parts.append("%s copy engines" % h(gpu.get("async_engine_count")))
    if gpu.get("concurrent_kernels") is not None:
        parts.append("concurrent kernels %s" % h(gpu.get("concurrent_kernels")))
    text = " \u00b7 ".join(parts)
    if gpu.get("uuid"):
        text += ' <span class="muted small mono">%s</span>' % h(gpu.get("uuid"))
    return text


def commit_fact(env: Dict[str, Any]) -> str:
    commit = dig(env, "streamcheck", "commit")
    version = dig(env, "streamcheck", "version")
    text = '<span class="mono" title="%s">%s</span>' % (h(commit or ""), h(str(commit)[:12] if commit else "unknown"))
    if dig(env, "streamcheck", "dirty") is True:
        text += ' <span class="st st-failed" title="uncommitted changes in the source tree">dirty</span>'
    if version:
        text += ' <span class="muted">streamcheck %s</span>' % h(version)
    return text


def run_fact(run: Dict[str, Any]) -> str:
    started = dig(run["env"], "run", "started_utc")
    finished = dig(run["env"], "run", "finished_utc")
    return '<span class="mono">%s</span> <span class="muted small">%s \u2192 %s</span> %s mode' % (
        h(run["id"]), h(started or "?"), h(finished or "not finished"), h(results_run_mode(run["env"])))


def environment_facts(env: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(term, markup) of the facts every page heads with: GPU, CUDA, commit, tick, priorities, tracing."""
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else None
    facts = [("GPU", gpu_fact(env)),
             ("CUDA", "driver %s \u00b7 runtime %s" % (h(cuda_version(dig(env, "cuda", "driver_version"))),
                                                  h(cuda_version(dig(env, "cuda", "runtime_version"))))),
             ("Commit", commit_fact(env))]
    tick = dig(gpu, "timer_tick_ns")
    facts.append(("Timer tick", h("%s ns" % fmt_value(tick)) if tick is not None else "\u2014"))
    least, greatest = dig(gpu, "priority_range", "least"), dig(gpu, "priority_range", "greatest")
    if least is not None or greatest is not None:
        prio = "least %s / greatest %s" % (h(least), h(greatest))
        if isinstance(least, int) and isinstance(greatest, int):
            prio += ' <span class="muted">(%s)</span>' % plural(least - greatest + 1, "level")
    else:
        prio = "\u2014"
    facts.append(("Priority range", prio))
    tracing = env.get("tracing") or {}
    reason = tracing.get("reason")
    facts.append(("Tracing", "<b>%s</b>%s" % ("on" if tracing.get("enabled") is True else "off",
                                             " \u2014 %s" % h(reason) if reason else "")))
    return facts


def kv_table(runs: Sequence[Dict[str, Any]], title: str, rows: List[Tuple[str, List[Any]]],
             unset_label: str = "null") -> str:
    """Keys and their values, one column per run; with several runs, rows whose values differ are marked."""
    if not rows:
        return '<div><h3>%s</h3><p class="muted">not recorded</p></div>' % h(title)
    multi = len(runs) > 1
    head = "".join("<th>%s</th>" % h(r["id"]) for r in runs) if multi else "<th>Value</th>"
    lines = []
    for key, values in rows:
        differs = multi and len({fmt_value(v) for v in values}) > 1
        cells = "".join("<td class='mono'>%s</td>" % ('<span class="unset">%s</span>' % h(unset_label)
                                                      if v is None else h(v)) for v in values)
        lines.append("<tr%s><td class='mono'>%s</td>%s</tr>" % (' class="diff-row"' if differs else "", h(key), cells))
    return fill("kv_table", title=h(title), head=head, rows="".join(lines))


def section_rows(runs: Sequence[Dict[str, Any]], key: str) -> List[Tuple[str, List[Any]]]:
    """The dotted keys of env.json's section in any of the runs, with each run's value (None: absent)."""
    flat = [dict(flatten(r["env"].get(key) if isinstance(r["env"].get(key), dict) else {})) for r in runs]
    keys: List[str] = []
    for f in flat:
        keys.extend(k for k in f if k not in keys)
    return [(k, [f.get(k) for f in flat]) for k in keys]


def environment_tables(runs: Sequence[Dict[str, Any]]) -> str:
    """Every section of env.json as a table, one column per run."""
    out = []
    variables = section_rows(runs, "environment")
    variables.sort(key=lambda kv: (all(v is None for v in kv[1]), kv[0]))
    out.append(kv_table(runs, "Environment variables", variables, unset_label="unset"))
    out.append(kv_table(runs, "Build", section_rows(runs, "build")))
    out.append(kv_table(runs, "streamcheck", section_rows(runs, "streamcheck")))
    cuda_rows = [(k, [cuda_version(v) if isinstance(v, int) else v for v in vals])
                 for k, vals in section_rows(runs, "cuda")]
    cuda_rows += [("%s (raw)" % k, vals) for k, vals in section_rows(runs, "cuda")]
    out.append(kv_table(runs, "CUDA", cuda_rows))
    out.append(kv_table(runs, "Host", section_rows(runs, "host")))
    out.append(kv_table(runs, "Tracing", section_rows(runs, "tracing")))
    gpu_rows = section_rows(runs, "gpu")
    if any(not isinstance(r["env"].get("gpu"), dict) for r in runs):
        gpu_rows.insert(0, ("unavailable_reason", [r["env"].get("gpu_unavailable_reason") for r in runs]))
    out.append(kv_table(runs, "GPU", gpu_rows))
    out.append(kv_table(runs, "Run", section_rows(runs, "run") + [("folder", [r["dir"] for r in runs])]))
    return "\n".join(out)


def facts_markup(facts: Sequence[Tuple[str, str]]) -> str:
    return "".join(fill("fact", term=h(term), value=value, cls="") for term, value in facts)


class Page:
    def __init__(self, model: Dict[str, Any], source: Path):
        self.run = model["run"]
        self.runs = [self.run]
        self.env = self.run["env"]
        self.tests = model["tests"]
        self.instruments = model["instruments"]
        self.coverage = model["coverage"]
        self.totals = model["totals"]
        self.source = source
        self.plans = model["plans"]
        self.problems = model["problems"]
        self.baseline = model["baseline"]
        self.out: List[str] = []

    def w(self, *parts: str) -> None:
        self.out.extend(parts)

    def captured(self, section) -> str:
        """What a section method writes, as one string."""
        self.out = []
        section()
        text = "".join(self.out)
        self.out = []
        return text

    # (1) header ---------------------------------------------------------------------------------
    def facts(self) -> str:
        facts = [("Run", run_fact(self.run))] + environment_facts(self.env)
        facts.append(("Plans", '<span class="mono small">%s</span>' % h(str(self.source / "tests"))))
        if self.baseline["path"]:
            text = '<span class="mono small">%s</span>%s' % (
                h(self.baseline["path"]), ' <span class="muted small">schema %s</span>' % h(self.baseline["version"])
                if self.baseline["version"] else "")
            provenance = self.baseline.get("provenance")
            if isinstance(provenance, dict):
                text += '<div class="muted small">from %s</div>' % h(", ".join(
                    "%s %s" % (k, fmt_value(v)) for k, v in sorted(provenance.items()) if not isinstance(v, (dict, list))))
            facts.append(("Baseline", text))
        else:
            facts.append(("Baseline", '<span class="muted small">%s</span>' % h(self.baseline["note"] or "none")))
        return facts_markup(facts)

    def banners(self) -> str:
        out = []
        if self.problems:
            shown = self.problems[:MAX_EVIDENCE_LINES]
            items = "".join("<li>%s</li>" % h(p) for p in shown)
            if len(self.problems) > len(shown):
                items += "<li>%d more</li>" % (len(self.problems) - len(shown))
            out.append(fill("problems", count=h(plural(len(self.problems), "file")), items=items))
        for note in self.run["notes"]:
            out.append(fill("banner", kind="warn", text=h(note)))
        return "\n".join(out)

    # (2) totals ---------------------------------------------------------------------------------
    def totals_section(self) -> None:
        t = self.totals
        self.w('<section id="totals"><h2>Totals</h2>')
        failed = sorted((x for x in self.tests.values() if x["status"] == "failed"), key=lambda x: x["ctest_name"])
        if failed:
            self.w('<div class="banner fail">\u2717 %s FAILED<ul>' % plural(len(failed), "test"))
            for x in failed:
                self.w('<li><a href="#%s">%s</a></li>' % (h(test_anchor(x)), h(x["ctest_name"])))
            self.w("</ul></div>")
        elif t["tests"] == t["notrun"]:
            self.w('<div class="banner warn">No test produced a result in %s%s.</div>'
                   % ("these runs" if len(self.runs) > 1 else "this run",
                      " (%s not run)" % plural(t["notrun"], "planned test") if t["notrun"] else ""))
        else:
            extra = ""
            if t["skipped"] or t["notrun"]:
                extra = " (%d of %d skipped%s)" % (t["skipped"], t["tests"],
                                                  ", %d not run" % t["notrun"] if t["notrun"] else "")
            self.w('<div class="banner %s">\u2713 No test failed%s</div>' % ("warn" if t["passed"] == 0 else "ok",
                                                                           h(extra)))
        self.w('<div class="counters">')
        self.w('<div class="counter"><b>%d</b>tests</div>' % t["tests"])
        unjudged = sum(1 for x in self.tests.values() if is_unjudged(x))
        for key, label in (("passed", "passed"), ("failed", "failed"), ("skipped", "skipped"), ("notrun", "not run")):
            extra = '<div class="small">%d not judged: no baseline</div>' % unjudged if key == "skipped" and unjudged \
                else ""
            self.w('<div class="counter %s"><b>%d</b>%s%s</div>' % (key, t[key], label, extra))
        self.w("</div>")
        reasons: Dict[str, int] = {}
        for x in self.tests.values():
            if x["status"] == "skipped":
                # The baseline rule's messages list the rows, so they differ from test to test: one line for all.
                key = "not judged: no baseline (observed values recorded, no baseline file or entry)" \
                    if is_unjudged(x) else x["skip_reason"] or "(no reason given)"
                reasons[key] = reasons.get(key, 0) + 1
        if reasons:
            self.w("<table class='narrow'><tr><th>Skip reason</th><th>Tests</th></tr>")
            for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                self.w("<tr><td>%s</td><td>%d</td></tr>" % (h(reason), n))
            self.w("</table>")
        self.w("</section>")

    # (3) coverage -------------------------------------------------------------------------------
    def coverage_section(self) -> None:
        cov = self.coverage
        self.w('<section id="coverage"><h2>Coverage by catalog ID</h2>')
        counts = cov["counts"]
        if cov["rows"]:
            self.w("<p>%s</p>" % " ".join("%s %d" % (badge(s), counts[s]) for s in COVERAGE_ORDER if counts[s]))
            with_claim = any(row["claim"] for row in cov["rows"])
            columns = 7 if with_claim else 6
            self.w('<div class="table-wrap"><table class="coverage"><colgroup><col style="width:96px">'
                   '<col style="width:104px">%s<col style="width:%s"><col style="width:30%%">'
                   '<col style="width:136px"><col></colgroup><tr><th>ID</th><th>Kind</th>%s<th>Source</th>'
                   '<th>Tests</th><th>Status</th><th>Detail</th></tr>'
                   % ('<col style="width:16%">' if with_claim else "", "16%" if with_claim else "22%",
                      "<th>Claim</th>" if with_claim else ""))
            family = None
            for row in sorted(cov["rows"], key=lambda r: r["family"]):  # stable: plan order within a family
                if row["family"] != family:
                    family = row["family"]
                    plan = self.plans.get(family) or {}
                    self.w('<tr class="group"><td colspan="%d"><a href="#f-%s"><b>%s</b></a> '
                           '<span class="muted small">%s</span></td></tr>'
                           % (columns, h(slug(family)), h(family), h(plan.get("path") or "")))
                cls = ' class="row-failed"' if row["status"] == "fail" else ""
                self.w('<tr data-status="%s"%s id="id-%s">' % (h(row["status"]), cls, h(slug(row["id"]))))
                self.w('<td class="mono id"><b>%s</b></td><td>%s</td>' % (h(row["id"]), h(row["kind"] or "\u2014")))
                if with_claim:
                    self.w('<td class="small">%s</td>' % inline_md(row["claim"]))
                self.w('<td class="small">%s</td>' % inline_md(row["source"]))
                self.w("<td>%s</td>" % self.planned_tests_cell(row))
                self.w("<td>%s</td><td class='small'>%s</td></tr>" % (
                    badge(row["status"]), "<br>".join(h(d) for d in row["detail"])))
            self.w("</table></div>")
        else:
            self.w('<p class="muted">No test plan with a plan table was found under %s.</p>'
                   % h(str(self.source / "tests")))
        if cov["no_plan"]:
            self.w("<h3>Families without a plan</h3>")
            self.w("<table class='narrow'><tr><th>Family</th><th>Status</th><th>Tests run</th><th>Why</th></tr>")
            for entry in cov["no_plan"]:
                self.w('<tr><td><a href="#f-%s">%s</a></td><td>%s</td><td>%d</td><td class="small">%s</td></tr>' % (
                    h(slug(entry["family"])), h(entry["family"]), badge("noplan", "no plan"), entry["tests"],
                    h(entry["note"])))
            self.w("</table>")
        if cov.get("self_tested"):
            self.w("<h3>Families without catalog IDs</h3>")
            self.w('<p class="muted small">Their plans list tests of the suite itself (a table headed '
                   '<code>| Test |</code>), not catalog behaviors.</p>')
            self.w("<table class='narrow'><tr><th>Family</th><th>Plan entries</th><th>Tests run</th>"
                   "<th>Failed</th><th>Detail</th></tr>")
            for entry in cov["self_tested"]:
                detail = []
                if entry["missing"]:
                    detail.append("listed but no result: " + ", ".join(entry["missing"]))
                if entry["unlisted"]:
                    detail.append("ran but not listed: " + ", ".join(entry["unlisted"]))
                self.w('<tr><td><a href="#f-%s">%s</a></td><td>%d</td><td>%d</td><td>%d</td><td class="small">%s</td>'
                       '</tr>' % (h(slug(entry["family"])), h(entry["family"]), entry["planned"], entry["tests"],
                                  entry["failed"], h("; ".join(detail)) or "\u2014"))
            self.w("</table>")
        if cov["unplanned"]:
            self.w("<h3>IDs claimed by tests but absent from every plan</h3>")
            self.w("<table><tr><th>ID</th><th>Family</th><th>Kind</th><th>Tests</th><th>Status</th>"
                   "<th>Detail</th></tr>")
            for row in cov["unplanned"]:
                links = "<br>".join(self.test_link(self.tests[name]) for name in row["tests"])
                self.w('<tr data-status="%s"><td class="mono"><b>%s</b></td><td>%s</td><td>%s</td><td>%s</td>'
                       '<td>%s</td><td class="small">%s</td></tr>' % (
                           h(row["status"]), h(row["id"]), h(row["family"]), h(row["kind"] or "\u2014"), links,
                           badge(row["status"]), "<br>".join(h(d) for d in row["detail"])))
            self.w("</table>")
        self.w("</section>")

    def test_link(self, test: Dict[str, Any], show_status: bool = True) -> str:
        label = '<a href="#%s" class="mono">%s</a>' % (h(test_anchor(test)), breakable(test["gtest_name"]))
        if test["variant"]:
            label += '<span class="tag">%s</span>' % h(test["variant"])
        if show_status:
            label += " " + badge(test["status"])
        return label

    def planned_tests_cell(self, row: Dict[str, Any]) -> str:
        if not row["planned"]:
            return '<span class="muted">\u2014</span>'
        lines = []
        for name in row["planned"]:
            found = [self.tests[c] for c in row["results"].get(name, []) if c in self.tests]
            if not found:
                lines.append('<code>%s</code> %s' % (breakable(name), badge("no-result")))
                continue
            chips = []
            for t in found:
                if t.get("planned_only"):
                    chips.append('<a href="#%s">%s</a>' % (h(test_anchor(t)), badge("no-result", "no result")))
                    continue
                label = t["variant"] or TEST_LABEL[t["status"]]
                if t["variant"]:
                    label = "%s: %s" % (t["variant"], TEST_LABEL[t["status"]])
                chips.append('<a href="#%s">%s</a>' % (h(test_anchor(t)), badge(t["status"], label, t["ctest_name"])))
            lines.append("<code>%s</code> %s" % (breakable(name), " ".join(chips)))
        return "<br>".join(lines)

    # (4) families -------------------------------------------------------------------------------
    def families_section(self) -> None:
        self.w('<section id="families"><h2>Results by family</h2>')
        self.w(fill("filters"))
        by_family: Dict[str, List[Dict[str, Any]]] = {}
        for t in self.tests.values():
            by_family.setdefault(t["family"], []).append(t)
        if not by_family:
            self.w('<p class="muted">No test results.</p>')
        for family in sorted(by_family):
            tests = sorted(by_family[family], key=lambda t: (TEST_ORDER[t["status"]], t["gtest_name"], t["variant"]))
            counts = {s: sum(1 for t in tests if t["status"] == s) for s in TEST_ORDER}
            summary = " ".join(badge(s, "%d %s" % (counts[s], TEST_LABEL[s])) for s in TEST_ORDER if counts[s])
            plan = self.plans.get(family)
            if plan and plan["rows"] is not None:
                plan_note = "plan: %s" % plural(len(plan["rows"]), "ID")
            elif plan and plan.get("self_tests") is not None:
                plan_note = "plan: %s, no catalog IDs" % plural(len(plan["self_tests"]), "listed test")
            else:
                plan_note = "no plan"
            variants = sorted({t["variant"] for t in tests if t["variant"]})
            variant_note = (" \u00b7 variants: %s" % ", ".join(variants)) if variants else ""
            # Fixed layout; the Test column takes what the others leave, more when a family has no
            # observed values or baseline comparisons.
            self.w(fill("family", anchor=h(slug(family)), family=h(family), summary=summary,
                        note="%s \u00b7 %s%s" % (plural(len(tests), "test"), h(plan_note), h(variant_note)),
                        observed_width="12%" if any(t["observations"] for t in tests) else "100px",
                        baseline_width="16%" if any(t["baseline"] for t in tests) else "100px",
                        rows="".join(self.test_row(t) for t in tests)))
        self.w("</section>")

    def test_row(self, t: Dict[str, Any]) -> str:
        """The test's row, and under it, rows of their own for its timeline and its block chart."""
        if is_unjudged(t):
            status = badge("unjudged", "not judged", "skipped: its observed values have no baseline, "
                                                     "so they were recorded but not judged")
        else:
            status = badge(t["status"])
        name = '<span class="mono" title="%s">%s</span>' % (h(t["ctest_name"]), breakable(t["gtest_name"]))
        if t["variant"]:
            name += '<span class="tag" title="ctest prefix %s.%s.">%s</span>' % (h(t["family"]), h(t["variant"]),
                                                                               h(t["variant"]))
        if t["claims"]:
            ids = "<br>".join('<a href="#id-%s" class="mono">%s</a>' % (h(slug(str(c.get("id")))), h(c.get("id")))
                              for c in t["claims"])
            kinds = "<br>".join(h(c.get("kind") or "\u2014") for c in t["claims"])
            sources = "<br>".join(h(c.get("source") or "\u2014") for c in t["claims"])
        elif t["plan_rows"]:
            # No claim recorded (e.g. skipped before the test body ran): show what the plan says.
            plan_note = ' <span class="muted small">(plan)</span>'
            ids = "<br>".join('<a href="#id-%s" class="mono">%s</a>%s' % (h(slug(r["id"])), h(r["id"]), plan_note)
                              for r in t["plan_rows"])
            kinds = "<br>".join(h(r["kind"] or "\u2014") for r in t["plan_rows"])
            sources = "<br>".join(inline_md(r["source"]) or "\u2014" for r in t["plan_rows"])
        else:
            ids = kinds = sources = '<span class="muted">\u2014</span>'
        duration = h(fmt_duration(t["duration_ms"]))
        if t["setup_ms"] is not None:
            duration += '<div class="muted" title="fixture set-up (once per process, and under ctest every test is a process: ' \
                        'CUDA context, kernel loading, timer calibration)">set-up %s</div>' % h(fmt_duration(t["setup_ms"]))

        result = watchdog_tags(t)
        if t["mutation"]:
            kind = t["mutation_kind"]
            title = MUTATION_KIND_TITLE.get(kind) if isinstance(kind, str) else None
            result.append('<span class="tag mutation"%s>mutation: %s%s</span>' % (
                ' title="%s"' % h(title) if title else "", h(t["mutation"]), " (%s)" % h(kind) if kind else ""))
        if is_unjudged(t):
            result.append("<div><b>not judged: no baseline</b> <span class=\"small\">(skipped)</span></div>"
                          "<div class=\"small\">%s</div>" % h(t["skip_reason"]))
            if t["skip_location"]:
                result.append('<div class="muted small mono">%s</div>' % h(t["skip_location"]))
        elif t["status"] == "skipped":
            result.append("<div><b>skipped:</b> %s</div>" % h(t["skip_reason"] or "(no reason given)"))
            if t["skip_location"]:
                result.append('<div class="muted small mono">%s</div>' % h(t["skip_location"]))
        for failure in t["failures"]:
            text = failure if len(failure) <= MAX_FAILURE_CHARS else failure[:MAX_FAILURE_CHARS] + \
                "\n... (%d more characters in the XML file)" % (len(failure) - MAX_FAILURE_CHARS)
            result.append("<pre>%s</pre>" % h(text))
        result.extend(evidence_lists(t))
        for note in t["notes"]:
            result.append('<div class="muted small">%s</div>' % h(note))
        tl_note = timeline_note(t)
        if tl_note:
            result.append('<div class="muted small">%s</div>' % h(tl_note))
        claim_ids = sorted({str(c.get("id")) for c in t["claims"]})
        rows = [fill("test_row", anchor=h(test_anchor(t)), status=h(t["status"]),
                     cls=' class="row-failed"' if t["status"] == "failed" else "", badge=status, name=name, ids=ids,
                     kinds=kinds, sources=sources, duration=duration,
                     result="".join(result) or '<span class="muted">\u2014</span>',
                     observed=kv_list(t["observations"]),
                     baseline=self.baseline_list(t["baseline"], claim_ids, self.baseline))]
        if timeline_state(t) == "drawn":
            # The drawing takes the table's whole width, in a row of its own under the test's row.
            rows.append(fill("wide_row", content=timeline_html(t["timeline"], timeline_anchor(t))))
        if t.get("block_chart"):
            rows.append(fill("wide_row", content=block_chart_html(t["block_chart"])))
        return "".join(rows)

    @staticmethod
    def baseline_list(entries: List[Dict[str, Any]], claim_ids: Sequence[str],
                      known: Optional[Dict[str, Any]] = None) -> str:
        """One line per baseline comparison: status, key, observed, expected, gating, detail. What the row does
        not carry comes from the source tree's baseline file (known): why the value is gating or not and where
        it comes from (hover), whether a driver may flip it, a finding, and an expected value changed since."""
        if not entries:
            return '<span class="muted">\u2014</span>'
        single = len(claim_ids) == 1 and all(str(e.get("id")) in claim_ids for e in entries)
        file_entries = (known or {}).get("entries") or {}
        file_name = os.path.basename((known or {}).get("path") or "") or "the baseline file"
        out = []
        for e in entries:
            status = str(e.get("status"))
            entry = dig(file_entries, str(e.get("id")), str(e.get("key")))
            entry = entry if isinstance(entry, dict) else {}
            key = h(e.get("key")) if single else "%s/%s" % (h(e.get("id")), h(e.get("key")))
            about = []
            if isinstance(entry.get("why"), str) and entry["why"]:
                about.append("why: %s" % entry["why"])
            if isinstance(entry.get("driver_may_flip"), bool):
                about.append("driver may flip: %s" % ("yes" if entry["driver_may_flip"] else "no"))
            parts = ['<span class="mono%s"%s>%s</span>' % (" why" if about else "", ' title="%s"' % h(
                "%s (%s)\n%s" % (e.get("key"), file_name, "\n".join(about))) if about else "", key)]
            if "observed" in e:
                parts.append('= <span class="mono">%s</span>' % h(e["observed"]))
            facts = []
            if "expected" in e:
                facts.append('expected <span class="mono">%s</span>' % h(e["expected"]))
            gating = e.get("gating")
            reason = e.get("gating_reason") if isinstance(e.get("gating_reason"), str) and e.get("gating_reason") \
                else entry.get("gating_reason") if isinstance(entry.get("gating_reason"), str) else None
            if gating is not None:
                word = "gating" if gating is True else "not gating" if gating is False else "gating %s" % h(gating)
                facts.append('<span class="why" title="%s">%s</span>' % (h(reason), word) if reason else word)
            if entry.get("driver_may_flip") is True:
                facts.append('<span class="why" title="a driver update may legitimately change this value">'
                             'driver may flip</span>')
            if facts:
                parts.append('<span class="muted">(%s)</span>' % ", ".join(facts))
            if isinstance(entry.get("finding"), str) and entry["finding"]:
                parts.append('<span class="tag finding" title="%s">finding</span>' % h(entry["finding"]))
            line = "%s %s" % (badge(status, BASELINE_LABEL.get(status, status)), " ".join(parts))
            if isinstance(e.get("detail"), str) and e.get("detail"):
                line += '<div class="muted small">%s</div>' % h(e["detail"])
            if "expected" in entry:
                # The row was compared with the file of the run's source tree; this file may be newer.
                if "expected" in e:
                    said = None if same_value(entry["expected"], e["expected"]) else "now expects"
                elif status in ("no-baseline", "no-entry", "no-baseline-dir"):
                    said = "now has an entry: expected"
                else:
                    said = "expects"  # a row from the XML, which records the status only
                if said:
                    line += '<div class="muted small">%s in the source tree %s <span class="mono">%s</span></div>' % (
                        h(file_name), said, h(entry["expected"]))
            out.append('<div class="bl">%s</div>' % line)
        return "".join(out)

    # (4b) timelines -----------------------------------------------------------------------------
    def timelines_section(self) -> None:
        self.w('<section id="timelines"><h2>Timelines</h2>')
        tests = sorted(self.tests.values(), key=lambda t: t["ctest_name"])
        states: Dict[str, List[Dict[str, Any]]] = {}
        for t in tests:
            states.setdefault(timeline_state(t), []).append(t)
        drawn = states.get("drawn", [])
        models = {t["ctest_name"]: timeline_model(t["timeline"]) for t in drawn}
        with_items = [t for t in drawn if models[t["ctest_name"]]["items"]]
        ranges_only = [t for t in drawn if not models[t["ctest_name"]]["items"]]
        if drawn:
            self.w('<p class="small muted">Each drawing is under its test\'s row in the family tables, collapsed; '
                   'the links open it.</p>')
        if with_items:
            self.w("<table class='narrow'><tr><th>Test</th><th>Recorded</th><th>Items' extent</th></tr>")
            for t in with_items:
                model = models[t["ctest_name"]]
                extent = fmt_ns(max(it["e"] for it in model["items"]) - min(it["s"] for it in model["items"]))
                self.w('<tr><td>%s %s</td><td class="small">%s</td><td class="small">%s</td></tr>' % (
                    self.timeline_link(t), badge(t["status"]), h(timeline_summary(model)), h(extent)))
            self.w("</table>")
        if ranges_only:
            self.w('<p class="small">NVTX ranges only (%d): %s</p>' % (
                len(ranges_only), ", ".join(self.timeline_link(t) for t in ranges_only)))
        if not drawn:
            self.w('<p class="muted">No test recorded a timeline (observation files of schema 1.1 with tracing '
                   'on).</p>')
        others = []
        if states.get("empty"):
            others.append("%s traced with nothing recorded" % plural(len(states["empty"]), "test"))
        if states.get("off"):
            reasons = sorted({str(dig(t["timeline"], "tracing", "reason") or "no reason given") for t in states["off"]})
            others.append("%s with tracing off (%s)" % (plural(len(states["off"]), "test"), "; ".join(reasons)))
        if states.get("none"):
            others.append("%s without a timeline record" % plural(len(states["none"]), "test"))
        if others:
            self.w('<p class="small muted">%s.</p>' % h("; ".join(others)))
        self.w("</section>")

    @staticmethod
    def timeline_link(test: Dict[str, Any]) -> str:
        label = '<a href="#%s" class="mono">%s</a>' % (h(timeline_anchor(test)), breakable(test["gtest_name"]))
        if test["variant"]:
            label += '<span class="tag">%s</span>' % h(test["variant"])
        return label

    # (5) instruments ----------------------------------------------------------------------------
    def instruments_section(self) -> None:
        self.w('<section id="instruments"><h2>Instruments</h2>')
        if not self.instruments:
            self.w('<p class="muted">No instrument records (they are written by the GPU instrument tests).</p>')
        else:
            self.w("<table><tr><th>ID</th><th>Test</th><th>Figures</th></tr>")
            for ident in sorted(self.instruments):
                record = self.instruments[ident]
                test_name = record.get("test")
                test = self.tests.get(test_name) if isinstance(test_name, str) else None
                test_cell = self.test_link(test) if test else h(test_name or "\u2014")
                figures = record.get("figures") if isinstance(record.get("figures"), dict) else {}
                self.w('<tr><td class="mono"><b>%s</b></td><td>%s</td><td>%s</td></tr>' % (
                    h(ident), test_cell, kv_list(figures)))
            self.w("</table>")
        self.w("</section>")

    # (6) environment ----------------------------------------------------------------------------
    def environment_section(self) -> None:
        self.w('<section id="environment"><h2>Environment and build</h2><div class="env-grid">%s</div></section>'
               % environment_tables(self.runs))

    # page ---------------------------------------------------------------------------------------
    def render(self, data_json: str) -> str:
        title = "streamcheck report \u2014 %s" % self.run["id"]
        if self.totals["failed"]:
            title = "[%d FAILED] %s" % (self.totals["failed"], title)
        sections = [self.captured(m) for m in (self.totals_section, self.coverage_section, self.families_section,
                                                self.timelines_section, self.instruments_section,
                                                self.environment_section)]
        nav = "".join('<a href="#%s">%s</a>' % (anchor, h(label)) for anchor, label in (
            ("totals", "Totals"), ("coverage", "Coverage"), ("families", "Families"), ("timelines", "Timelines"),
            ("instruments", "Instruments"), ("environment", "Environment & build")))
        if self.problems:
            nav = '<a href="#problems">Problems</a>' + nav
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return fill_page("report.html", title=h(title), css=template_text("report.css"), heading="streamcheck report",
                         facts=self.facts(), banners=self.banners(), nav=nav, sections="\n".join(sections),
                         footer="Generated by %s %s at %s from %s." % (GENERATOR, GENERATOR_VERSION, now,
                                                                        h(self.run["dir"])),
                         data=data_json, script=template_text("report.js"))


def finite(data: Any) -> Any:
    """The data with NaN and infinities as strings: JSON.parse rejects them as numbers."""
    if isinstance(data, float) and (data != data or data in (float("inf"), float("-inf"))):
        return repr(data)
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def embed_json(data: Any) -> str:
    """JSON that cannot end its <script> element: every "</" becomes "<\\/" (a valid JSON escape)."""
    text = json.dumps(finite(data), ensure_ascii=True, sort_keys=False, default=str, allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def page_data(model: Dict[str, Any], source: Path) -> Dict[str, Any]:
    """The data block: what the page shows, for machines. Block records stay in the observation files (the page
    carries their drawing and their counts), and so do timeline items beyond the ones drawn."""
    run = model["run"]
    tests = model["tests"]
    return {
        "generator": {"name": GENERATOR, "version": GENERATOR_VERSION},
        "runs": [{"dir": run["dir"], "id": run["id"], "env": run["env"], "notes": run["notes"]}],
        "problems": model["problems"],
        "source": str(source),
        "totals": model["totals"],
        "coverage": model["coverage"],
        "plans": model["plans"],
        "tests": [dict(tests[name], block_chart=chart_digest(tests[name].get("block_chart")),
                       timeline=timeline_without_blocks(tests[name].get("timeline"))) for name in sorted(tests)],
        "instruments": model["instruments"],
        "baseline": {k: v for k, v in model["baseline"].items() if k != "entries"},
    }


def render_report(model: Dict[str, Any], source: Path) -> str:
    """The page of one run."""
    return Page(model, source).render(embed_json(page_data(model, source)))
