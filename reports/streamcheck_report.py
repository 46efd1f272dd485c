#!/usr/bin/env python3
"""streamcheck report: one self-contained HTML page for a run folder, a comparison of two, or a machine's.

    python3 reports/streamcheck_report.py RUN_DIR [--source SRC_DIR] [-o OUT.html]
    python3 reports/streamcheck_report.py OLD_RUN_DIR NEW_RUN_DIR [--source SRC_DIR] [-o OUT.html] [--text OUT.txt]
    python3 reports/streamcheck_report.py --machine RUN_DIR... -o OUT.html

A run folder (build/results/latest, or build/results/runs/<id>) holds env.json, gtest/*.xml,
observations/*.json and instruments/*.json. The test plans are read from SRC_DIR/tests/<family>/README.md,
and from SRC_DIR/baselines/sm_<cc>.json what a baseline comparison does not carry (where the value comes
from, why it is gating, whether a driver may flip it, a finding).

With two run folders the page compares them (what changed from OLD to NEW: environment, test statuses,
observed values and baseline statuses, tests added or removed) and the same comparison is printed as text.
With --machine the folders are one machine's runs, one per GPU and one per pair of GPUs (ci/run_suite.sh
--every-gpu): the page shows what differs between the GPUs first, then GPU x family and the pairs' runs.

The page needs no network: CSS is inline, the data is embedded as <script type="application/json" id="data">,
and a small script adds filtering. The page holds the run's summary and a line per family, so its size does not
grow with the number of tests: a family's rows are a file beside it, families/<family>.js, which the script
shows when the family is opened, and a test's details another, details/<ctest name>.js, shown under its row
when the row is opened, with the drawings of timelines/ and blocks/ in frames: keep those folders with the page.

Exit status: 0 when the page was written (failed tests do not change it); 2 on bad input: either nothing was
written (the one-line error says why), or the page was written and lists the result files it could not read
(stderr names the first). Python 3.9+ standard library only; reads result files only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence


from streamcheck.common import COUNT_LABEL, GENERATOR, InputError  # noqa: E402  (after the path is set)


def write_atomically(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=".%s." % path.name, suffix=".tmp", dir=str(directory))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="\n") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, str(path))
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def write_output(path: Path, text: str) -> None:
    """Writes `text` to `path`, making its folder first (the details, drawings and traces go into folders beside
    the page)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
    except OSError as e:
        raise InputError("%s: cannot write: %s" % (path, e.strerror or e))


def report(run_dir: Path, source: Path, output: Path) -> int:
    from streamcheck.model import build_model
    from streamcheck.page import render_report
    from streamcheck.timeline_model import timeline_state, trace_path
    from streamcheck.trace_events import chrome_trace
    model = build_model(run_dir, source)
    page, files = render_report(model, source)
    write_output(output, page)
    # Each family's rows, each test's details and the drawings they show, beside the page, which reads them when a
    # family or a row is opened.
    for name, text in files.items():
        write_output(output.parent / name, text)
    # Each drawn timeline whole, as a Chrome trace beside the page (the page links it).
    gpu = str(((model["run"]["env"].get("gpu") or {}) if isinstance(model["run"]["env"].get("gpu"), dict)
               else {}).get("name") or "no GPU")
    traces = 0
    for test in model["tests"].values():
        if timeline_state(test) == "drawn":
            write_output(output.parent / trace_path(test), json.dumps(chrome_trace(test, gpu), separators=(",", ":")))
            traces += 1
    t = model["totals"]
    print("report: %s (%d tests: %s%s; %d IDs uncovered%s)"
          % (output, t["tests"], ", ".join("%d %s" % (t[key], label) for key, label in COUNT_LABEL.items()),
             "; %d planned test(s) not in this run" % t["planned"] if t["planned"] else "",
             model["coverage"]["counts"]["uncovered"],
             "; %d Chrome traces in %s" % (traces, output.parent / "traces") if traces else ""))
    if model["nothing_on_gpu"]:
        print("report: %s" % model["nothing_on_gpu"])
    return problems_status(model["problems"], output)


