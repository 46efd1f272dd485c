"""The gate's judgement of one run, for GPU runners, built on the one results reader:

    0  every behavior as expected
    1  a behavior regressed: a test failed (a documented claim, or any other test), or a baseline row that
       gates differs (differs-gating; no-baseline-dir, a wrong source tree, fails the same way)
    2  the run is not trustworthy, whatever its tests say: no GPU was used, the runner's set-up keeps the
       behaviors from being shown (CUDA_LAUNCH_BLOCKING or CUDA_DEVICE_MAX_CONNECTIONS set, a compute-sanitizer
       tool, MPS, a MIG instance, another process with a context on the GPU), a test ran beside another context
       on the GPU (not judged), tracing (CUPTI) was off where it is required, the results folder is incomplete
       (no env.json, a result file unreadable, a test ctest ran without any list of its tests, a test an entry
       listed without its result, a test with a claim without its observation file, the run not finished,
       env.json's XML count not matching), a gate watchdog fired unexpectedly, or a mutation was active

Rows no baseline judged (a GPU without a baseline file) change no exit status: the summary's first line counts
them, since such a run proves its documented behaviors only.

Also the run as a Markdown summary (GitHub step summary, GitLab note) and as JUnit XML whose test cases carry
their claim IDs and skip reasons. A message line there is at most MESSAGE_CHARS long and names its file:line;
the evidence (the JUnit body, the observation file, the report) keeps the whole text. Python 3.9+ standard
library only.
"""

from __future__ import annotations

import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from xml.sax.saxutils import escape, quoteattr

from .common import COUNT_LABEL, SHARED_GPU_LABEL, InputError, cuda_version, dig, driver_text, fmt_value
from .model import baseline_arch, skip_groups, source_mismatch, unjudged_rows_line
from .results import (SHARED_GPU, claim_ids, claims_kind, count_outcomes, gpu_facts, load_run,
                      not_run_after_process_ended, nothing_tested_on_gpu, outcome, sharing_text, unexpected_watchdogs)

PASS, REGRESSED, UNTRUSTWORTHY = 0, 1, 2
VERDICT = {PASS: "passed: every behavior as expected", REGRESSED: "FAILED: a behavior regressed",
           UNTRUSTWORTHY: "NOT TRUSTWORTHY: the run proves nothing"}
# Baseline row statuses that fail a test (observation schema: differs-gating, no-baseline-dir).
FAILING_ROWS = ("differs-gating", "no-baseline-dir")
# A message line of the summary, the console and JUnit's message attribute at most (one GoogleTest failure
# reached a summary as one line of 7,000 characters); the evidence keeps the whole text.
MESSAGE_CHARS = 300
# The summary's text blocks are wrapped at this width, and show at most MESSAGE_LINES lines of a failure and
# FAILURES_SHOWN failures of a test.
WRAP_COLUMNS = 100
MESSAGE_LINES = 20
FAILURES_SHOWN = 5


def ctest_entries(path: Path) -> Dict[str, str]:
    """ctest --output-junit's test cases: name -> status ("run", "fail", "notrun", ...)."""
    try:
        root = ET.fromstring(path.read_bytes())
    except (OSError, ET.ParseError, ValueError) as e:
        raise InputError("%s: cannot read ctest's JUnit file: %s" % (path, e))
    entries = {}
    for case in root.iter("testcase"):
        name = case.get("name") or ""
        status = case.get("status") or ("fail" if case.find("failure") is not None else "run")
        entries[name] = status
    return entries


