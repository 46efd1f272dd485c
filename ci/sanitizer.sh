#!/usr/bin/env bash
# Compute-sanitizer job: every GPU ctest entry of the chosen families, one process per test, under
# compute-sanitizer for each tool (default: memcheck, racecheck, synccheck), with a deadline per test.
#
#   ci/sanitizer.sh BUILD_DIR [tool...]        tools: memcheck racecheck synccheck initcheck
#
# Prints one line per test and, per tool, a summary: tests run (passed, skipped, failed, hung), the
# tool's errors, and which tests expect API errors (run with --report-api-errors no), each with its reason
# (the list is in ci/sanitizer.py). Exit status 0 only with no errors, no hangs and no failed test.
#
# Environment:
#   SANITIZER_LABELS="harness priority_flags"  families to run (default per tool: memcheck every GPU family;
#                                                racecheck/synccheck all but default_streams, whose kernels
#                                                use no shared memory and no barriers)
#   SANITIZER_FILTER='*.PriorityFlags.*'         only ctest entries whose name matches (shell pattern)
#   SANITIZER_TEST_TIMEOUT=120                   deadline per test in seconds (at least the entry's TIMEOUT)
#   COMPUTE_SANITIZER=/path/compute-sanitizer    the tool (default: PATH, then /usr/local/cuda/bin)
#
# The tests learn that they run under the tool from STREAMCHECK_SANITIZER=<tool> (CUPTI tracing stays off
# and says why, so tests that need a trace skip with that reason). Logs: BUILD_DIR/sanitizer/<tool>/.
# Each tool gets a results folder of its own (BUILD_DIR/results/runs/<id>, env.json names the tool).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: ci/sanitizer.sh BUILD_DIR [tool...]" >&2
  exit 2
fi
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# One process per test is what the job is: it lists and runs the isolated mode's entries.
python3 "$src/ci/sanitizer.py" "$@"
