"""A test's row in its family's table (status, name, the catalog IDs it claims or its plan says, a line of why it
failed or was skipped) and its details, which the page loads from a file beside it when the row is opened:
claims, duration, the result (tags, skip reason, failure texts, evidence, notes), observed values, baseline
comparisons, its timeline and its block chart. Fills the fragments of reports/templates/test_row.html.
Python 3.9+ standard library only."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .common import (BASELINE_LABEL, MAX_EVIDENCE_LINES, MUTATION_KIND_TITLE, SHARED_GPU_LABEL, Markup, as_ns,
                     dig, fmt_duration, fmt_ns, fmt_value, inline_md, shortened, slug)
from .model import is_unjudged, same_value
from .page_parts import badge, dash, kv_list, test_anchor
from .results import SHARED_GPU, outcome, sharing_text
from .templates import EMPTY, attrs, fill, join
from .block_chart import block_chart_html
from .timeline import timeline_html
from .timeline_model import timeline_anchor, timeline_note, timeline_state, trace_path

# Failure text shown per failure at most (the XML file has all of it).
MAX_FAILURE_CHARS = 8000
# The row's line of why a test failed or was skipped, at most (its details have all of it).
SHORT_REASON_CHARS = 160

Test = Dict[str, Any]


def watchdog_text(entry: Dict[str, Any]) -> str:
    """One fired latch: "latch 2 holding s1: watchdog 2000 ms, waited 2.000 s; unexpected: ..."."""
    held = entry.get("held")
    waited = as_ns(entry.get("waited_ns"))
    text = "latch %s%s: watchdog %s ms%s" % (
        fmt_value(entry.get("latch", entry.get("gate"))), " holding %s" % fmt_value(held) if held not in (None, "") else "",
        fmt_value(entry.get("watchdog_ms")), ", waited %s" % fmt_ns(waited) if waited is not None else "")
    if entry.get("expected") is True:
        return text + "; expected (a test of the watchdog itself)"
    return text + "; unexpected: the test fails, a check made while the latch was supposed to be closed proves nothing"


def watchdog_tags(test: Test) -> List[Markup]:
    """Tags for the Result cell: fired watchdogs, unexpected ones (a failure) apart from expected ones."""
    tags = []
    fired = test["watchdog"]
    unexpected = [w for w in fired if w.get("expected") is not True]
    expected = [w for w in fired if w.get("expected") is True]
    for group, kind, label, title in (
            (unexpected, "watchdog", "watchdog fired (unexpected)",
             "a latch was not opened before its watchdog ended it: the test fails (latches listed below)"),
            (expected, "watchdog-expected", "watchdog fired (expected)",
             "a test of the watchdog itself: its firing is expected (latches listed below)")):
        if group:
            tags.append(fill("watchdog_tag", kind=kind, title=title, label=label,
                             times=" \u00d7%d" % len(group) if len(group) > 1 else ""))
    if not fired and test["watchdog_summary"]:
        # XML only: the property counts the latches but does not say whether they were expected.
        tags.append(fill("watchdog_xml_tag", summary=test["watchdog_summary"]))
    return tags


def retried_tags(test: Test) -> List[Markup]:
    """A tag when the test built its arrangement more than once (priority_sched: arrangement.attempts, the
    judged attempt being the last); hovering it gives each discarded attempt's reason. A growing count is a
    change in the machine's release latency worth seeing, although no attempt is a failure."""
    observations = test["observations"]
    attempts = observations.get("arrangement.attempts")
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 2:
        return []
    reasons = ["attempt %s: %s" % (key[len("arrangement.attempt"):-len(".not_ready")], fmt_value(value))
               for key, value in sorted(observations.items())
               if key.startswith("arrangement.attempt") and key.endswith(".not_ready")]
    title = "the last attempt is the one judged; the ones before it proved nothing:\n" + "\n".join(reasons)
    return [fill("retried_tag", attrs=attrs(title=title), attempts=str(attempts))]


