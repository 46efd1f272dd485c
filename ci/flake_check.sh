#!/usr/bin/env bash
# Flake check: runs one family (a CTest label) N times, each time as a whole ctest run with its own results
# folder, and tallies failures per test. Exit status 0 only when every run passed.
#
#   ci/flake_check.sh BUILD_DIR LABEL [N=20]
#   STREAMCHECK_MODE=fast ci/flake_check.sh BUILD_DIR LABEL [N]   (the same in fast mode)
#
# Prints one line per run (ctest's summary and wall time), then the tests that failed and how often, then
# the wall time's minimum, median and maximum. Logs of failed runs are kept in BUILD_DIR/flake/.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: ci/flake_check.sh BUILD_DIR LABEL [N]" >&2
  exit 2
fi
build=$1
label=$2
n=${3:-20}
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "flake_check: N must be a positive integer, got '$n'" >&2
  exit 2
fi
if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "flake_check: $build is not a configured build directory" >&2
  exit 2
fi
src_reports=$(cd "$(dirname "${BASH_SOURCE[0]}")/../reports" && pwd)
# shellcheck source=ci/ctest_run.sh
. "$(dirname "${BASH_SOURCE[0]}")/ctest_run.sh"
echo "flake_check: mode ${STREAMCHECK_MODE:-isolated}"
logs="$build/flake"
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/failed-*.txt
failed_runs=0
walls=()
for i in $(seq 1 "$n"); do
  log="$logs/run-$i.log"
  start=$(date +%s%N)
  ctest_run "$build" -L "^${label}\$" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure >"$log" 2>&1
  rc=$?
  wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  walls+=("$wall_ms")
  wall=$(awk -v ms="$wall_ms" 'BEGIN { printf "%.2f", ms / 1000 }')
  summary=$(grep -E "tests passed|No tests were found" "$log" | tail -1)
  printf 'flake_check: run %2d/%d rc=%d %6s s  %s\n' "$i" "$n" "$rc" "$wall" "${summary:-no summary}"
  if grep -q "No tests were found" "$log"; then
    echo "flake_check: label '$label' selects no tests" >&2
    exit 2
  fi
  if [ "$rc" -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    # The tests that failed, from the run folder (in fast mode ctest names only the family's entries, and the
    # tests after one that ended the process are listed as not run).
    PYTHONPATH="$src_reports" python3 -c 'import sys
from streamcheck.results import load_run, not_run_after_process_ended
for n, t in sorted(load_run(sys.argv[1])["tests"].items()):
    if t["status"] == "failed": print(n)
    elif not_run_after_process_ended(t): print(n + " (not run)")' "$run" \
      >"$logs/failed-$i.txt" 2>/dev/null || true
  else
    rm -f "$log"
  fi
done
if [ "$failed_runs" -gt 0 ]; then
  # ctest's list after "The following tests FAILED:" reads "  <num> - <name> (Failed)", newer versions
  # add the test's labels after it.
  tally=$(cat "$logs"/run-*.log | tr -d '\r' |
    sed -n 's/^[[:space:]]*[0-9]\{1,\} - \([^ ]*\) (\([A-Za-z ]*\)).*/\1 (\2)/p' | grep -v ' (Skipped)$' |
    sort | uniq -c | sort -rn)
  per_test=$(cat "$logs"/failed-*.txt 2>/dev/null | sort | uniq -c | sort -rn)
  if [ -n "$per_test" ]; then
    echo "flake_check: tests that failed, from the run folders (count of runs):"
    echo "$per_test"
  fi
  if [ -n "$tally" ]; then
    echo "flake_check: ctest's list of failed entries (count of runs):"
    echo "$tally"
  else
    echo "flake_check: no failed test names found in ctest's output; see $logs/run-*.log" >&2
  fi
fi
sorted=$(printf '%s\n' "${walls[@]}" | sort -n)
min=$(echo "$sorted" | head -1)
max=$(echo "$sorted" | tail -1)
median=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
awk -v l="$label" -v f="$failed_runs" -v n="$n" -v a="$min" -v m="$median" -v b="$max" 'BEGIN {
  printf "flake_check: %s: %d of %d runs failed; wall time min %.2f s, median %.2f s, max %.2f s\n", l, f, n, a / 1000, m / 1000, b / 1000 }'
[ "$failed_runs" -eq 0 ]
