"""The sections of the report page, each a function of the model of a run (model.build_model()) that fills the
fragments of reports/templates/sections.html: totals, coverage by catalog ID, results by family, timelines,
instruments, environment. A section returns its markup, so each can be rendered and tested on its own; a
family's rows (family_rows) are a file beside the page. Python 3.9+ standard library only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from .api import coverage as api_coverage, cuda_include_dir
from .common import (COUNT_LABEL, COVERAGE_ORDER, MAX_EVIDENCE_LINES, TEST_LABEL, TEST_ORDER, Markup, bounded, dig,
                     inline_md, plural, shortened, slug)
from .model import is_unjudged, skip_group, skip_groups
from .page_parts import badge, dash, environment_tables, kv_list, test_anchor, test_link
from .results import SHARED_GPU, outcome
from .templates import EMPTY, attrs, fill, join
from .test_row import SHORT_REASON_CHARS, short_reason, status_cell, test_row
from .timeline import timeline_legend
from .timeline_model import timeline_model, timeline_state

Model = Dict[str, Any]
Test = Dict[str, Any]

# What the page names of a run, at most, so that its size does not grow with the number of tests (each family's
# rows are a file beside it, families/<family>.js, read when the family is opened): LISTED_TESTS failed tests,
# and as many not run or not judged, each with its line of why; COVERAGE_NAMED tests of a catalog ID (beyond,
# they are counted by outcome) and COVERAGE_DETAIL_LINES lines of its detail. Those beyond are counted by family.
LISTED_TESTS = 10
COVERAGE_NAMED = 3
COVERAGE_DETAIL_LINES = 6


def family_links(counts: Dict[str, int]) -> Markup:
    """Each family linked (opening it reads its rows), with a count of its tests."""
    return join((fill("family_link", anchor=slug(family), family=family, count=n)
                 for family, n in sorted(counts.items())), ", ")


def first_tests(tests: List[Test], limit: int, item: Any) -> List[Markup]:
    """item(test) of the first `limit` tests, and a line counting the rest by family."""
    rest: Dict[str, int] = {}
    for t in tests[limit:]:
        rest[t["family"]] = rest.get(t["family"], 0) + 1
    more = [fill("more_tests", count=len(tests) - limit, families=family_links(rest))] if rest else []
    return [item(t) for t in tests[:limit]] + more


def listed_tests(tests: List[Test], with_status: bool = False) -> Markup:
    """The first LISTED_TESTS tests, each linked to its row with its line of why (and its status, with_status),
    as list items; the rest counted by family."""
    def item(t: Test) -> Markup:
        status = join([status_cell(t), " "]) if with_status else EMPTY
        return fill("listed_test", status=status, anchor=test_anchor(t), name=t["ctest_name"], reason=short_reason(t))
    return join(fill("li", text=line) for line in first_tests(tests, LISTED_TESTS, item))


# ------------------------------------------------------------------------------------------------
# Totals
# ------------------------------------------------------------------------------------------------
def totals_banner(model: Model) -> Markup:
    """That nothing was tested on a GPU, if so; then failed tests named and linked, or that nothing produced a
    result, or that nothing failed."""
    nothing = model.get("nothing_on_gpu")
    rest = outcome_banner(model)
    return join([fill("nothing_on_gpu_banner", text=nothing[0].upper() + nothing[1:]), rest]) if nothing else rest


def outcome_banner(model: Model) -> Markup:
    t = model["totals"]
    failed = sorted((x for x in model["tests"].values() if x["status"] == "failed"), key=lambda x: x["ctest_name"])
    if failed:
        return fill("failed_banner", count=plural(len(failed), "test"), items=listed_tests(failed))
    if t["tests"] == t["notrun"]:
        missing = [plural(t["notrun"], "test") + " not run"] if t["notrun"] else []
        missing += ["%s not in this run" % plural(t["planned"], "planned test")] if t["planned"] else []
        return fill("nothing_ran_banner", notrun=" (%s)" % ", ".join(missing) if missing else "")
    rest = [key for key in COUNT_LABEL if key not in ("passed", "failed") and t[key]]
    extra = " (%d of %d: %s)" % (sum(t[k] for k in rest), t["tests"],
                                 ", ".join("%d %s" % (t[k], COUNT_LABEL[k]) for k in rest)) if rest else ""
    return fill("none_failed_banner", kind="warn" if t["passed"] == 0 or t[SHARED_GPU] else "ok", extra=extra)


def to_look_at(model: Model) -> Markup:
    """The tests not run, or not judged (for want of a baseline, or beside another context on the GPU): what
    needs a look besides the failures."""
    tests = sorted((t for t in model["tests"].values() if outcome(t) in ("notrun", SHARED_GPU) or is_unjudged(t)),
                   key=lambda t: (TEST_ORDER[outcome(t)], t["ctest_name"]))
    if not tests:
        return EMPTY
    return fill("to_look_at", count=plural(len(tests), "test"), items=listed_tests(tests, with_status=True))


def skip_reasons(tests: Dict[str, Test]) -> Markup:
    """How many tests were skipped for each reason, the most frequent first, and in which families; the first
    MAX_EVIDENCE_LINES reasons, the rest counted."""
    reasons = skip_groups(tests.values())
    if not reasons:
        return EMPTY
    families: Dict[str, Dict[str, int]] = {}
    for t in tests.values():
        key = skip_group(t)
        if key is not None:
            counts = families.setdefault(key, {})
            counts[t["family"]] = counts.get(t["family"], 0) + 1
    rows = [fill("skip_reason_row", reason=shortened(reason, SHORT_REASON_CHARS), count=n,
                 families=family_links(families[reason])) for reason, n in reasons[:MAX_EVIDENCE_LINES]]
    rest = reasons[MAX_EVIDENCE_LINES:]
    if rest:
        rows.append(fill("skip_reason_row", reason=plural(len(rest), "more reason"), count=sum(n for _, n in rest),
                         families=EMPTY))
    return fill("skip_reasons", rows=join(rows))


def totals_section(model: Model) -> Markup:
    """The run's tests counted by outcome (as the gate and JUnit count them), then apart the tests the plans
    name that the run never listed, and the skips by reason."""
    t = model["totals"]
    unjudged = sum(1 for x in model["tests"].values() if is_unjudged(x))
    # A count of none is not coloured: a clean run shows no failure or warning colour.
    counters = join(fill("counter", key=key if t[key] else "none", count=t[key], label=label,
                         unjudged=fill("unjudged_count", count=unjudged) if key == "skipped" and unjudged else EMPTY)
                    for key, label in COUNT_LABEL.items())
    planned = fill("planned_count", count=plural(t["planned"], "test")) if t["planned"] else EMPTY
    return fill("totals", banner=totals_banner(model), tests=t["tests"], counters=counters, look=to_look_at(model),
                planned=planned, reasons=skip_reasons(model["tests"]))


# ------------------------------------------------------------------------------------------------
# Coverage by catalog ID
# ------------------------------------------------------------------------------------------------
def outcome_badges(tests: List[Test]) -> Markup:
    """A badge for each outcome of the tests, with its count."""
    counts = {s: sum(1 for t in tests if outcome(t) == s) for s in TEST_ORDER}
    return join((badge(s, "%d %s" % (counts[s], TEST_LABEL[s])) for s in TEST_ORDER if counts[s]), " ")


def planned_counts(row: Dict[str, Any], tests: Dict[str, Test]) -> Markup:
    """The results of the tests the plan names for an ID, counted by outcome, and its family linked."""
    found = sorted({c for name in row["planned"] for c in row["results"].get(name, []) if c in tests})
    unmatched = sum(1 for name in row["planned"] if not any(c in tests for c in row["results"].get(name, [])))
    badges = [outcome_badges([tests[c] for c in found])]
    if unmatched:
        badges.append(badge("no-result", "%d no result" % unmatched))
    return fill("planned_counts", count=plural(len(row["planned"]), "test"), anchor=slug(row["family"]),
                family=row["family"], badges=join(badges, " "))


def detail_lines(lines: List[str]) -> List[str]:
    """A catalog ID's lines of detail as the page holds them: the first COVERAGE_DETAIL_LINES, each of at most
    SHORT_REASON_CHARS, the rest counted (its tests' rows and details have all of it)."""
    return bounded([shortened(line, SHORT_REASON_CHARS) for line in lines], COVERAGE_DETAIL_LINES)


def planned_tests_cell(row: Dict[str, Any], tests: Dict[str, Test]) -> Markup:
    """The tests the plan names for an ID, each with a chip per result (one per variant) linked to its row; more
    than COVERAGE_NAMED are counted (planned_counts)."""
    if not row["planned"]:
        return dash()
    if len(row["planned"]) > COVERAGE_NAMED:
        return planned_counts(row, tests)
    lines = []
    for name in row["planned"]:
        found = [tests[c] for c in row["results"].get(name, []) if c in tests]
        if not found:
            lines.append(fill("planned_test", name=name, results=badge("no-result")))
            continue
        chips = []
        for t in found:
            if t.get("planned_only"):
                chip = badge("no-result", "no result")
            else:
                label = "%s: %s" % (t["variant"], TEST_LABEL[outcome(t)]) if t["variant"] else TEST_LABEL[outcome(t)]
                chip = badge(outcome(t), label)
            chips.append(fill("anchor_link", anchor=test_anchor(t), text=chip))
        lines.append(fill("planned_test", name=name, results=join(chips, " ")))
    return join(lines, fill("br"))


def coverage_rows(model: Model, with_claim: bool) -> Markup:
    """The plan rows, grouped by family under a row naming the family and its plan."""
    rows = []
    family = None
    for row in sorted(model["coverage"]["rows"], key=lambda r: r["family"]):  # stable: plan order within a family
        if row["family"] != family:
            family = row["family"]
            rows.append(fill("coverage_group", columns=7 if with_claim else 6, anchor=slug(family), family=family,
                             plan=(model["plans"].get(family) or {}).get("path") or ""))
        rows.append(fill("coverage_row", status=row["status"], anchor=slug(row["id"]), id=row["id"],
                         attrs=attrs(class_="row-failed" if row["status"] == "fail" else None),
                         kind=row["kind"] or "\u2014",
                         claim=fill("claim_cell", claim=inline_md(row["claim"])) if with_claim else EMPTY,
                         source=inline_md(row["source"]), tests=planned_tests_cell(row, model["tests"]),
                         badge=badge(row["status"]), detail=join(detail_lines(row["detail"]), fill("br"))))
    return join(rows)


def coverage_ids(model: Model, source: Path) -> Markup:
    """The counts of each status and the table of every planned catalog ID, collapsed."""
    cov = model["coverage"]
    if not cov["rows"]:
        return fill("coverage_no_plans", where=str(source / "tests"))
    counts = join((fill("count_badge", badge=badge(s), count=cov["counts"][s]) for s in COVERAGE_ORDER
                   if cov["counts"][s]), " ")
    with_claim = any(row["claim"] for row in cov["rows"])
    # The table is collapsed when the page opens (its load time); a link to an ID opens it (report.js).
    return fill("coverage_ids", counts=counts, ids=len(cov["rows"]),
                claim_col=fill("claim_col") if with_claim else EMPTY, source_width="16%" if with_claim else "22%",
                claim_head=fill("claim_head") if with_claim else EMPTY, rows=coverage_rows(model, with_claim))


def no_plan_table(cov: Dict[str, Any]) -> Markup:
    if not cov["no_plan"]:
        return EMPTY
    return fill("no_plan", rows=join(
        fill("no_plan_row", anchor=slug(entry["family"]), family=entry["family"], badge=badge("noplan", "no plan"),
             tests=entry["tests"], note=entry["note"]) for entry in cov["no_plan"]))


def self_tested_table(cov: Dict[str, Any]) -> Markup:
    """Families whose plans list the suite's own tests: what is listed but has no result, and the reverse."""
    if not cov.get("self_tested"):
        return EMPTY
    rows = []
    for entry in cov["self_tested"]:
        detail = []
        if entry["missing"]:
            detail.append("listed but no result: " + ", ".join(bounded(entry["missing"], LISTED_TESTS)))
        if entry["unlisted"]:
            detail.append("ran but not listed: " + ", ".join(bounded(entry["unlisted"], LISTED_TESTS)))
        rows.append(fill("self_tested_row", anchor=slug(entry["family"]), family=entry["family"],
                         planned=entry["planned"], tests=entry["tests"], failed=entry["failed"],
                         detail="; ".join(detail) or "\u2014"))
    return fill("self_tested", rows=join(rows))


def unplanned_table(model: Model) -> Markup:
    """IDs that tests claim but no plan lists."""
    if not model["coverage"]["unplanned"]:
        return EMPTY
    return fill("unplanned", rows=join(
        fill("unplanned_row", status=row["status"], id=row["id"], family=row["family"], kind=row["kind"] or "\u2014",
             tests=join(first_tests([model["tests"][name] for name in row["tests"]], COVERAGE_NAMED, test_link),
                        fill("br")),
             badge=badge(row["status"]), detail=join(detail_lines(row["detail"]), fill("br")))
        for row in model["coverage"]["unplanned"]))


def coverage_section(model: Model, source: Path) -> Markup:
    cov = model["coverage"]
    return fill("coverage", ids=coverage_ids(model, source), no_plan=no_plan_table(cov),
                self_tested=self_tested_table(cov), unplanned=unplanned_table(model))


# ------------------------------------------------------------------------------------------------
# Results by family
# ------------------------------------------------------------------------------------------------
def plan_note(plan: Any) -> str:
    if plan and plan["rows"] is not None:
        return "plan: %s" % plural(len(plan["rows"]), "ID")
    if plan and plan.get("self_tests") is not None:
        return "plan: %s, no catalog IDs" % plural(len(plan["self_tests"]), "listed test")
    return "no plan"


def tests_by_family(model: Model) -> Dict[str, List[Test]]:
    """The run's tests by family, the families in order; in a family, failures, tests not run and skips not
    judged first: what needs a look before what skipped with a reason."""
    by_family: Dict[str, List[Test]] = {}
    for t in model["tests"].values():
        by_family.setdefault(t["family"], []).append(t)
    return {family: sorted(by_family[family], key=lambda t: (TEST_ORDER[outcome(t)], not is_unjudged(t),
                                                             t["gtest_name"], t["variant"]))
            for family in sorted(by_family)}


def family_line(model: Model, family: str, tests: List[Test]) -> Markup:
    """A family, collapsed, its summary counting each outcome; its rows (family_rows) are read from the file
    beside the page when it is opened."""
    variants = sorted({t["variant"] for t in tests if t["variant"]})
    variant_note = (" \u00b7 variants: %s" % ", ".join(variants)) if variants else ""
    return fill("family", anchor=slug(family), family=family, summary=outcome_badges(tests),
                note="%s \u00b7 %s%s" % (plural(len(tests), "test"), plan_note(model["plans"].get(family)), variant_note))


def family_rows(tests: List[Test]) -> Markup:
    """A family's rows, in the order of tests_by_family."""
    return join(test_row(t) for t in tests)


def families_section(model: Model) -> Markup:
    families = tests_by_family(model)
    drawn = any(timeline_state(t) == "drawn" for t in model["tests"].values())
    return fill("families", filters=fill("filters"), empty=EMPTY if families else fill("no_results"),
                key=fill("timeline_key", legend=timeline_legend()) if drawn else EMPTY,
                families=join(family_line(model, family, tests) for family, tests in families.items()))


# ------------------------------------------------------------------------------------------------
# Timelines, instruments, environment
# ------------------------------------------------------------------------------------------------
def timelines_others(states: Dict[str, List[Dict[str, Any]]]) -> Markup:
    """One line for the tests without a drawing: traced with nothing recorded, tracing off, no record."""
    others = []
    if states.get("empty"):
        others.append("%s traced with nothing recorded" % plural(len(states["empty"]), "test"))
    if states.get("off"):
        reasons = sorted({str(dig(t["timeline"], "tracing", "reason") or "no reason given") for t in states["off"]})
        others.append("%s with tracing off (%s)" % (plural(len(states["off"]), "test"), "; ".join(reasons)))
    if states.get("none"):
        others.append("%s without a timeline record" % plural(len(states["none"]), "test"))
    return fill("timelines_others", text="; ".join(others)) if others else EMPTY


def timelines_section(model: Model) -> Markup:
    """How many tests drew a timeline (each is in its test's details) and why the others did not."""
    states: Dict[str, List[Dict[str, Any]]] = {}
    for t in model["tests"].values():
        states.setdefault(timeline_state(t), []).append(t)
    drawn = states.get("drawn", [])
    ranges_only = sum(1 for t in drawn if not timeline_model(t["timeline"])["items"])
    return fill("timelines", where=fill("timelines_where", count=plural(len(drawn), "test"), ranges_only=(
                    " (%d of them NVTX ranges only)" % ranges_only) if ranges_only else "") if drawn else EMPTY,
                none=EMPTY if drawn else fill("no_timelines"), others=timelines_others(states))


def api_section(model: Model, source: Path) -> Markup:
    """Every function of the CUDA headers' stream and event sections (and the host-function launches) with the
    tests of this run that call it, or "not exercised" (api.py; the same table as docs/api.md)."""
    include = cuda_include_dir()
    table = api_coverage(source, include)
    by_name: Dict[str, List[Dict[str, Any]]] = {}
    for t in model["tests"].values():
        by_name.setdefault(t["gtest_name"], []).append(t)
    rows = []
    for row in table["rows"]:
        # Each test once, linked to its first result of this run (its variants are listed in its family).
        links = [fill("api_test", anchor=test_anchor(min(by_name[name], key=lambda t: t["ctest_name"])), name=name)
                 if by_name.get(name) else name for name in row["tests"]]
        also = ", ".join(["%s helpers" % h for h in row["helpers"]] + (["fixtures"] if row["fixtures"] else []))
        called = row["tests"] or also
        rows.append(fill("api_row", function=row["function"], section=row["section"] or "\u2014",
                         tests=join(links, ", ") if links else "\u2014", ids=", ".join(row["ids"]) or "\u2014",
                         also=also or "\u2014", status="pass" if called else "skipped",
                         label="exercised" if called else "not exercised"))
    where = ("from %s" % table["include"]) if table["include"] else \
        "the CUDA headers were not found ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda): only the functions the code calls"
    return fill("api", count=plural(len(table["rows"]), "function"), not_called=table["not_called"], where=where,
                rows=join(rows))


def instruments_section(model: Model) -> Markup:
    instruments = model["instruments"]
    if not instruments:
        return fill("instruments", body=fill("no_instruments"))
    rows = []
    for ident in sorted(instruments):
        record = instruments[ident]
        test_name = record.get("test")
        test = model["tests"].get(test_name) if isinstance(test_name, str) else None
        figures = record.get("figures") if isinstance(record.get("figures"), dict) else {}
        rows.append(fill("instrument_row", id=ident, test=test_link(test) if test else test_name or "\u2014",
                         figures=kv_list(figures)))
    return fill("instruments", body=fill("instruments_table", rows=join(rows)))


def environment_section(model: Model) -> Markup:
    return fill("environment", tables=environment_tables([model["run"]]))