def environment_problems(env: Dict[str, Any]) -> List[str]:
    """What in the runner's set-up keeps the run from proving its behaviors (env.json "conditions"): the
    suite needs none of these, and a test that cannot hold there skips or measures something else."""
    c = env.get("conditions") if isinstance(env.get("conditions"), dict) else {}
    found = []
    for key, variable in (("launch_blocking", "CUDA_LAUNCH_BLOCKING"), ("max_connections", "CUDA_DEVICE_MAX_CONNECTIONS")):
        if c.get(key) is not None:
            found.append("%s=%s is set in the runner's environment (the tests that need it set their own)"
                         % (variable, c.get(key)))
    if c.get("sanitizer"):
        found.append("the run was under compute-sanitizer --tool %s" % c.get("sanitizer"))
    if isinstance(c.get("mps"), dict) and c["mps"].get("active") is True:
        found.append("MPS is active on the GPU (%s)" % (c["mps"].get("evidence") or "no evidence recorded"))
    if isinstance(c.get("mig"), dict) and c["mig"].get("enabled") is True:
        found.append("the GPU is a MIG instance (%s)" % (c["mig"].get("evidence") or "no evidence recorded"))
    for p in c.get("other_compute_processes") or []:
        if isinstance(p, dict):
            found.append("another process had a context on the GPU: pid %s (%s), seen at the run's %s"
                         % (p.get("pid"), p.get("name"), p.get("seen")))
    return found


def judge(run: Dict[str, Any], ctest: Optional[Dict[str, str]] = None, require_tracing: bool = True) -> Dict[str, Any]:
    """{code, untrustworthy: [reason], regressions: [reason], failed: [name], shared: [(name, why)], counts,
    unjudged_rows, facts, ...} of a run read by load_run."""
    env, tests = run["env"], run["tests"]
    shared = [(name, shared_text(t)) for name, t in sorted(tests.items()) if outcome(t) == SHARED_GPU]
    untrustworthy = run_problems(run, ctest, require_tracing) + test_problems(tests)
    if shared:
        untrustworthy.append("%d test(s) ran beside another context on the GPU: not judged" % len(shared))
    regressions, details = regressions_of(tests)
    code = UNTRUSTWORTHY if untrustworthy else REGRESSED if regressions else PASS
    visible = dig(env, "environment", "CUDA_VISIBLE_DEVICES")
    label = ("GPUs %s" if "," in visible else "GPU %s") % visible if isinstance(visible, str) and visible else None
    return {"label": label, "code": code, "verdict": VERDICT[code], "untrustworthy": untrustworthy,
            "regressions": regressions, "failed": sorted(n for n, t in tests.items() if t["status"] == "failed"),
            "details": details, "shared": shared, "skips": skip_groups(tests.values(), not_run=True),
            "conditions": conditions_line(env), "report": artifact_path(Path(run["dir"]) / "report.html"),
            "counts": count_outcomes(tests.values()), "facts": gpu_facts(env), "run": run["id"], "dir": run["dir"],
            "unjudged_rows": unjudged_rows_line(tests.values(), baseline_arch(env, tests.values())), "source": None}


def run_problems(run: Dict[str, Any], ctest: Optional[Dict[str, str]], require_tracing: bool) -> List[str]:
    """Why the run as a whole proves nothing: where and how it ran, and what its folder lacks."""
    env = run["env"]
    found: List[str] = []
    nothing = nothing_tested_on_gpu(env, run["tests"])
    if nothing:
        found.append(nothing)
    tracing = env.get("tracing") if isinstance(env.get("tracing"), dict) else {}
    if require_tracing and tracing.get("enabled") is not True:
        found.append("tracing (CUPTI) was off: %s" % (tracing.get("reason") or "no reason recorded"))
    found.extend(environment_problems(env))
    if dig(env, "run", "finished_utc") is None:
        found.append("the run did not finish (env.json has no finish time)")
    mutation = dig(env, "environment", "STREAMCHECK_MUTATE")
    if mutation:
        found.append("a mutation was active (STREAMCHECK_MUTATE=%s): a mutation run is not a result" % mutation)
    counted = dig(env, "run", "gtest_xml_files")
    if isinstance(counted, int) and not isinstance(counted, bool) and counted != run["xml_files"]:
        found.append("env.json counts %d GoogleTest XML file(s), the folder holds %d" % (counted, run["xml_files"]))
    found.extend("unreadable: %s" % problem for problem in run["problems"])
    if not run["tests"]:
        found.append("the run holds no test result")
    for name, status in sorted((ctest or {}).items()):
        if status not in ("run", "notrun") and name not in run["entries"] and not name.startswith("streamcheck.run."):
            found.append("%s: ctest ran it (%s) and it left no list of its tests (it ended before its first test?)"
                         % (name, status))
    return found


