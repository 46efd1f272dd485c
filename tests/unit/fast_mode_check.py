#!/usr/bin/env python3
"""Host check of fast mode's per-test results (fixtures/include/sc/fixtures/fast_mode.hpp).

usage: fast_mode_check.py SAMPLE_EXE WORK_DIR

1. Every sample test is run as isolated mode runs it (its own process, GoogleTest's --gtest_output=xml) and
   all together as fast mode runs them (one process, --streamcheck-mode=fast): the two XML files of each
   test must be the same apart from times and timestamps, and the run folder reader
   (reports/streamcheck/results.py) must read the same result from both.
2. A simulated sticky error (SC_SAMPLE_BREAK=1) must end the fast process with exit status 3 and a one-line
   message naming the test; the tests after it must each have an XML file that the reader reads as not run,
   with the reason "<that test> left the process unusable: ..." (the XML itself marks it notrun and carries a
   failure, for tools that read only GoogleTest's format), and the manifest must list every test.
3. A fast process whose tests all skip exits with 77 (the entries' SKIP_RETURN_CODE).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reports"))
from streamcheck.results import parse_gtest_xml  # noqa: E402

PREFIX = "sample."
COMPARED = ["Sample.*", "Values/SampleFixture.*"]
TIMES = re.compile(r' (time|timestamp)="[^"]*"')


def run(cmd, env=None):
    merged = dict(os.environ, STREAMCHECK_TRACE="off")
    merged.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=merged, timeout=60)


def listed(exe, pattern):
    out = run([exe, "--gtest_list_tests", "--gtest_filter=" + pattern]).stdout
    names, suite = [], ""
    for line in out.splitlines():
        if not line.startswith(" ") and line.endswith("."):
            suite = line
        elif line.startswith("  "):
            names.append(suite + line.split()[0])
    return names


def without_times(path):
    return TIMES.sub("", path.read_text())


def reader_view(path, stem):
    tests = parse_gtest_xml(path, stem)
    if len(tests) != 1:
        raise AssertionError("%s: %d test cases" % (path, len(tests)))
    test = tests[0]
    for key in ("xml_file", "duration_ms"):
        test.pop(key)
    return test


def main():
    exe, work = sys.argv[1], Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    problems = []

    # 1. The same results both ways.
    names = [n for p in COMPARED for n in listed(exe, p)]
    if len(names) < 6:
        problems.append("the sample lists only %s" % names)
    for name in names:
        out = work / "isolated" / (PREFIX + name + ".xml")
        run([exe, "--gtest_filter=" + name, "--gtest_output=xml:%s" % out, "--streamcheck-prefix=" + PREFIX])
    fast = run([exe, "--gtest_filter=" + ":".join(COMPARED), "--streamcheck-mode=fast",
                "--streamcheck-results=%s" % (work / "fast"), "--streamcheck-prefix=" + PREFIX])
    if fast.returncode != 1:
        problems.append("the fast run of tests that fail on purpose exited %d, expected 1" % fast.returncode)
    for name in names:
        iso = work / "isolated" / (PREFIX + name + ".xml")
        got = work / "fast" / "gtest" / (PREFIX + name + ".xml")
        if not got.is_file():
            problems.append("%s: fast mode wrote no XML" % name)
            continue
        if without_times(iso) != without_times(got):
            problems.append("%s: the XML differs beyond times:\n--- GoogleTest\n%s--- fast mode\n%s"
                            % (name, without_times(iso), without_times(got)))
        if reader_view(iso, PREFIX + name) != reader_view(got, PREFIX + name):
            problems.append("%s: results.py reads %r from GoogleTest's file and %r from fast mode's"
                            % (name, reader_view(iso, PREFIX + name), reader_view(got, PREFIX + name)))
    manifest = work / "fast" / "fast" / (PREFIX + "fast.json")
    if not manifest.is_file() or json.loads(manifest.read_text())["tests"] != [PREFIX + n for n in names]:
        problems.append("the manifest %s does not list the tests in order" % manifest)

    # 2. A simulated sticky error ends the process.
    folder = work / "broken"
    broken = run([exe, "--gtest_filter=Breaking.*", "--streamcheck-mode=fast", "--streamcheck-results=%s" % folder,
                  "--streamcheck-prefix=" + PREFIX], env={"SC_SAMPLE_BREAK": "1"})
    breaker = PREFIX + "Breaking.LeavesTheProcessUnusable"
    if broken.returncode != 3:
        problems.append("the broken fast run exited %d, expected 3" % broken.returncode)
    lines = [l for l in broken.stderr.splitlines() if "left the process unusable" in l]
    if len(lines) != 1 or breaker not in lines[0] or "2 remaining test(s) reported as not run" not in lines[0]:
        problems.append("the broken run's message is missing or wrong: %r" % broken.stderr)
    expected = {"Breaking.RunsFirst": "passed", "Breaking.LeavesTheProcessUnusable": "passed",
                "Breaking.WouldRunNext": "notrun", "Breaking.WouldRunLast": "notrun"}
    for name, status in expected.items():
        path = folder / "gtest" / (PREFIX + name + ".xml")
        if not path.is_file():
            problems.append("%s: no XML after the simulated sticky error" % name)
            continue
        test = parse_gtest_xml(path, PREFIX + name)[0]
        if test["status"] != status:
            problems.append("%s: read as %s, expected %s" % (name, test["status"], status))
        reason = test.get("not_run_reason") or ""
        if status == "notrun" and not (reason.startswith(breaker) and "simulated sticky error" in reason):
            problems.append("%s: the not-run reason does not name %s: %r" % (name, breaker, reason))
        case = ET.parse(path).getroot().find(".//testcase")
        if status == "notrun" and (case.get("status") != "notrun" or case.find("failure") is None):
            # GoogleTest-only readers (ctest's JUnit consumers) must see it as a failure, not a pass.
            problems.append("%s: the testcase is not marked notrun with a failure" % name)

    # 3. Every test skipped: exit status 77.
    skipped = run([exe, "--gtest_filter=AllSkipped.*", "--streamcheck-mode=fast",
                   "--streamcheck-results=%s" % (work / "skipped"), "--streamcheck-prefix=" + PREFIX])
    if skipped.returncode != 77:
        problems.append("a fast run whose tests all skip exited %d, expected 77" % skipped.returncode)

    for p in problems:
        print("FAIL: " + p)
    print("fast mode check: %d sample test(s) compared, %d problem(s)" % (len(names), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
