"""The gate's judgement of one run, for GPU runners, built on the one results reader:

    0  every behavior as expected
    1  a behavior regressed: a test failed (a documented claim, or any other test), or a baseline row that
       gates differs (differs-gating; no-baseline-dir, a wrong source tree, fails the same way)
    2  the run is not trustworthy, whatever its tests say: no GPU was used, the runner's set-up keeps the
       behaviors from being shown (CUDA_LAUNCH_BLOCKING or CUDA_DEVICE_MAX_CONNECTIONS set, a compute-sanitizer
       tool, MPS, a MIG instance, another process with a context on the GPU), tracing (CUPTI) was off where it is
       required, the results folder is incomplete (no env.json, a result file unreadable, a test ctest ran
       without any list of its tests, a test an entry listed without its result, a test with a claim without
       its observation file, the run not finished,
       env.json's XML count not matching), a gate watchdog fired unexpectedly, or a mutation was active

Also the run as a Markdown summary (GitHub step summary, GitLab note) and as JUnit XML whose test cases carry
their claim IDs and skip reasons. Python 3.9+ standard library only.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from xml.sax.saxutils import escape, quoteattr

from .common import InputError, cuda_version, dig, driver_text, fmt_value
from .model import skip_groups
from .results import (claim_ids, claims_kind, gpu_facts, load_run, not_run_after_process_ended, nothing_tested_on_gpu,
                      unexpected_watchdogs)

PASS, REGRESSED, UNTRUSTWORTHY = 0, 1, 2
VERDICT = {PASS: "passed: every behavior as expected", REGRESSED: "FAILED: a behavior regressed",
           UNTRUSTWORTHY: "NOT TRUSTWORTHY: the run proves nothing"}
# Baseline row statuses that fail a test (observation schema: differs-gating, no-baseline-dir).
FAILING_ROWS = ("differs-gating", "no-baseline-dir")


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
    for t in c.get("time_sliced_tests") or []:
        if isinstance(t, dict):
            e = t.get("evidence") if isinstance(t.get("evidence"), dict) else {}
            found.append("the GPU was shared with another context while %s ran: a block of %s stopped for %s us "
                         "(bound %s us), so its rows were not judged"
                         % (t.get("test"), e.get("grid"), fmt_us(e.get("widest_gap_ns")), fmt_us(e.get("bound_ns"))))
    return found


def fmt_us(ns: Any) -> str:
    return "%d" % (ns // 1000) if isinstance(ns, int) and not isinstance(ns, bool) else "?"



def judge(run: Dict[str, Any], ctest: Optional[Dict[str, str]] = None, require_tracing: bool = True) -> Dict[str, Any]:
    """{code, untrustworthy: [reason], regressions: [reason], failed: [name], facts} of a run read by load_run."""
    env = run["env"]
    untrustworthy: List[str] = []
    nothing = nothing_tested_on_gpu(env, run["tests"])
    if nothing:
        untrustworthy.append(nothing)
    tracing = env.get("tracing") if isinstance(env.get("tracing"), dict) else {}
    if require_tracing and tracing.get("enabled") is not True:
        untrustworthy.append("tracing (CUPTI) was off: %s" % (tracing.get("reason") or "no reason recorded"))
    untrustworthy.extend(environment_problems(env))
    if dig(env, "run", "finished_utc") is None:
        untrustworthy.append("the run did not finish (env.json has no finish time)")
    mutation = dig(env, "environment", "STREAMCHECK_MUTATE")
    if mutation:
        untrustworthy.append("a mutation was active (STREAMCHECK_MUTATE=%s): a mutation run is not a result" % mutation)
    counted = dig(env, "run", "gtest_xml_files")
    if isinstance(counted, int) and not isinstance(counted, bool) and counted != run["xml_files"]:
        untrustworthy.append("env.json counts %d GoogleTest XML file(s), the folder holds %d" % (counted, run["xml_files"]))
    for problem in run["problems"]:
        untrustworthy.append("unreadable: %s" % problem)
    tests = run["tests"]
    if not tests:
        untrustworthy.append("the run holds no test result")
    if ctest is not None:
        for name, status in sorted(ctest.items()):
            if status not in ("run", "notrun") and name not in run["entries"] and not name.startswith("streamcheck.run."):
                untrustworthy.append("%s: ctest ran it (%s) and it left no list of its tests (it ended before its "
                                     "first test?)" % (name, status))
    for name, t in sorted(tests.items()):
        if t["xml_file"] is None and t["observation_file"] is not None:
            untrustworthy.append("%s: an observation file but no GoogleTest XML (its process ended early)" % name)
        elif t["claims"] and t["observation_file"] is None and not t["observation_unreadable"]:
            untrustworthy.append("%s: claims %s but wrote no observation file" % (name, ", ".join(claim_ids(t))))
        for fired in unexpected_watchdogs(t):
            untrustworthy.append("%s: a gate watchdog fired (%s)" % (
                name, fired.get("summary") or "gate %s holding %s" % (fmt_value(fired.get("gate")),
                                                                      fmt_value(fired.get("held")))))

    # Tests an entry was asked to run that never ran: after a test that left its process unusable, or a crash.
    not_run: Dict[str, List[str]] = {}
    for name, t in sorted(tests.items()):
        if not_run_after_process_ended(t):
            not_run.setdefault(t["not_run_reason"], []).append(name)
    for reason, names in sorted(not_run.items()):
        untrustworthy.append("%d test(s) not run (%s): %s" % (len(names), ", ".join(names[:3]) +
                                                              (", ..." if len(names) > 3 else ""), reason))

    regressions: List[str] = []
    details: Dict[str, str] = {}
    failed = sorted(n for n, t in tests.items() if t["status"] == "failed")
    for name in failed:
        t = tests[name]
        what = "documented behavior %s failed" % ", ".join(claim_ids(t)) if claims_kind(t, "documented") else \
            "failed" + (" (claims %s)" % ", ".join(claim_ids(t)) if t["claims"] else "")
        regressions.append("%s: %s%s" % (name, what, ": " + failure_reason(t) if t["failures"] else ""))
        details[name] = "\n\n".join(f.strip() for f in t["failures"])
    for name, t in sorted(tests.items()):
        for row in t["baseline"]:
            if row.get("status") in FAILING_ROWS:
                regressions.append("%s: baseline row %s/%s %s (observed %s, expected %s)" % (
                    name, fmt_value(row.get("id")), fmt_value(row.get("key")), row.get("status"),
                    fmt_value(row.get("observed")), fmt_value(row.get("expected"))))
    code = UNTRUSTWORTHY if untrustworthy else REGRESSED if regressions else PASS
    counts = {s: sum(1 for t in tests.values() if t["status"] == s) for s in ("passed", "failed", "skipped", "notrun")}
    visible = dig(env, "environment", "CUDA_VISIBLE_DEVICES")
    label = ("GPUs %s" if "," in visible else "GPU %s") % visible if isinstance(visible, str) and visible else None
    return {"label": label,"code": code, "verdict": VERDICT[code], "untrustworthy": untrustworthy, "regressions": regressions,
            "failed": failed, "details": details, "skips": skip_groups(tests.values(), not_run=True), "conditions": conditions_line(env),
            "report": artifact_path(Path(run["dir"]) / "report.html"),
            "counts": counts, "facts": gpu_facts(env), "run": run["id"], "dir": run["dir"]}


def artifact_path(path: Path) -> Optional[str]:
    """A file's path from the folder the gate runs in where it is below it (the path a CI artifact keeps),
    else its absolute path; None when there is no such file."""
    if not path.is_file():
        return None
    relative = os.path.relpath(path)
    return str(path.resolve()) if relative.startswith("..") else relative


LOCATION = re.compile(r"^\S+:\d+(: Failure)?$")


def failure_reason(test: Dict[str, Any]) -> str:
    """Every failure of a test on one line, whole: GoogleTest's location lines (file:line) left out."""
    parts = []
    for failure in test["failures"]:
        lines = [line.strip() for line in failure.splitlines() if line.strip()]
        parts.append(" ".join(line for line in lines if not LOCATION.match(line)) or " ".join(lines))
    return "; ".join(p for p in parts if p)


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
    coordinated = c.get("coordinated_compute_processes") or []
    if coordinated:
        parts.append("%d test process(es) of other streamcheck runs, kept apart by the GPU lock" % len(coordinated))
    parts.append("tracing %s" % ("on" if dig(env, "tracing", "enabled") is True else "off"))
    return ", ".join(parts)


