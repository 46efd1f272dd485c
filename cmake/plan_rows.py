#!/usr/bin/env python3
"""Writes the C++ table of every test plan's rows (ID, Kind cell, Source), from which a claim takes its kind
and its source: the plan is where they are written (fixtures/include/sc/fixtures/observe.hpp, class claim).
Run by the build (fixtures/CMakeLists.txt) with reports/ on PYTHONPATH, whose parse_plan is the one reader
of plan tables.

    plan_rows.py OUT.cpp PLAN.md ...
"""
import json
import re
import sys
from pathlib import Path

from streamcheck.model import parse_plan, plain


def source_text(cell):
    """A Source cell as the claim records it: without code marks and bold, its words (cuLaunchHostFunc_v2) kept."""
    return re.sub(r"\*\*(.+?)\*\*", r"\1", cell.replace("`", "")).strip()


def c_string(text):
    """A C++ string literal of the text (JSON's escapes are C++'s for these)."""
    return json.dumps(text, ensure_ascii=True)


def main(out, plans):
    rows, seen = [], {}
    for plan in sorted(plans):
        table, problem = parse_plan(Path(plan).read_text(encoding="utf-8"))
        if problem:
            continue  # a folder with no plan table (the harness's, the host tests') has no catalog IDs
        for row in table:
            if row["retired"]:
                continue
            facts = (plain(row["kind"]), source_text(row["source"]))
            if row["id"] in seen:  # an ID two families test (their rows must agree)
                if seen[row["id"]][1] != facts:
                    sys.exit("plan_rows.py: %s has rows in %s and in %s with another kind or source"
                             % (row["id"], seen[row["id"]][0], plan))
                continue
            seen[row["id"]] = (plan, facts)
            rows.append("    {%s, %s, %s}," % (c_string(row["id"]), c_string(facts[0]), c_string(facts[1])))
    text = ("// Written by cmake/plan_rows.py from the test plans (tests/<family>/README.md); not to be edited.\n"
            "#include \"sc/fixtures/observe.hpp\"\n\nnamespace sc::detail {\n"
            "const plan_row kPlanRows[] = {\n%s\n};\n"
            "const std::size_t kPlanRowCount = sizeof kPlanRows / sizeof kPlanRows[0];\n"
            "}  // namespace sc::detail\n" % "\n".join(rows))
    if not Path(out).exists() or Path(out).read_text() != text:
        Path(out).write_text(text)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