def test_problems(tests: Dict[str, Dict[str, Any]]) -> List[str]:
    """Why single tests' results prove nothing: a result half written, a watchdog that fired, tests not run."""
    found: List[str] = []
    for name, t in sorted(tests.items()):
        if t["xml_file"] is None and t["observation_file"] is not None:
            found.append("%s: an observation file but no GoogleTest XML (its process ended early)" % name)
        elif t["claims"] and t["observation_file"] is None and not t["observation_unreadable"]:
            found.append("%s: claims %s but wrote no observation file" % (name, ", ".join(claim_ids(t))))
        for fired in unexpected_watchdogs(t):
            found.append("%s: a gate watchdog fired (%s)" % (
                name, fired.get("summary") or "gate %s holding %s" % (fmt_value(fired.get("gate")),
                                                                      fmt_value(fired.get("held")))))
    # Tests an entry was asked to run that never ran: after a test that left its process unusable, or a crash.
    not_run: Dict[str, List[str]] = {}
    for name, t in sorted(tests.items()):
        if not_run_after_process_ended(t):
            not_run.setdefault(t["not_run_reason"], []).append(name)
    for reason, names in sorted(not_run.items()):
        found.append("%d test(s) not run (%s): %s" % (len(names), ", ".join(names[:3]) +
                                                      (", ..." if len(names) > 3 else ""), reason))
    return found


def regressions_of(tests: Dict[str, Dict[str, Any]]) -> Tuple[List[str], Dict[str, List[str]]]:
    """The failed tests and the failing baseline rows, one line each, and each failed test's failure texts. A test
    not judged for a shared GPU is neither, whatever its XML and its rows say."""
    regressions: List[str] = []
    details: Dict[str, List[str]] = {}
    for name, t in sorted(tests.items()):
        if t["status"] != "failed":
            continue
        what = "documented behavior %s failed" % ", ".join(claim_ids(t)) if claims_kind(t, "documented") else \
            "failed" + (" (claims %s)" % ", ".join(claim_ids(t)) if t["claims"] else "")
        regressions.append("%s: %s%s" % (name, what, ": " + failure_reason(t) if t["failures"] else ""))
        details[name] = t["failures"]
    for name, t in sorted(tests.items()):
        if outcome(t) == SHARED_GPU:
            continue
        for row in t["baseline"]:
            if row.get("status") in FAILING_ROWS:
                regressions.append("%s: baseline row %s/%s %s (observed %s, expected %s)" % (
                    name, fmt_value(row.get("id")), fmt_value(row.get("key")), row.get("status"),
                    fmt_value(row.get("observed")), fmt_value(row.get("expected"))))
    return regressions, details


def shared_text(test: Dict[str, Any]) -> str:
    """Why a test was not judged for a shared GPU, and how many failures it kept as evidence."""
    n = len(test["failures"])
    return sharing_text(test) + ("; %d failure(s) from before the sharing was known, kept as evidence" % n if n else "")


def artifact_path(path: Path) -> Optional[str]:
    """A file's path from the folder the gate runs in where it is below it (the path a CI artifact keeps),
    else its absolute path; None when there is no such file."""
    if not path.is_file():
        return None
    relative = os.path.relpath(path)
    return str(path.resolve()) if relative.startswith("..") else relative


# GoogleTest's location of a failure: "path/file.cpp:123" on a line of its own (XML), or before the message
# ("file:line: message", an observation file's failures).
LOCATION = re.compile(r"^(\S+:\d+)(?:: Failure)?(?::\s+(.*))?$")


def split_failure(failure: str) -> Tuple[Optional[str], List[str]]:
    """(its first file:line, its message lines) of a GoogleTest failure text."""
    location, lines = None, []
    for line in failure.strip("\n").splitlines():
        found = LOCATION.match(line.strip()) if location is None else None
        if found:
            location = found.group(1)
            lines.extend([found.group(2)] if found.group(2) else [])
        else:
            lines.append(line.rstrip())
    return location, lines


