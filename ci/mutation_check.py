#!/usr/bin/env python3
"""Judges one mutation run: the tests that claim ID must all fail, and no other test may fail.

usage: mutation_check.py RUN_DIR ID
Reads RUN_DIR/observations/*.json (claims, mutation kind, watchdog) and RUN_DIR/gtest/*.xml (outcome of
every test). The line it prints says how the claiming tests were mutated: "arrangement" (what the test
set up changed, so the observation had to tell the difference), "expectation" (only the expected value
changed; the plan says why no arrangement change exists), or both when the tests differ. A claiming test
that failed only because a gate's watchdog fired is counted as killed, and named.
"""
import glob
import json
import os
import sys
import xml.etree.ElementTree as ET


def outcomes(run_dir):
    result = {}
    for path in glob.glob(os.path.join(run_dir, "gtest", "*.xml")):
        name = os.path.basename(path)[: -len(".xml")]
        case = ET.parse(path).getroot().find(".//testcase")
        if case is None:
            continue
        if case.find("failure") is not None:
            result[name] = "failed"
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            result[name] = "skipped"
        else:
            result[name] = "passed"
    return result


def claimants(run_dir, catalog_id):
    """ctest name -> its observation document, for the tests that claim catalog_id."""
    found = {}
    for path in glob.glob(os.path.join(run_dir, "observations", "*.json")):
        with open(path) as f:
            doc = json.load(f)
        if any(c.get("id") == catalog_id for c in doc.get("claims", [])):
            found[doc["ctest_name"]] = doc
    return found


def kinds_used(docs):
    """The mutation kinds the claiming tests recorded ("unused" for a test that never applied one)."""
    return sorted({doc.get("mutation_kind", "unused") if doc.get("mutation") else "unused" for doc in docs})


def watchdog_fired(doc):
    return any(not g.get("expected") for g in doc.get("watchdog", []))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_dir, catalog_id = sys.argv[1], sys.argv[2]
    try:
        with open(os.path.join(run_dir, "env.json")) as f:
            mutated = json.load(f).get("environment", {}).get("STREAMCHECK_MUTATE")
    except (OSError, ValueError) as e:
        print(f"mutation {catalog_id}: cannot read {run_dir}/env.json: {e}")
        return 1
    if mutated != catalog_id:
        print(f"mutation {catalog_id}: {run_dir} is not this mutation's run (its STREAMCHECK_MUTATE is {mutated!r}); "
              "did ctest run at all?")
        return 1
    seen = outcomes(run_dir)
    docs = claimants(run_dir, catalog_id)
    own = set(docs)
    failed = {n for n, o in seen.items() if o == "failed"}
    skipped_own = {n for n in own if seen.get(n) == "skipped"}
    if not own:
        print(f"mutation {catalog_id}: NO TEST claims this ID in {run_dir}")
        return 1
    survived = sorted(own - failed - skipped_own)
    collateral = sorted(failed - own)
    if skipped_own == own:
        print(f"mutation {catalog_id}: every claiming test skipped; nothing judged")
        return 1
    judged = own - skipped_own
    kinds = kinds_used(docs[n] for n in judged)
    unused = sorted(n for n in judged if not docs[n].get("mutation"))
    by_watchdog = sorted(n for n in own & failed if watchdog_fired(docs[n]))
    ok = not survived and not collateral
    print(f"mutation {catalog_id}: {'killed' if ok else 'NOT KILLED'} [{'+'.join(kinds)}] "
          f"({len(own & failed)} of {len(own)} claiming test(s) failed"
          + (f"; survived: {', '.join(survived)}" if survived else "")
          + (f"; never applied the mutation: {', '.join(unused)}" if unused else "")
          + (f"; failed on a gate watchdog: {', '.join(by_watchdog)}" if by_watchdog else "")
          + (f"; skipped: {', '.join(sorted(skipped_own))}" if skipped_own else "")
          + (f"; other failures: {', '.join(collateral)}" if collateral else "") + ")")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