def facts_line(verdict: Dict[str, Any]) -> str:
    f = verdict["facts"]
    return "%s, driver %s, runtime %s, commit %s" % (
        " ".join(str(x) for x in (f["gpu"] or "no GPU", f["arch"]) if x), driver_text(f.get("driver_release"), f["driver"]),
        cuda_version(f["runtime"]),
        (str(f["commit"])[:12] if f["commit"] else "unknown"))


def md_cell(text: Any) -> str:
    """Text for a Markdown list item or table cell: no markup, no line breaks."""
    return escape(str(text)).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def md_block(text: str, indent: str = "  ") -> List[str]:
    """A fenced block of text, indented under a list item; no fence inside it can close it."""
    fence = "~~~~"
    while fence in text:
        fence += "~"
    return [indent + fence + "text"] + [indent + line if line else "" for line in text.splitlines()] + [indent + fence]


def markdown(verdict: Dict[str, Any], limit: int = 50, level: int = 2) -> str:
    """The summary for $GITHUB_STEP_SUMMARY or a GitLab note: the verdict, the GPU and driver, the runner's
    set-up, why the run is not trustworthy, each regression with its whole failure text, the skips by reason,
    and where the report is. level: the heading level of its title (one run of several: 3)."""
    c = verdict["counts"]
    title = "streamcheck gate" if level == 2 else "Run of %s" % (verdict.get("label") or verdict["run"])
    sub = "#" * (level + 1)
    out = ["%s %s: %s (exit %d)" % ("#" * level, title, verdict["verdict"], verdict["code"]), "",
           "Run `%s` on %s." % (md_cell(verdict["run"]), md_cell(facts_line(verdict))), "",
           "Conditions: %s." % md_cell(verdict.get("conditions") or "not recorded"), "",
           "| passed | failed | skipped | not run |", "|---:|---:|---:|---:|",
           "| %d | %d | %d | %d |" % (c["passed"], c["failed"], c["skipped"], c["notrun"]), ""]
    if verdict["untrustworthy"]:
        out.append("%s Why the run is not trustworthy (%d)" % (sub, len(verdict["untrustworthy"])))
        out.extend("- %s" % md_cell(item) for item in verdict["untrustworthy"][:limit])
        if len(verdict["untrustworthy"]) > limit:
            out.append("- ... %d more" % (len(verdict["untrustworthy"]) - limit))
        out.append("")
    if verdict["regressions"]:
        out.append("%s Regressions (%d)" % (sub, len(verdict["regressions"])))
        details = verdict.get("details") or {}
        for item in verdict["regressions"][:limit]:
            name = item.split(": ", 1)[0]
            if name in details and details[name]:
                out.append("- **%s**: %s" % (md_cell(name), md_cell(item.split(": ", 2)[1])))
                out.extend(md_block(details[name]))
            else:
                out.append("- %s" % md_cell(item))
        if len(verdict["regressions"]) > limit:
            out.append("- ... %d more (the JUnit file and the report have every one)" % (len(verdict["regressions"]) - limit))
        out.append("")
    skips = verdict.get("skips") or []
    if skips:
        out.extend(["%s Skipped or not run, by reason" % sub, "", "| tests | reason |", "|---:|---|"])
        out.extend("| %d | %s |" % (n, md_cell(reason)) for reason, n in skips[:limit])
        if len(skips) > limit:
            out.append("| %d | (%d more reasons) |" % (sum(n for _, n in skips[limit:]), len(skips) - limit))
        out.append("")
    if verdict.get("report"):
        out.extend(["Report: `%s`" % md_cell(verdict["report"]), ""])
    return "\n".join(out) + "\n"