def bounded(text: str, limit: int = MESSAGE_CHARS) -> str:
    """The text, or its start and how many characters the evidence has beyond it: limit characters at most."""
    if len(text) <= limit:
        return text
    keep = limit - len(" ... (%d more characters)" % len(text))
    return "%s ... (%d more characters)" % (text[:keep], len(text) - keep)


def one_line(failure: str) -> str:
    """A failure on one bounded line: its file:line, then its message."""
    location, lines = split_failure(failure)
    message = " ".join(line.strip() for line in lines if line.strip())
    return bounded("%s: %s" % (location, message) if location else message)


def failure_reason(test: Dict[str, Any]) -> str:
    """The test's first failure on one bounded line, and how many more it had."""
    more = len(test["failures"]) - 1
    return one_line(test["failures"][0]) + ("; and %d more failure(s)" % more if more > 0 else "")


def failure_block(failures: List[str]) -> str:
    """The failures as the summary shows them: each its file:line, then its message lines, each bounded and
    wrapped at WRAP_COLUMNS; at most MESSAGE_LINES lines of a failure and FAILURES_SHOWN failures."""
    blocks = []
    for failure in failures[:FAILURES_SHOWN]:
        location, lines = split_failure(failure)
        out = [location] if location else []
        for line in lines[:MESSAGE_LINES]:
            text = bounded(line)
            indent = text[:len(text) - len(text.lstrip())]
            out.extend([text] if len(text) <= WRAP_COLUMNS else
                       textwrap.wrap(text, WRAP_COLUMNS, subsequent_indent=indent, break_on_hyphens=False))
        if len(lines) > MESSAGE_LINES:
            out.append("... %d more line(s): the JUnit file and the report have the whole text"
                       % (len(lines) - MESSAGE_LINES))
        blocks.append("\n".join(out))
    if len(failures) > FAILURES_SHOWN:
        blocks.append("... %d more failure(s) in the JUnit file and the report" % (len(failures) - FAILURES_SHOWN))
    return "\n\n".join(blocks)


def conditions_line(env: Dict[str, Any]) -> str:
    """The runner's set-up as the run found it, one line, also when nothing is wrong with it."""
    c = env.get("conditions") if isinstance(env.get("conditions"), dict) else {}
    if not c:
        return "not recorded"
    parts = ["mode %s" % (dig(env, "run", "mode") or "isolated")]
    for key, variable in (("cuda_visible_devices", "CUDA_VISIBLE_DEVICES"), ("launch_blocking", "CUDA_LAUNCH_BLOCKING"),
                          ("max_connections", "CUDA_DEVICE_MAX_CONNECTIONS")):
        parts.append("%s %s" % (variable, "unset" if c.get(key) is None else "=" + str(c.get(key))))
    parts.append("compute mode %s" % (dig(c, "compute_mode", "name") or "unknown"))
    parts.append("MPS %s" % {True: "on", False: "off"}.get(dig(c, "mps", "active"), "unknown"))
    parts.append("MIG %s" % {True: "on", False: "off"}.get(dig(c, "mig", "enabled"), "unknown"))
    parts.append("sanitizer %s" % (c.get("sanitizer") or "none"))
    others = c.get("other_compute_processes") or []
    parts.append("%d other process(es) on the GPU" % len(others) if others else "no other process on the GPU")
    parts[-1] += process_source_text(c.get("compute_process_source"))
    coordinated = c.get("coordinated_compute_processes") or []
    if coordinated:
        parts.append("%d test process(es) of other streamcheck runs, kept apart by the GPU lock" % len(coordinated))
    parts.append("tracing %s" % ("on" if dig(env, "tracing", "enabled") is True else "off"))
    return ", ".join(parts)


