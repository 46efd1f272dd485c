#!/usr/bin/env python3
"""Do the tests say what their plans say? Reads every family's plan (tests/<family>/README.md, its table as
the report reads it) and every test source of tests/, and lists each disagreement:

  - a claim (`sc::claim x("ID")`) of an ID no plan has a row for;
  - a claim that writes a fact its plan row holds: a source (the row's Source is the claim's), or a kind where
    the row names one kind only;
  - a claim without a kind where its row names several (a cell such as "documented / observed"), or with a
    kind the row does not name;
  - a test that claims an ID but does not open with its claims (they say what it proves);
  - a family source that includes a header of the runner (runner/include: the process machinery is walled off
    from the tests; the build refuses it too), or that calls into `sc::detail` (the fixtures' inner words; the
    harness family, which tests the fixtures' own machinery, may);
  - a test that claims an ID but is not named in the Tests cell of that ID's row (names may be patterns:
    `Suite.*`, `Suite.Prefix*Suffix`);
  - a name in a Tests cell that matches no test.

The host tests of the suite's own code (tests/unit) are left out: they make claims to test the machinery.

    ci/plan_check.py [SOURCE_DIR]

Exits 0 when there is none, 1 with one line per disagreement.
"""
import fnmatch
import re
import sys
from pathlib import Path

from streamcheck.model import parse_plan  # the one reader of plan tables (ci/streamcheck is reports/streamcheck)

CLAIM = re.compile(r'\bclaim\s+\w+\s*\(\s*"([A-Z][A-Z0-9]*-\d+)"\s*(?:,\s*(?:sc::)?verdict_kind::(\w+)\s*)?([,)])')
# How a test body must open: with its claims (they say what the test proves).
OPENING = re.compile(r'\s*(?:const\s+)?(?:sc::)?claim\s')
TEST = re.compile(r"\bTEST(?:_F)?\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
KINDS = ("documented", "observed", "recorded")
RUNNER_INCLUDE = re.compile(r'#\s*include\s*[<"](sc/runner/[^>"]+)[>"]')
DETAIL_CALL = re.compile(r'\b(?:sc::)?detail::(\w+)')
DETAIL_ALLOWED = ("harness",)
LEFT_OUT = ("unit",)


def plan_rows(source):
    """ID -> its rows (kinds allowed, name patterns of its Tests cell, the plan's path) over every plan."""
    rows = {}
    for plan in sorted(source.glob("tests/*/README.md")):
        if plan.parent.name in LEFT_OUT:
            continue
        table, _ = parse_plan(plan.read_text(encoding="utf-8"))
        for row in table:
            if row["retired"]:
                continue
            kinds = {k for k in KINDS if k in row["kind"]}
            rows.setdefault(row["id"], []).append({"kinds": kinds, "names": row["tests"], "plan": plan})
    return rows


def test_bodies(text):
    """(Suite.Test, first character, last character) of each test body in a source file."""
    bodies = []
    for match in TEST.finditer(text):
        depth, at = 1, match.end()
        while depth and at < len(text):
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
        bodies.append(("%s.%s" % match.groups(), match.end(), at))
    return bodies


def sources(source):
    for path in sorted(source.glob("tests/*/*")):
        if path.suffix in (".cpp", ".cu", ".hpp") and path.parent.name not in LEFT_OUT:
            yield path


def disagreements(source):
    rows = plan_rows(source)
    found, tests, claims = [], set(), 0
    for path in sources(source):
        text = path.read_text(encoding="utf-8")
        for include in RUNNER_INCLUDE.finditer(text):
            found.append("%s:%d: includes %s, a header of the runner, which families do not see" % (
                path.relative_to(source), text.count("\n", 0, include.start()) + 1, include.group(1)))
        if path.parent.name not in DETAIL_ALLOWED:
            for call in DETAIL_CALL.finditer(text):
                found.append("%s:%d: calls sc::detail::%s, an inner word of the fixtures" % (
                    path.relative_to(source), text.count("\n", 0, call.start()) + 1, call.group(1)))
        bodies = test_bodies(text)
        tests.update(name for name, _, _ in bodies)
        where = path.relative_to(source)
        opened = set()
        for name, first, _ in bodies:
            if OPENING.match(text, first):
                opened.add(name)
        for claim in CLAIM.finditer(text):
            ident, kind, after = claim.groups()
            claims += 1
            owner = next((name for name, first, last in bodies if first <= claim.start() < last), None)
            line = text.count("\n", 0, claim.start()) + 1
            if owner and owner not in opened:
                found.append("%s:%d: %s claims %s, but does not open with its claims" % (where, line, owner, ident))
            if ident not in rows:
                found.append("%s:%d: %s is claimed, but no plan has a row for it" % (where, line, ident))
                continue
            allowed = set().union(*(r["kinds"] for r in rows[ident]))
            if after == ",":
                found.append("%s:%d: %s's claim gives a source: its plan row's Source is the claim's" % (
                    where, line, ident))
            if kind is None and len(allowed) > 1:
                found.append("%s:%d: %s's plan row names %s: the claim must say which it proves" % (
                    where, line, ident, " and ".join(sorted(allowed))))
            elif kind is not None and len(allowed) == 1 and kind in allowed:
                found.append("%s:%d: %s's claim names its kind, which its plan row says already" % (
                    where, line, ident))
            elif kind is not None and kind not in allowed:
                found.append("%s:%d: %s is claimed %s, its plan says %s" % (
                    where, line, ident, kind, " or ".join(sorted(allowed))))
            names = [n for row in rows[ident] for n in row["names"]]
            if owner and not any(fnmatch.fnmatchcase(owner, n) for n in names):
                found.append("%s:%d: %s claims %s, but that row's Tests cell does not name it" % (
                    where, line, owner, ident))
    for ident, id_rows in sorted(rows.items()):
        for row in id_rows:
            for name in row["names"]:
                if not any(fnmatch.fnmatchcase(t, name) for t in tests):
                    found.append("%s: %s's Tests cell names %s, which matches no test" % (
                        row["plan"].relative_to(source), ident, name))
    return found, claims, len(tests)


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    source = Path(argv[0]).resolve() if argv else Path(__file__).resolve().parents[1]
    found, claims, tests = disagreements(source)
    for line in found:
        print("plan_check: %s" % line)
    print("plan_check: %d claim(s) in %d test(s) read; %d disagreement(s) with the plans" % (claims, tests, len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
