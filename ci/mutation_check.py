#!/usr/bin/env python3
"""Judges one mutation run: the tests that claim ID must all fail, and no other test may fail.

usage: mutation_check.py RUN_DIR ID
Reads the run through the report's results reader (reports/streamcheck/results.py): every test's outcome
(GoogleTest XML), its claims, mutation kind and fired watchdogs (observation file); a run with a result file
that cannot be read proves nothing. The line it prints says how the claiming tests were mutated:
"arrangement" (what the test set up changed, so the observation had to tell the difference), "expectation"
(only the expected value changed; the plan says why no arrangement change exists), or both when the tests
differ. A claiming test that failed only because a latch's watchdog fired is counted as killed, and named. In
fast mode such a test also ends its process, and the tests after it are "not run": the line counts them, and
they are never taken for failures of the mutation. A test not judged for a shared GPU at its start recorded no
claim: the line names it, as it may claim the ID.
"""
import sys
from pathlib import Path


from streamcheck.common import InputError  # the one results reader (ci/streamcheck is reports/streamcheck)
from streamcheck.results import (
    SHARED_GPU, load_run, not_run_after_process_ended, outcome, tests_claiming, unexpected_watchdogs)


def kinds_used(tests):
    """The mutation kinds the claiming tests recorded ("unused" for a test that never applied one)."""
    return sorted({(t["mutation_kind"] or "unused") if t["mutation"] else "unused" for t in tests})


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_dir, catalog_id = sys.argv[1], sys.argv[2]
    try:
        run = load_run(Path(run_dir))
    except InputError as e:
        print(f"mutation {catalog_id}: cannot read the run: {e}")
        return 1
    mutated = (run["env"].get("environment") or {}).get("STREAMCHECK_MUTATE")
    if mutated != catalog_id:
        print(f"mutation {catalog_id}: {run_dir} is not this mutation's run (its STREAMCHECK_MUTATE is {mutated!r}); "
              "did ctest run at all?")
        return 1
    if run["problems"]:
        print(f"mutation {catalog_id}: {len(run['problems'])} result file(s) of {run_dir} could not be read, "
              f"so the run proves nothing: {run['problems'][0]}")
        return 1
    seen = {name: t["status"] for name, t in run["tests"].items()}
    docs = tests_claiming(run, catalog_id)
    own = set(docs)
    failed = {n for n, o in seen.items() if o == "failed"}
    skipped_own = {n for n in own if seen.get(n) == "skipped"}
    # Fast mode: a claiming test that ended its process (a latch's watchdog, a sticky error) leaves the tests
    # after it not run. They are not failures of the mutation, but they were not judged either: named.
    not_run = {n for n in seen if not_run_after_process_ended(run["tests"][n])}
    not_run_own = own & not_run
    # Not judged before its body ran: its claims are unknown.
    unknown = sorted(n for n, t in run["tests"].items() if n not in own and outcome(t) == SHARED_GPU)
    if not own:
        print(f"mutation {catalog_id}: NO TEST claims this ID in {run_dir}")
        return 1
    survived = sorted(own - failed - skipped_own - not_run_own)
    collateral = sorted(failed - own)
    if skipped_own | not_run_own == own:
        print(f"mutation {catalog_id}: every claiming test skipped or did not run; nothing judged")
        return 1
    judged = own - skipped_own - not_run_own
    kinds = kinds_used(docs[n] for n in judged)
    unused = sorted(n for n in judged if not docs[n]["mutation"])
    by_watchdog = sorted(n for n in own & failed if unexpected_watchdogs(docs[n]))
    ok = not survived and not collateral
    print(f"mutation {catalog_id}: {'killed' if ok else 'NOT KILLED'} [{'+'.join(kinds)}] "
          f"({len(own & failed)} of {len(own)} claiming test(s) failed"
          + (f"; survived: {', '.join(survived)}" if survived else "")
          + (f"; never applied the mutation: {', '.join(unused)}" if unused else "")
          + (f"; failed on a latch watchdog: {', '.join(by_watchdog)}" if by_watchdog else "")
          + (f"; skipped: {', '.join(sorted(skipped_own))}" if skipped_own else "")
          + (f"; claiming test(s) not run: {', '.join(sorted(not_run_own))}" if not_run_own else "")
          + (f"; not judged for a shared GPU, claims unknown: {', '.join(unknown)}" if unknown else "")
          + (f"; {len(not_run - own)} other test(s) not run after a claiming test ended the process"
             if not_run - own else "")
          + (f"; other failures: {', '.join(collateral)}" if collateral else "") + ")")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