def process_source_text(source: Any) -> str:
    """What listed the GPU's processes (env.json 1.7 conditions.compute_process_source), as a tail: " (nvml)";
    where nothing could, why (each test's own timer gaps still tell a shared GPU)."""
    if not isinstance(source, str) or not source:
        return ""
    return " (listed by %s)" % source if not source.startswith("none") else " (processes not listed: %s)" % source


def facts_line(verdict: Dict[str, Any]) -> str:
    f = verdict["facts"]
    return "%s, driver %s, runtime %s, commit %s" % (
        " ".join(str(x) for x in (f["gpu"] or "no GPU", f["arch"]) if x), driver_text(f.get("driver_release"), f["driver"]),
        cuda_version(f["runtime"]),
        (str(f["commit"])[:12] if f["commit"] else "unknown"))


def md_cell(text: Any) -> str:
    """Text for a Markdown list item or table cell: no markup, no line breaks."""
    return escape(str(text)).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def md_message(text: Any) -> str:
    """A message for a Markdown list item or table cell, bounded (MESSAGE_CHARS)."""
    return md_cell(bounded(str(text)))


def md_block(text: str, indent: str = "  ") -> List[str]:
    """A fenced block of text, indented under a list item; no fence inside it can close it."""
    fence = "~~~~"
    while fence in text:
        fence += "~"
    return [indent + fence + "text"] + [indent + line if line else "" for line in text.splitlines()] + [indent + fence]


def md_list(heading: str, items: List[str], limit: int) -> List[str]:
    """A heading with its count, then an item (Markdown already) per line, the first limit of them."""
    if not items:
        return []
    out = ["%s (%d)" % (heading, len(items))] + ["- %s" % item for item in items[:limit]]
    if len(items) > limit:
        out.append("- ... %d more (the JUnit file and the report have every one)" % (len(items) - limit))
    return out + [""]


def md_regressions(verdict: Dict[str, Any], heading: str, limit: int) -> List[str]:
    """Each regression on a line; a failed test's failures under it, bounded (failure_block)."""
    regressions = verdict["regressions"]
    if not regressions:
        return []
    out = ["%s (%d)" % (heading, len(regressions))]
    details = verdict.get("details") or {}
    for item in regressions[:limit]:
        name = item.split(": ", 1)[0]
        if details.get(name):
            out.append("- **%s**: %s" % (md_cell(name), md_message(item.split(": ", 2)[1])))
            out.extend(md_block(failure_block(details[name])))
        else:
            out.append("- %s" % md_message(item))
    if len(regressions) > limit:
        out.append("- ... %d more (the JUnit file and the report have every one)" % (len(regressions) - limit))
    return out + [""]


def md_skips(skips: List[Tuple[str, int]], heading: str, limit: int) -> List[str]:
    if not skips:
        return []
    out = [heading, "", "| tests | reason |", "|---:|---|"]
    out.extend("| %d | %s |" % (n, md_message(reason)) for reason, n in skips[:limit])
    if len(skips) > limit:
        out.append("| %d | (%d more reasons) |" % (sum(n for _, n in skips[limit:]), len(skips) - limit))
    return out + [""]


def markdown(verdict: Dict[str, Any], limit: int = 50, level: int = 2) -> str:
    """The summary for $GITHUB_STEP_SUMMARY or a GitLab note: the verdict (with the rows no baseline judged),
    the GPU and driver, the runner's set-up, why the run is not trustworthy, each regression with its failures,
    the tests not judged for a shared GPU, the skips by reason, and where the report is. level: the heading
    level of its title (one run of several: 3)."""
    c = verdict["counts"]
    title = "streamcheck gate" if level == 2 else "Run of %s" % (verdict.get("label") or verdict["run"])
    sub = "#" * (level + 1)
    out = ["%s %s: %s (exit %d)%s" % ("#" * level, title, verdict["verdict"], verdict["code"],
                                      "; " + verdict["unjudged_rows"] if verdict.get("unjudged_rows") else ""), "",
           "Run `%s` on %s." % (md_cell(verdict["run"]), md_cell(facts_line(verdict))), ""]
    if verdict.get("source"):
        out.extend(["Source tree: %s." % md_cell(verdict["source"]), ""])
    out.extend(["Conditions: %s." % md_cell(verdict.get("conditions") or "not recorded"), "",
                "| %s |" % " | ".join(COUNT_LABEL.values()), "|%s" % ("---:|" * len(COUNT_LABEL)),
                "| %s |" % " | ".join(str(c[key]) for key in COUNT_LABEL), ""])
    out.extend(md_list(sub + " Why the run is not trustworthy", [md_message(x) for x in verdict["untrustworthy"]],
                       limit))
    out.extend(md_regressions(verdict, sub + " Regressions", limit))
    out.extend(md_list(sub + " Not judged: the GPU was shared", ["**%s**: %s" % (md_cell(name), md_message(why))
                                                                for name, why in verdict.get("shared") or []], limit))
    out.extend(md_skips(verdict.get("skips") or [], sub + " Skipped or not run, by reason", limit))
    if verdict.get("report"):
        out.extend(["Report: `%s`" % md_cell(verdict["report"]), ""])
    return "\n".join(out) + "\n"


