#!/usr/bin/env bash
# Runs started together in one build folder keep their results apart (runner/include/sc/runner/run_context.hpp):
# four ctest runs of different unit tests at once; each must have a run folder of its own, finished, holding
# the XML of its own tests and nothing else.
#
#   runs_apart_check.sh BUILD_DIR
set -uo pipefail
build=$1
suites=(Handle Buffers Precedes Overlap)
pids=()
for s in "${suites[@]}"; do
  (exec env -u STREAMCHECK_MODE ctest --test-dir "$build" -R "^unit\\.$s\\." -j 2 >/dev/null 2>&1) &
  pids+=($!)
done
status=0
declare -A seen
for i in "${!suites[@]}"; do
  wait "${pids[$i]}" || { echo "FAIL: the ctest run of ${suites[$i]} failed"; status=1; }
  run=""
  for link in "$build"/results/invocations/"${pids[$i]}"-*; do [ -e "$link" ] && run=$(readlink -f "$link"); done
  if [ -z "$run" ] || [ ! -f "$run/env.json" ]; then
    echo "FAIL: the ctest run of ${suites[$i]} has no run folder"; status=1; continue
  fi
  [ -n "${seen[$run]:-}" ] && { echo "FAIL: ${suites[$i]} and ${seen[$run]} share $run"; status=1; }
  seen[$run]=${suites[$i]}
  grep -q '"finished_utc": "' "$run/env.json" || { echo "FAIL: $run did not finish"; status=1; }
  grep -q '"inside_run": "' "$run/env.json" || { echo "FAIL: $run does not name the run it was begun in"; status=1; }
  others=$(find "$run/gtest" -mindepth 1 -maxdepth 1 ! -name "unit.${suites[$i]}.*" -printf '%f\n')
  mine=$(find "$run/gtest" -mindepth 1 -maxdepth 1 -name "unit.${suites[$i]}.*" | wc -l)
  [ -z "$others" ] || { echo "FAIL: $run holds results of other runs: $others"; status=1; }
  [ "$mine" -gt 0 ] || { echo "FAIL: $run holds no result of ${suites[$i]}"; status=1; }
done
# Runs begun inside another run leave latest to the run a person started.
for run in "${!seen[@]}"; do
  [ "$(readlink -f "$build/results/latest")" = "$run" ] && { echo "FAIL: latest points at the inner run $run"; status=1; }
done
if [ $status -eq 0 ]; then
  echo "runs_apart: ${#suites[@]} runs started together kept their results apart"
  rm -rf "${!seen[@]}"  # the runs were this check's; the run that holds its result stays
fi
exit $status