def compare(old_dir: Path, new_dir: Path, source: Path, output: Path, text_output: Optional[Path]) -> int:
    from streamcheck.compare import compare_runs, diff_text, render_diff
    from streamcheck.results import load_run
    old, new = load_run(old_dir), load_run(new_dir)
    diff = compare_runs(old, new)
    write_output(output, render_diff(diff, source))
    text = diff_text(diff)
    if text_output is not None:
        write_output(text_output, text)
    sys.stdout.write(text)
    print("comparison: %s" % output)
    return problems_status(diff["problems"], output)


def machine(run_dirs: Sequence[Path], source: Path, output: Path) -> int:
    from streamcheck.machine import machine_text, machine_view, render_machine
    from streamcheck.results import load_run
    view = machine_view([load_run(d) for d in run_dirs])
    write_output(output, render_machine(view, source, output))
    sys.stdout.write(machine_text(view))
    print("machine: %s" % output)
    return problems_status(view["problems"], output)


def problems_status(problems: Sequence[str], output: Path) -> int:
    if not problems:
        return 0
    print("%s: error: %s%s; the page lists what could not be read: %s" % (
        GENERATOR, problems[0], " (and %d more)" % (len(problems) - 1) if len(problems) > 1 else "", output),
        file=sys.stderr)
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="streamcheck_report.py",
        description="Write one self-contained HTML report of a streamcheck run folder, or compare two.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="a run's results folder, e.g. build/results/latest; two folders: OLD NEW, compared")
    parser.add_argument("--source", metavar="SRC_DIR",
                        help="the streamcheck source tree, for the test plans tests/*/README.md and the "
                             "baseline file baselines/sm_<cc>.json (default: the folder above reports/)")
    parser.add_argument("-o", "--output", metavar="OUT.html",
                        help="where to write the page (default: report.html in RUN_DIR; with two folders "
                             "compare-<old run id>.html in NEW_RUN_DIR)")
    parser.add_argument("--text", metavar="OUT.txt", help="with two folders: also write the text comparison here")
    parser.add_argument("--machine", action="store_true",
                        help="the folders are the runs of one machine's GPUs and pairs of GPUs (ci/run_suite.sh "
                             "--every-gpu): write one page, what differs between the GPUs first (-o is required)")
    args = parser.parse_args(argv)
    if args.machine:
        if not args.output:
            parser.error("--machine needs -o OUT.html")
        try:
            return machine([Path(d) for d in args.run_dirs], Path(args.source) if args.source else
                           Path(__file__).resolve().parent.parent, Path(args.output))
        except InputError as e:
            print("%s: error: %s" % (GENERATOR, e), file=sys.stderr)
            return 2
    if len(args.run_dirs) > 2:
        parser.error("give one run folder (a report) or two (OLD NEW: a comparison), not %d" % len(args.run_dirs))

    run_dirs = [Path(d) for d in args.run_dirs]
    source = Path(args.source) if args.source else Path(__file__).resolve().parent.parent
    try:
        if args.source and not source.is_dir():
            raise InputError("%s: the --source folder does not exist" % source)
        if len(run_dirs) == 1:
            output = Path(args.output) if args.output else run_dirs[0] / "report.html"
            return report(run_dirs[0], source, output)
        old_id = run_dirs[0].resolve().name
        output = Path(args.output) if args.output else run_dirs[1] / ("compare-%s.html" % old_id)
        return compare(run_dirs[0], run_dirs[1], source, output, Path(args.text) if args.text else None)
    except InputError as e:
        print("%s: error: %s" % (GENERATOR, e), file=sys.stderr)
        return 2
    except RecursionError:
        print("%s: error: the input nests too deeply to be read" % GENERATOR, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