def machine_markdown(results: List[Dict[str, Any]], page: Optional[str]) -> str:
    """The summary of several runs of one machine (a run per GPU, one per pair of GPUs): the worst verdict with
    the rows no baseline judged, one line per run, the machine page, then each run's summary."""
    worst = max(r["verdict"]["code"] for r in results)
    unjudged = sorted({r["verdict"]["unjudged_rows"] for r in results if r["verdict"].get("unjudged_rows")})
    out = ["## streamcheck gate: %s (exit %d)%s" % (VERDICT[worst], worst, "".join("; " + u for u in unjudged)), "",
           "| run | GPUs | verdict |", "|---|---|---|"]
    out.extend("| `%s` | %s | %s (exit %d) |" % (md_cell(r["verdict"]["run"]), md_cell(r["verdict"].get("label") or ""),
                                               md_cell(r["verdict"]["verdict"]), r["verdict"]["code"]) for r in results)
    out.append("")
    if page:
        out.extend(["Machine page (what differs between the GPUs): `%s`" % md_cell(page), ""])
    return "\n".join(out) + "\n" + "".join(markdown(r["verdict"], level=3) for r in results)


def junit(run: Dict[str, Any], verdict: Dict[str, Any]) -> str:
    """JUnit XML: one test case per test (claim IDs and kinds as properties, skip reasons, failure text), and one
    for the gate's judgement of the run itself."""
    return junit_document([(run, verdict)])


def junit_document(judged: List[Tuple[Dict[str, Any], Dict[str, Any]]]) -> str:
    """JUnit XML of one or more judged runs: a test suite each."""
    suites = [junit_suite(run, verdict) for run, verdict in judged]
    tests = sum(s[1] for s in suites)
    failures = sum(s[2] for s in suites)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="streamcheck" tests="%d" failures="%d">\n%s'
            '</testsuites>\n' % (tests, failures, "".join(s[0] for s in suites)))


def junit_result(t: Dict[str, Any]) -> str:
    """A test case's result: a failure (a bounded message naming its file:line, the whole text in the body), or
    a skip with its reason; a test not judged for a shared GPU is a skip, its failures kept as its output."""
    kind = outcome(t)
    if kind == "failed":
        return "<failure message=%s>%s</failure>" % (quoteattr(failure_reason(t) if t["failures"] else "failed"),
                                                     escape("\n\n".join(t["failures"]) or "failed"))
    if kind == SHARED_GPU:
        out = "<skipped message=%s/>" % quoteattr(bounded("%s: %s" % (SHARED_GPU_LABEL, shared_text(t))))
        return out + ("<system-out>%s</system-out>" % escape("\n\n".join(t["failures"])) if t["failures"] else "")
    if kind == "skipped":
        return "<skipped message=%s/>" % quoteattr(bounded(t["skip_reason"] or "(no reason given)"))
    if kind == "notrun":
        why = "; ".join(t["notes"]) or "no reason recorded"
        return "<skipped message=%s/>" % quoteattr(bounded("not run: " + why))
    return ""


