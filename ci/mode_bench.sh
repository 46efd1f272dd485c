#!/usr/bin/env bash
# Benchmark of the two modes (issue 14), not a timed test: runs each GPU family in isolated mode and then
# in fast mode on the same machine, in one invocation, and prints the wall time per family and in total.
#
#   ci/mode_bench.sh BUILD_DIR [LABEL...]        (default: every family label with GPU tests)
#   BENCH_REPEATS=3 ci/mode_bench.sh build       (each family N times per mode; the median is printed)
#
# One build directory serves both modes: it is reconfigured with -DSTREAMCHECK_MODE (only the ctest entries
# change, nothing is recompiled) and put back to its own mode at the end. Each family run is a whole ctest
# run of its GPU entries (its own results folder; the host checks labelled nogpu are left out), and the last
# row is one ctest run of every GPU entry (BENCH_GROUP='harness|instruments' adds one run of those labels);
# a failed run is reported, and its time still printed. ctest runs
# with -j ${CTEST_PARALLEL_LEVEL:-4} (the GPU lock keeps tests one process at a time per GPU; README). Exit
# status 1 when any run failed.
set -uo pipefail
if [ $# -lt 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: ci/mode_bench.sh BUILD_DIR [LABEL...]  (BUILD_DIR: a configured and built build directory)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
repeats=${BENCH_REPEATS:-1}
if ! [[ "$repeats" =~ ^[1-9][0-9]*$ ]]; then
  echo "mode_bench: BENCH_REPEATS must be a positive integer, got '$repeats'" >&2
  exit 2
fi
# shellcheck source=ci/mode.sh
. "$(dirname "${BASH_SOURCE[0]}")/mode.sh"
original=$(sc_configured_mode "$build")
trap 'sc_set_mode "$build" "$original"' EXIT

labels=("$@")
if [ ${#labels[@]} -eq 0 ]; then
  sc_set_mode "$build" isolated || exit 1
  # Family labels of GPU tests: every label of an entry labelled gpu, minus the shared ones.
  mapfile -t labels < <(cd "$build" && ctest -N -L '^gpu$' --show-only=json-v1 | python3 -c '
import json, sys
labels = set()
for test in json.load(sys.stdin).get("tests", []):
    for prop in test.get("properties", []):
        if prop.get("name") == "LABELS":
            labels.update(prop.get("value") or [])
print("\n".join(sorted(labels - {"gpu", "nogpu", "fast", "run", "gate"})))')
fi
if [ ${#labels[@]} -eq 0 ]; then
  echo "mode_bench: no family label found in $build" >&2
  exit 2
fi

declare -A wall
failed=0
logs="$build/mode_bench"
mkdir -p "$logs"
# one_run NAME CTEST_ARGS...: one ctest run in the current mode (a family's GPU entries, the whole run or the
# group), BENCH_REPEATS times; its median goes to wall[MODE.NAME].
one_run() {
  local name=$1 r log start rc ms summary
  shift
  local times=()
  for r in $(seq 1 "$repeats"); do
    log="$logs/$mode-$name-$r.log"
    start=$(date +%s%N)
    (cd "$build" && ctest "$@" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure) >"$log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    times+=("$ms")
    summary=$(grep -E "tests passed" "$log" | tail -1)
    printf 'mode_bench: %-8s %-16s run %d/%d rc=%d %8.2f s  %s\n' "$mode" "$name" "$r" "$repeats" "$rc" \
      "$(awk -v ms="$ms" 'BEGIN { print ms / 1000 }')" "${summary:-no summary}"
    [ "$rc" -eq 0 ] || failed=1
  done
  wall[$mode.$name]=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (repeats + 1) / 2 ))p")
}

for mode in isolated fast; do
  sc_set_mode "$build" "$mode" || exit 1
  for label in "${labels[@]}"; do
    one_run "$label" -L "^${label}\$" -LE '^nogpu$'
  done
  # What a user pays: one ctest run of every GPU entry (the run's own set-up and finish entries once), and
  # with BENCH_GROUP one run of those families' GPU entries.
  one_run whole -L '^gpu$'
  [ -n "${BENCH_GROUP:-}" ] && one_run group -L "^(${BENCH_GROUP})\$" -LE '^nogpu$'
done

# row NAME ISOLATED_MS FAST_MS: one line of the table.
row() {
  awk -v n="$1" -v i="$2" -v f="$3" 'BEGIN { printf "%-18s %12.2f %12.2f %8s\n", n, i / 1000, f / 1000,
    (f > 0 ? sprintf("%.2f", i / f) : "-") }'
}
echo
printf '%-18s %12s %12s %8s\n' "family" "isolated s" "fast s" "ratio"
total_i=0
total_f=0
for label in "${labels[@]}"; do
  row "$label" "${wall[isolated.$label]}" "${wall[fast.$label]}"
  total_i=$((total_i + wall[isolated.$label]))
  total_f=$((total_f + wall[fast.$label]))
done
row total "$total_i" "$total_f"
for name in whole group; do
  [ -n "${wall[isolated.$name]:-}" ] && row "$name run" "${wall[isolated.$name]}" "${wall[fast.$name]}"
done
[ -n "${BENCH_GROUP:-}" ] && echo "mode_bench: group run: the GPU entries of the labels ^(${BENCH_GROUP})\$ in one ctest run"
echo "mode_bench: median of $repeats run(s) per family and mode; ctest -j ${CTEST_PARALLEL_LEVEL:-4}," \
     "GPU slots ${STREAMCHECK_GPU_SLOTS:-2}; logs in $logs"
[ "$failed" -eq 0 ] || echo "mode_bench: some runs failed (rc != 0); see the logs"
exit $failed
