#!/usr/bin/env python3
"""streamcheck fleet: the verdict of many machines' gate runs, with the gate's exit codes (the worst host's).

    python3 reports/streamcheck_fleet.py FLEET_DIR [--previous OLD_FLEET_DIR] [-o fleet.html]
                                         [--markdown OUT.md] [--junit OUT.xml] [--hosts NAME,...]

FLEET_DIR holds one folder per host, named after it, with the run folders of that host's ci/gate.sh below it
(at most four levels down) and optionally gate.exit, the gate's exit status as the host saw it; ci/fleet_node.sh
writes that layout, and the CI templates, the Slurm script and the Kubernetes job use it (docs/fleet.md).

Exit status:
  0  every host passed its gate
  1  a behavior regressed on at least one host, and every host is trustworthy
  2  a host's run is not trustworthy (README, "Gating a runner"), a host folder holds no run, a host named by
     --hosts has no folder, or bad input

-o: the fleet page (one HTML file): hosts by GPU model, driver and toolkit, the hosts behind the verdict, the
tests that failed or were not judged, each observed value's spread per group and the hosts apart from it, and
with --previous what changed since that fleet run. --markdown: a job summary (appended to $GITHUB_STEP_SUMMARY
as well when that is set). --junit: JUnit XML, one test suite per host. Python 3.9+ standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional, Sequence


from streamcheck.common import InputError  # noqa: E402
from streamcheck.fleet import fleet_view, load_fleet  # noqa: E402
from streamcheck.fleet_page import fleet_junit, fleet_lines, fleet_markdown, render_fleet  # noqa: E402
from streamcheck.gate import UNTRUSTWORTHY  # noqa: E402
from streamcheck_gate import write  # noqa: E402


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="streamcheck_fleet.py", description="Judge the gate runs of a fleet "
                                     "(FLEET_DIR/<host>/<run folders>): exit 0 as expected, 1 regressed, 2 not "
                                     "trustworthy, the worst host's.")
    parser.add_argument("fleet_dir", metavar="FLEET_DIR")
    parser.add_argument("--previous", metavar="OLD_FLEET_DIR", help="a previous fleet run: what changed since")
    parser.add_argument("-o", "--output", metavar="OUT.html", help="write the fleet page here")
    parser.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary here")
    parser.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML (a test suite per host) here")
    parser.add_argument("--hosts", metavar="NAME,...", default="",
                        help="the hosts expected: one without a folder is not trustworthy (it sent nothing)")
    args = parser.parse_args(argv)
    try:
        fleet = load_fleet(Path(args.fleet_dir), args.hosts.split(","))
        previous = load_fleet(Path(args.previous)) if args.previous else None
    except InputError as e:
        print("fleet: %s" % e, file=sys.stderr)
        return UNTRUSTWORTHY
    view = fleet_view(fleet, previous)
    print("\n".join(fleet_lines(view)))
    text = fleet_markdown(view)
    errors = []
    if args.output:
        errors.append(write(args.output, render_fleet(view)))
    if args.markdown:
        errors.append(write(args.markdown, text))
    if os.environ.get("GITHUB_STEP_SUMMARY") and os.environ["GITHUB_STEP_SUMMARY"] != args.markdown:
        errors.append(write(os.environ["GITHUB_STEP_SUMMARY"], text, append=True))
    if args.junit:
        errors.append(write(args.junit, fleet_junit(fleet)))
    for error in filter(None, errors):
        print("fleet: %s" % error, file=sys.stderr)
    return UNTRUSTWORTHY if any(errors) else fleet["code"]


if __name__ == "__main__":
    sys.exit(main())