def evidence_lists(test: Test) -> List[Markup]:
    """The fired latches and the invalid latch checks of a test, one line each (at most MAX_EVIDENCE_LINES)."""
    out = []
    for title, lines, kind in (("watchdog fired", [watchdog_text(w) for w in test["watchdog"]], "watchdog"),
                               ("invalid checks", list(test["invalid_checks"]), "invalid")):
        if not lines:
            continue
        shown = lines[:MAX_EVIDENCE_LINES]
        more = len(lines) - len(shown)
        from_xml = kind == "invalid" and test["invalid_checks_from_xml"]
        out.append(fill("evidence", kind=kind, title=title, count=len(lines),
                        note=fill("evidence_from_xml") if from_xml else EMPTY,
                        lines=join(fill("li", text=line) for line in shown),
                        more=fill("evidence_more", count=more) if more else EMPTY))
    return out


def status_cell(t: Test) -> Markup:
    if is_unjudged(t):
        return badge("unjudged", "not judged", "skipped: its observed values have no baseline, or could not "
                                               "be measured here, so they were not judged")
    if outcome(t) == SHARED_GPU:
        return badge(SHARED_GPU, title="it ran beside another context on the GPU, so nothing it showed is judged")
    return badge(outcome(t))


def name_cell(t: Test) -> Markup:
    return fill("test_name", name=t["gtest_name"],
                variant=fill("variant", family=t["family"], variant=t["variant"]) if t["variant"] else EMPTY)


def claim_cells(t: Test) -> Tuple[Markup, Markup, Markup]:
    """The ID, Kind and Doc source cells: from the test's claims, or, without any, from its plan rows."""
    br = fill("br")
    if t["claims"]:
        return (join((fill("id_link", anchor=slug(str(c.get("id"))), id=c.get("id"), plan=EMPTY)
                      for c in t["claims"]), br),
                join((c.get("kind") or "\u2014" for c in t["claims"]), br),
                join((c.get("source") or "\u2014" for c in t["claims"]), br))
    if t["plan_rows"]:
        # No claim recorded (e.g. skipped before the test body ran): show what the plan says.
        return (join((fill("id_link", anchor=slug(r["id"]), id=r["id"], plan=fill("from_plan"))
                      for r in t["plan_rows"]), br),
                join((r["kind"] or "\u2014" for r in t["plan_rows"]), br),
                join((inline_md(r["source"]) or "\u2014" for r in t["plan_rows"]), br))
    return dash(), dash(), dash()


def duration_cell(t: Test) -> Markup:
    setup = fill("setup", duration=fmt_duration(t["setup_ms"])) if t["setup_ms"] is not None else EMPTY
    return fill("duration", duration=fmt_duration(t["duration_ms"]), setup=setup)


def failure_text(failure: str) -> str:
    if len(failure) <= MAX_FAILURE_CHARS:
        return failure
    return failure[:MAX_FAILURE_CHARS] + "\n... (%d more characters in the XML file)" % (len(failure) - MAX_FAILURE_CHARS)


def result_cell(t: Test) -> Markup:
    """Tags (watchdogs, mutation), why it was skipped or not judged, failure texts, evidence and notes."""
    result = watchdog_tags(t)
    if t["mutation"]:
        kind = t["mutation_kind"]
        title = MUTATION_KIND_TITLE.get(kind) if isinstance(kind, str) else None
        result.append(fill("mutation_tag", attrs=attrs(title=title), mutation=t["mutation"],
                           kind=" (%s)" % fmt_value(kind) if kind else ""))
    result.extend(retried_tags(t))
    if outcome(t) == SHARED_GPU:
        result.append(fill("shared_gpu", label=SHARED_GPU_LABEL, reason=sharing_text(t),
                           failures=fill("shared_gpu_failures") if t["failures"] else EMPTY))
    elif is_unjudged(t) or t["status"] == "skipped":
        result.append(fill("unjudged", reason=t["skip_reason"]) if is_unjudged(t) else
                      fill("skipped", reason=t["skip_reason"] or "(no reason given)"))
        if t["skip_location"]:
            result.append(fill("muted_small_mono_div", text=t["skip_location"]))
    result.extend(fill("unjudged_claim", id=u["id"], reason=u["reason"]) for u in t["unjudged_claims"])
    result.extend(fill("failure", text=failure_text(failure)) for failure in t["failures"])
    result.extend(evidence_lists(t))
    tl_note = timeline_note(t)
    result.extend(fill("muted_small_div", text=note) for note in list(t["notes"]) + ([tl_note] if tl_note else []))
    return join(result) or dash()


