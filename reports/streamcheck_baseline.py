#!/usr/bin/env python3
"""streamcheck baseline writer: a baseline file for a new GPU architecture from a run, and its differences from an
existing baseline.

    python3 reports/streamcheck_baseline.py RUN_DIR [--arch sm_<cc>] [--against baselines/sm_90.json]
                                            [-o baselines/sm_<cc>.json] [--force] [--source SRC_DIR]

Without -o it only prints what the file would hold and how it differs from --against (default: the source tree's
file of the run's architecture, if any). The new file carries its provenance (GPU, driver, runtime, commit, run,
date). Entries the --against file has keep its policy (gating, why it gates, whether a driver may flip it); new
ones are written not gating, for review.

Exit status: 0 written (or shown); 2 bad input (not a run, no GPU, an existing output without --force).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence


from streamcheck.baselines import (baseline_diff, check_arch, load_baseline_file, run_arch, to_json,  # noqa: E402
                                   write_baseline)
from streamcheck.common import InputError  # noqa: E402
from streamcheck.results import load_run  # noqa: E402


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="streamcheck_baseline.py",
                                     description="Write a baseline file for a GPU architecture from a run.")
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument("--arch", help="the architecture (default: the run's GPU, e.g. sm_100)")
    parser.add_argument("--against", metavar="BASELINE.json", help="existing baseline to compare with and take "
                        "the policy of each entry from (default: SRC_DIR/baselines/<arch>.json if it exists)")
    parser.add_argument("-o", "--output", metavar="OUT.json", help="write the file here (default: only show it)")
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument("--source", metavar="SRC_DIR", help="the source tree (default: the folder above reports/)")
    args = parser.parse_args(argv)
    source = Path(args.source) if args.source else Path(__file__).resolve().parent.parent
    try:
        run = load_run(Path(args.run_dir))
        if not isinstance(run["env"].get("gpu"), dict):
            raise InputError("%s: the run used no GPU (%s); it has no values to write" % (
                args.run_dir, run["env"].get("gpu_unavailable_reason") or "no reason recorded"))
        arch = check_arch(args.arch or run_arch(run["env"]) or "")
        against_path = Path(args.against) if args.against else source / "baselines" / (arch + ".json")
        against = load_baseline_file(against_path) if args.against or against_path.is_file() else None
        doc, conflicts = write_baseline(run, arch, against)
        for problem in run["problems"]:
            print("baseline: warning: left out, unreadable: %s" % problem, file=sys.stderr)
        n = sum(len(rows) for rows in doc["entries"].values())
        print("baseline: %s from run %s (%s): %d entr%s" % (arch, run["id"], doc["provenance"]["gpu"], n,
                                                         "y" if n == 1 else "ies"))
        print("baseline: compared with %s:" % (against_path if against is not None else "nothing"))
        for line in baseline_diff(doc, against):
            print("  " + line)
        for conflict in conflicts:
            print("baseline: left out, seen with two values in this run: %s" % conflict)
        if args.output:
            out = Path(args.output)
            if out.exists() and not args.force:
                raise InputError("%s exists; give --force to replace it" % out)
            try:
                out.write_text(to_json(doc), encoding="utf-8")
            except OSError as e:
                raise InputError("%s: cannot write: %s" % (out, e.strerror or e))
            print("baseline: wrote %s" % out)
    except InputError as e:
        print("baseline: error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