def junit_suite(run: Dict[str, Any], verdict: Dict[str, Any]) -> Tuple[str, int, int]:
    cases = []
    for name, t in sorted(run["tests"].items()):
        classname, _, short = name.rpartition(".")
        props = "".join('<property name="claim" value=%s/>' % quoteattr("%s (%s)" % (c.get("id"), c.get("kind")))
                        for c in t["claims"])
        if t["mutation"]:
            props += '<property name="mutation" value=%s/>' % quoteattr(str(t["mutation"]))
        body = ("<properties>%s</properties>" % props if props else "") + junit_result(t)
        seconds = (t["duration_ms"] or 0.0) / 1000.0
        cases.append('<testcase classname=%s name=%s time="%.3f">%s</testcase>' % (
            quoteattr(classname or t["family"]), quoteattr(short or name), seconds, body))
    trust = "\n".join(verdict["untrustworthy"])
    cases.append('<testcase classname="streamcheck.gate" name="RunIsTrustworthy" time="0">%s</testcase>' % (
        "<failure message=%s>%s</failure>" % (quoteattr(bounded(verdict["untrustworthy"][0])), escape(trust))
        if trust else ""))
    c = verdict["counts"]
    failures = c["failed"] + (1 if trust else 0)
    name = "streamcheck " + verdict["run"] + (" (%s)" % verdict["label"] if verdict.get("label") else "")
    return ('<testsuite name=%s tests="%d" failures="%d" skipped="%d">\n%s\n</testsuite>\n' % (
        quoteattr(name), len(cases), failures, c["skipped"] + c[SHARED_GPU] + c["notrun"], "\n".join(cases)),
        len(cases), failures)


def gate(run_dir: Path, require_tracing: bool = True, source: Optional[Path] = None) -> Dict[str, Any]:
    """judge() of a run folder, with ctest's record of the run (RUN_DIR/junit.xml, where ci/run_suite.sh puts
    ctest --output-junit's file) when it has one: it names tests that ctest ran but that left no result (a
    crash, a timeout). source: the tree the report reads its plans and baselines from; the verdict says when it
    is at another commit than the run. A folder that is not a run is untrustworthy (code 2), not an exception."""
    junit = Path(run_dir) / "junit.xml"
    try:
        run = load_run(run_dir)
        ctest = ctest_entries(junit) if junit.is_file() else None
    except InputError as e:
        run = {"id": Path(run_dir).name, "dir": str(run_dir), "env": {}, "tests": {}, "problems": [],
               "xml_files": 0, "entries": {}}
        verdict = judge(run, None, require_tracing=False)
        verdict.update(code=UNTRUSTWORTHY, verdict=VERDICT[UNTRUSTWORTHY], untrustworthy=[str(e)],
                       conditions="not recorded", report=None)
        return {"run": run, "verdict": verdict}
    verdict = judge(run, ctest, require_tracing)
    verdict["source"] = source_mismatch(run["env"], source) if source is not None else None
    return {"run": run, "verdict": verdict}


def summary_lines(verdict: Dict[str, Any]) -> List[str]:
    """The judgement for a log: first the rows no baseline judged (what the verdict does not cover), then the
    run, its counts, the source tree when it is at another commit, each reason, and the verdict."""
    c = verdict["counts"]
    lines = ["gate: %s" % verdict["unjudged_rows"]] if verdict.get("unjudged_rows") else []
    lines.extend(["gate: %s" % facts_line(verdict),
                  "gate: %s" % ", ".join("%d %s" % (c[key], label) for key, label in COUNT_LABEL.items())])
    if verdict.get("source"):
        lines.append("gate: source tree: %s" % verdict["source"])
    lines.extend("gate: not trustworthy: %s" % r for r in verdict["untrustworthy"])
    lines.extend("gate: regression: %s" % r for r in verdict["regressions"])
    if verdict.get("report"):
        lines.append("gate: report %s" % verdict["report"])
    lines.append("gate: %s (exit %d)" % (verdict["verdict"], verdict["code"]))
    return lines