def row_status(t: Test) -> str:
    """The row's status for the page's filter: a skip of the baseline rule is a problem to look at, a skip with
    its reason (or of recorded values) is not."""
    status = outcome(t)
    if status == "skipped":
        return "unjudged" if is_unjudged(t) else "recorded" if t["skip_kind"] == "recorded" else "skipped"
    return status


def failure_line(t: Test) -> str:
    """What made a test fail, for its row: its first failure, else an unexpected watchdog, an invalid check or
    a gating baseline row that differs."""
    unexpected = [w for w in t["watchdog"] if w.get("expected") is not True]
    differs = ["baseline %s/%s differs: observed %s, expected %s" % tuple(
        fmt_value(e.get(k)) for k in ("id", "key", "observed", "expected"))
        for e in t["baseline"] if e.get("status") == "differs-gating"]
    lines = list(t["failures"]) + [watchdog_text(w) for w in unexpected] + list(t["invalid_checks"]) + differs
    return lines[0] if lines else ""


def short_reason(t: Test) -> str:
    """One line of at most SHORT_REASON_CHARS for the test's row: why it failed, was skipped or not judged, or
    did not run; empty for a pass. Its details have the whole of it."""
    if outcome(t) == SHARED_GPU:
        text = sharing_text(t)
    elif t["status"] == "skipped":
        text = t["skip_reason"] or "(no reason given)"
    elif t["status"] == "failed":
        text = failure_line(t)
    elif t["status"] == "notrun":
        text = t["not_run_reason"] or " ".join(t["notes"])
    else:
        text = ""
    lines = str(text).strip().splitlines()
    if len(lines) > 1 and re.fullmatch(r"\S+:\d+", lines[0]):
        lines[0] = os.path.basename(lines[0]) + ":"  # GoogleTest's "path:line" above its message
    return shortened(" ".join(lines), SHORT_REASON_CHARS)


def test_row(t: Test) -> Markup:
    """The test's row: status, name, the catalog IDs it claims (or its plan says) and why it failed or was
    skipped, in a line. Its details (test_details) are a file beside the page, which report.js shows under the
    row when it is opened."""
    return fill("test_row", anchor=test_anchor(t), status=row_status(t),
                attrs=attrs(class_="row-failed" if t["status"] == "failed" else None), badge=status_cell(t),
                name=name_cell(t), ids=claim_cells(t)[0], reason=short_reason(t))


def test_details(t: Test, known: Optional[Dict[str, Any]] = None) -> Markup:
    """Everything about a test that its row leaves out: its ctest name, claims (kind and doc source), duration,
    the whole result (tags, failure texts, evidence, notes), observed values, baseline comparisons, its timeline
    and block chart. known: the source tree's baseline file (model["baseline"]), for what a baseline comparison
    does not carry."""
    ids, kinds, sources = claim_cells(t)
    claim_ids = sorted({str(c.get("id")) for c in t["claims"]})
    timeline = timeline_html(t["timeline"], timeline_anchor(t), trace_path(t)) if timeline_state(t) == "drawn" \
        else EMPTY
    blocks = block_chart_html(t["block_chart"], "blocks/%s.svg" % timeline_anchor(t)) if t.get("block_chart") \
        else EMPTY
    return fill("test_details", ctest=t["ctest_name"], ids=ids, kinds=kinds, sources=sources,
                duration=duration_cell(t), result=result_cell(t), observed=kv_list(t["observations"]),
                baseline=baseline_list(t["baseline"], claim_ids, known), timeline=timeline, blocks=blocks)


