#!/usr/bin/env python3
"""Where a run's time went, per family: ctest's wall time per entry (from its JUnit file) split into
process start-up and exit (what the fixture did not see), fixture set-up (device choice, and once per
process, which under ctest is every entry, the CUDA context, kernel loading and calibration) and the test
bodies (with teardown). In fast mode an entry is a process running many tests (its list in the run folder's
entries/ says which), and its set-up and bodies are the sums of its tests'. A second table splits the
set-up into its steps (observation schema 1.6), for the first test of each process (which creates the
context) and for the tests after it.

    ci/family_time.py JUNIT_XML RUN_DIR [--label LABEL]

JUNIT_XML: ctest --output-junit's file; RUN_DIR: the run's results folder, read with the report's results
reader (reports/streamcheck/results.py).
"""
import argparse
import math
import statistics
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


from streamcheck.common import InputError  # the one results reader (ci/streamcheck is reports/streamcheck)
from streamcheck.results import load_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit")
    parser.add_argument("run_dir")
    parser.add_argument("--label", help="only ctest names starting with LABEL.")
    args = parser.parse_args()

    try:
        root = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as e:
        print("family_time: cannot read %s: %s" % (args.junit, e), file=sys.stderr)
        return 2
    wall = {}
    for case in root.iter("testcase"):
        name = case.get("name") or ""
        try:
            seconds = float(case.get("time") or "")
        except ValueError:
            continue
        if math.isfinite(seconds):
            wall[name] = seconds

    try:
        run = load_run(Path(args.run_dir))
    except InputError as e:
        print("family_time: %s" % e, file=sys.stderr)
        return 2
    for problem in run["problems"]:
        print("family_time: skipping %s" % problem, file=sys.stderr)
    fixture = {}
    setup = {}
    for name, test in run["tests"].items():
        if test["observation_file"] is None:
            continue  # the XML's time is GoogleTest's, not the fixture's
        if test["duration_ms"] is not None:
            fixture[name] = test["duration_ms"] / 1000.0
        if test["setup_ms"] is not None:
            setup[name] = test["setup_ms"] / 1000.0

    # Per family: its entries, their ctest wall, the entries with an observation file, their process start
    # and exit (ctest wall less the fixture times inside); and the set-up, bodies and longest body of its tests.
    # A fast entry of the suite holds many families' tests: its start and exit count for the entry's first
    # name component ("suite"), its tests' set-up and bodies for their own families.
    rows = defaultdict(lambda: {"entries": 0, "wall": 0.0, "seen": 0, "start_exit": 0.0, "setup": 0.0,
                                "bodies": 0.0, "longest": 0.0, "longest_test": "-"})
    counted = set()  # the tests whose fixture times the table sums
    for name, seconds in wall.items():
        if name.startswith("streamcheck.run.") or (args.label and not name.startswith(args.label + ".")):
            continue
        r = rows[name.split(".")[0]]
        r["entries"] += 1
        r["wall"] += seconds
        # Fast mode: one entry ran many tests in one process (its list names them). An isolated entry is its
        # one test.
        inside = [t for t in run["entries"].get(name, [name]) if t in fixture]
        if not inside:
            continue
        r["seen"] += 1
        r["start_exit"] += seconds - sum(fixture[t] for t in inside)
        for t in inside:
            counted.add(t)
            own = rows[t.split(".")[0]]
            own["setup"] += setup.get(t, 0.0)
            body = fixture[t] - setup.get(t, 0.0)
            own["bodies"] += body
            if body > own["longest"]:
                own["longest"], own["longest_test"] = body, t
    if not rows:
        print("family_time: no test entries matched", file=sys.stderr)
        return 1
    # start+exit, set-up and bodies come from the entries with an observation file (GPU tests); host-only
    # families write none, so only their ctest time is known.
    print("%-18s %7s %9s %12s %10s %9s  %s" % ("family", "entries", "ctest s", "start+exit s", "set-up s",
                                             "bodies s", "longest body"))
    for family in sorted(rows):
        r = rows[family]
        if r["seen"] == 0 and r["bodies"] == 0.0:
            print("%-18s %7d %9.2f %12s %10s %9s  (no observation files: host tests)"
                  % (family, r["entries"], r["wall"], "-", "-", "-"))
            continue
        print("%-18s %7d %9.2f %12.2f %10.2f %9.2f  %.2f s %s%s" % (
            family, r["entries"], r["wall"], r["start_exit"], r["setup"], r["bodies"], r["longest"],
            r["longest_test"], "" if r["seen"] == r["entries"] else
            "  (%d entries without an observation file)" % (r["entries"] - r["seen"])))
    print_setup_steps({n: t for n, t in run["tests"].items() if n in counted})
    return 0


def print_setup_steps(tests):
    """Per set-up step of the tests the table above counts: how many tests, total and median milliseconds,
    over the tests that created their process's context and over the tests after them."""
    groups = {True: defaultdict(list), False: defaultdict(list)}
    order = []
    for test in tests.values():
        if not test["setup_steps"]:
            continue
        first = bool(test["first_in_process"])
        for step, ms in test["setup_steps"]:
            if step not in order:
                order.append(step)
            groups[first][step].append(ms)
    if not order:
        return
    print()
    print("%-14s %27s %27s" % ("set-up step", "created the context", "later tests"))
    print("%-14s %27s %27s" % ("", "tests, total ms, median", "tests, total ms, median"))
    for step in order:
        cells = []
        for first in (True, False):
            values = groups[first].get(step, [])
            cells.append("%5d %10.1f %10.2f" % (len(values), sum(values), statistics.median(values))
                         if values else "%27s" % "-")
        print("%-14s %s %s" % (step, cells[0].rjust(27), cells[1].rjust(27)))

if __name__ == "__main__":
    sys.exit(main())