def machine_markdown(results: List[Dict[str, Any]], page: Optional[str]) -> str:
    """The summary of several runs of one machine (a run per GPU, one per pair of GPUs): the worst verdict,
    one line per run, the machine page, then each run's summary."""
    worst = max(r["verdict"]["code"] for r in results)
    out = ["## streamcheck gate: %s (exit %d)" % (VERDICT[worst], worst), "",
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


def junit_suite(run: Dict[str, Any], verdict: Dict[str, Any]) -> Tuple[str, int, int]:
    cases = []
    for name, t in sorted(run["tests"].items()):
        classname, _, short = name.rpartition(".")
        props = "".join('<property name="claim" value=%s/>' % quoteattr("%s (%s)" % (c.get("id"), c.get("kind")))
                        for c in t["claims"])
        if t["mutation"]:
            props += '<property name="mutation" value=%s/>' % quoteattr(str(t["mutation"]))
        body = "<properties>%s</properties>" % props if props else ""
        if t["status"] == "failed":
            text = "\n\n".join(t["failures"]) or "failed"
            body += "<failure message=%s>%s</failure>" % (quoteattr(failure_reason(t) if t["failures"] else "failed"),
                                                         escape(text[:20000]))
        elif t["status"] == "skipped":
            body += "<skipped message=%s/>" % quoteattr(t["skip_reason"] or "(no reason given)")
        elif t["status"] == "notrun":
            body += "<skipped message=%s/>" % quoteattr("not run: " + "; ".join(t["notes"])[:500])
        seconds = (t["duration_ms"] or 0.0) / 1000.0
        cases.append('<testcase classname=%s name=%s time="%.3f">%s</testcase>' % (
            quoteattr(classname or t["family"]), quoteattr(short or name), seconds, body))
    trust = "\n".join(verdict["untrustworthy"])
    cases.append('<testcase classname="streamcheck.gate" name="RunIsTrustworthy" time="0">%s</testcase>' % (
        "<failure message=%s>%s</failure>" % (quoteattr(verdict["untrustworthy"][0][:500]), escape(trust))
        if trust else ""))
    c = verdict["counts"]
    failures = c["failed"] + (1 if trust else 0)
    name = "streamcheck " + verdict["run"] + (" (%s)" % verdict["label"] if verdict.get("label") else "")
    return ('<testsuite name=%s tests="%d" failures="%d" skipped="%d">\n%s\n</testsuite>\n' % (
        quoteattr(name), len(cases), failures, c["skipped"] + c["notrun"], "\n".join(cases)), len(cases), failures)


def gate(run_dir: Path, require_tracing: bool = True) -> Dict[str, Any]:
    """judge() of a run folder, with ctest's record of the run (RUN_DIR/junit.xml, where ci/run_suite.sh puts
    ctest --output-junit's file) when it has one: it names tests that ctest ran but that left no result (a
    crash, a timeout). A folder that is not a run is untrustworthy (code 2), not an exception."""
    junit = Path(run_dir) / "junit.xml"
    try:
        run = load_run(run_dir)
        ctest = ctest_entries(junit) if junit.is_file() else None
    except InputError as e:
        run = {"id": Path(run_dir).name, "dir": str(run_dir), "env": {}, "tests": {}, "problems": [],
               "xml_files": 0}
        verdict = {"code": UNTRUSTWORTHY, "verdict": VERDICT[UNTRUSTWORTHY], "untrustworthy": [str(e)],
                   "regressions": [], "failed": [], "details": {}, "skips": [], "conditions": "not recorded",
                   "report": None, "counts": {"passed": 0, "failed": 0, "skipped": 0, "notrun": 0},
                   "facts": gpu_facts({}), "run": run["id"], "dir": run["dir"]}
        return {"run": run, "verdict": verdict}
    return {"run": run, "verdict": judge(run, ctest, require_tracing)}


def summary_lines(verdict: Dict[str, Any]) -> List[str]:
    c = verdict["counts"]
    lines = ["gate: %s" % facts_line(verdict),
             "gate: %s passed, %s failed, %s skipped, %s not run" % (c["passed"], c["failed"], c["skipped"],
                                                                    c["notrun"])]
    lines.extend("gate: not trustworthy: %s" % r for r in verdict["untrustworthy"])
    lines.extend("gate: regression: %s" % r for r in verdict["regressions"])
    if verdict.get("report"):
        lines.append("gate: report %s" % verdict["report"])
    lines.append("gate: %s (exit %d)" % (verdict["verdict"], verdict["code"]))
    return lines