# ------------------------------------------------------------------------------------------------
# Baseline comparisons
# ------------------------------------------------------------------------------------------------
def baseline_key(e: Dict[str, Any], entry: Dict[str, Any], single: bool, file_name: str) -> Markup:
    """The row's key (ID/key when the test claims several IDs); hovering it says why the value is gating or
    not and whether a driver may flip it, from the baseline file."""
    about = []
    if isinstance(entry.get("why"), str) and entry["why"]:
        about.append("why: %s" % entry["why"])
    if isinstance(entry.get("driver_may_flip"), bool):
        about.append("driver may flip: %s" % ("yes" if entry["driver_may_flip"] else "no"))
    title = "%s (%s)\n%s" % (e.get("key"), file_name, "\n".join(about)) if about else None
    key = fmt_value(e.get("key")) if single else "%s/%s" % (fmt_value(e.get("id")), fmt_value(e.get("key")))
    return fill("bl_key", attrs=attrs(class_="mono why" if about else "mono", title=title), key=key)


def baseline_facts(e: Dict[str, Any], entry: Dict[str, Any]) -> Markup:
    """"(expected X, gating, driver may flip)": what the comparison was against and what it decides."""
    facts = []
    if "expected" in e:
        facts.append(fill("bl_expected", value=e["expected"]))
    gating = e.get("gating")
    reason = e.get("gating_reason") if isinstance(e.get("gating_reason"), str) and e.get("gating_reason") \
        else entry.get("gating_reason") if isinstance(entry.get("gating_reason"), str) else None
    if gating is not None:
        word = "gating" if gating is True else "not gating" if gating is False else "gating %s" % fmt_value(gating)
        facts.append(fill("why", title=reason, text=word) if reason else join([word]))
    if entry.get("driver_may_flip") is True:
        facts.append(fill("bl_driver_may_flip"))
    return fill("bl_facts", facts=join(facts, ", ")) if facts else EMPTY


def source_tree_note(e: Dict[str, Any], entry: Dict[str, Any], file_name: str) -> Markup:
    """The row was compared with the file of the run's source tree; the file read now may be newer."""
    if "expected" not in entry:
        return EMPTY
    status = str(e.get("status"))
    if "expected" in e:
        said = None if same_value(entry["expected"], e["expected"]) else "now expects"
    elif status in ("no-baseline", "no-entry", "no-baseline-dir"):
        said = "now has an entry: expected"
    else:
        said = "expects"  # a row from the XML, which records the status only
    return fill("bl_source_tree", file=file_name, said=said, expected=entry["expected"]) if said else EMPTY


def baseline_line(e: Dict[str, Any], entry: Dict[str, Any], single: bool, file_name: str) -> Markup:
    status = str(e.get("status"))
    parts = [baseline_key(e, entry, single, file_name)]
    if "observed" in e:
        parts.append(fill("bl_observed", value=e["observed"]))
    parts.append(baseline_facts(e, entry))
    if isinstance(entry.get("finding"), str) and entry["finding"]:
        parts.append(fill("bl_finding", finding=entry["finding"]))
    detail = e.get("detail")
    return fill("bl", badge=badge(status, BASELINE_LABEL.get(status, status)), parts=join([p for p in parts if p], " "),
                detail=fill("muted_small_div", text=detail) if isinstance(detail, str) and detail else EMPTY,
                source_tree=source_tree_note(e, entry, file_name))


def baseline_list(entries: List[Dict[str, Any]], claim_ids: Sequence[str], known: Optional[Dict[str, Any]] = None) -> Markup:
    """One line per baseline comparison: status, key, observed, expected, gating, detail. What the row does
    not carry comes from the source tree's baseline file (known): why the value is gating or not and where
    it comes from (hover), whether a driver may flip it, a finding, and an expected value changed since."""
    if not entries:
        return dash()
    single = len(claim_ids) == 1 and all(str(e.get("id")) in claim_ids for e in entries)
    file_entries = (known or {}).get("entries") or {}
    file_name = os.path.basename((known or {}).get("path") or "") or "the baseline file"
    lines = []
    for e in entries:
        entry = dig(file_entries, str(e.get("id")), str(e.get("key")))
        lines.append(baseline_line(e, entry if isinstance(entry, dict) else {}, single, file_name))
    return join(lines)
