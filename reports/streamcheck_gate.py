#!/usr/bin/env python3
"""streamcheck gate: judges a run folder, or the run folders of one machine's GPUs, for a GPU runner, with
documented exit codes (the worst run's counts).

    python3 reports/streamcheck_gate.py RUN_DIR... [--markdown OUT.md] [--junit OUT.xml] [--no-tracing-required]
                                        [--source SRC_DIR]

Exit status:
  0  every behavior as expected
  1  a behavior regressed: a test failed (a documented claim, or any other test), or a gating baseline row
     differs (differs-gating; no-baseline-dir fails the same way)
  2  the run is not trustworthy: no GPU used, the runner's set-up, a test that ran beside another context on
     the GPU (not judged), tracing (CUPTI) off where required, the results folder incomplete (no env.json,
     unreadable result files, a test without its XML, a test with a claim without its observation file, the
     run not finished), a gate watchdog fired, a mutation active; also bad arguments

The first line counts the observed rows no baseline judged (a GPU without a baseline file), when there are
any: exit 0 then proves the documented behaviors only.

RUN_DIR/junit.xml, ctest --output-junit's file where ci/run_suite.sh put it, is read to find tests that ctest
ran but that left no XML (a crash or a timeout). --markdown: a Markdown summary (appended to
$GITHUB_STEP_SUMMARY as well when that is set).
--junit: JUnit XML with claim IDs and skip reasons. --source: the tree the report reads its plans and
baselines from (default: the folder above reports/); the summary says when it is at another commit than the
run. Python 3.9+ standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional, Sequence


from streamcheck.gate import (UNTRUSTWORTHY, VERDICT, artifact_path, gate, junit_document,  # noqa: E402
                              machine_markdown, markdown, summary_lines)


def write(path: str, text: str, append: bool = False) -> Optional[str]:
    try:
        with open(path, "a" if append else "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as e:
        return "%s: cannot write: %s" % (path, e.strerror or e)
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="streamcheck_gate.py", description="Judge a streamcheck run folder, or "
                                     "the run folders of one machine's GPUs (the worst verdict counts): exit 0 as "
                                     "expected, 1 regressed, 2 not trustworthy.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary here")
    parser.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML (claim IDs, skip reasons) here")
    parser.add_argument("--no-tracing-required", action="store_true",
                        help="accept a run with CUPTI tracing off (e.g. under compute-sanitizer)")
    parser.add_argument("--source", metavar="SRC_DIR", default=str(Path(__file__).resolve().parent.parent),
                        help="the source tree the report reads its plans and baselines from (default: the folder "
                             "above reports/): the summary says when it is at another commit than the run")
    args = parser.parse_args(argv)
    results = [gate(Path(d), require_tracing=not args.no_tracing_required, source=Path(args.source))
               for d in args.run_dirs]
    for result in results:
        for line in summary_lines(result["verdict"]):
            print(line if len(results) == 1 else "%s %s" % (result["verdict"].get("label") or result["verdict"]["run"],
                                                             line))
    code = max(r["verdict"]["code"] for r in results)
    if len(results) == 1:
        text = markdown(results[0]["verdict"])
    else:
        page = next((artifact_path(Path(d) / "machine.html") for d in args.run_dirs
                     if (Path(d) / "machine.html").is_file()), None)
        text = machine_markdown(results, page)
        print("gate: machine: %s (exit %d)%s" % (VERDICT[code], code, "; page %s" % page if page else ""))
    errors = []
    if args.markdown:
        errors.append(write(args.markdown, text))
    if os.environ.get("GITHUB_STEP_SUMMARY") and os.environ["GITHUB_STEP_SUMMARY"] != args.markdown:
        errors.append(write(os.environ["GITHUB_STEP_SUMMARY"], text, append=True))
    if args.junit:
        errors.append(write(args.junit, junit_document([(r["run"], r["verdict"]) for r in results])))
    errors = [e for e in errors if e]
    for error in errors:
        print("gate: %s" % error, file=sys.stderr)
    return UNTRUSTWORTHY if errors else code


if __name__ == "__main__":
    sys.exit(main())
