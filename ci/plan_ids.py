#!/usr/bin/env python3
"""The catalog IDs a family's plan lists, for the mutation job.

    ci/plan_ids.py [--mutations [--gpus N]] tests/<family>/README.md

Prints the IDs of the plan's table rows, as the report reads the table (reports/streamcheck/model.py,
parse_plan; rows marked retired left out), on one line, separated by spaces. With --mutations, rows whose last cell says "(no mutation run)" are left out
too: their claim is judged in a test that other IDs' mutations already kill, or the test cannot run here,
and the plan says which. Rows whose last cell says "(mutation needs two GPUs)" are left out unless
--gpus says the machine has two or more (their tests skip on one GPU, so a mutation there kills nothing).
Exits 1 with a one-line message when the file is missing or lists no ID, 2 on a bad command line.
"""
import sys
from pathlib import Path

from streamcheck.model import parse_plan  # the one reader of plan tables (ci/streamcheck is reports/streamcheck)


def plan_ids(text, for_mutation, gpus=1):
    ids = []
    rows, _ = parse_plan(text)
    for row in rows:
        if row["retired"]:
            continue
        if for_mutation and "(no mutation run)" in row["last_cell"]:
            continue
        if for_mutation and gpus < 2 and "(mutation needs two GPUs)" in row["last_cell"]:
            continue
        if row["id"] not in ids:
            ids.append(row["id"])
    return ids


def main(argv):
    usage = "usage: plan_ids.py [--mutations [--gpus N]] tests/<family>/README.md"
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    args = [a for a in argv if a != "--mutations"]
    gpus = 1
    if "--gpus" in args:
        if "--mutations" not in argv:
            print("%s (--gpus goes with --mutations)" % usage, file=sys.stderr)
            return 2
        at = args.index("--gpus")
        value = args[at + 1] if at + 1 < len(args) else ""
        if not (value.isascii() and value.isdigit()):
            print("%s (--gpus takes a whole number, got '%s')" % (usage, value), file=sys.stderr)
            return 2
        gpus = int(value)
        del args[at:at + 2]
    if len(args) != 1:
        print(usage, file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        print("plan_ids: cannot read %s: %s" % (path, error.strerror), file=sys.stderr)
        return 1
    ids = plan_ids(text, "--mutations" in argv, gpus)
    if not ids:
        print("plan_ids: %s lists no catalog ID" % path, file=sys.stderr)
        return 1
    print(" ".join(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
