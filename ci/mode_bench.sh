#!/usr/bin/env bash
# Benchmark of the two modes, not a timed test: whole ctest runs of every GPU entry (label gpu), isolated
# and fast in turn on the same machine, and the minimum, median and maximum wall time of each mode.
#
#   ci/mode_bench.sh BUILD_DIR [N=3]
#
# Each run is a ctest run of its own (its own results folder), with -j ${CTEST_PARALLEL_LEVEL:-4}; a failed
# run is reported and its time still counted. Logs: BUILD_DIR/mode_bench/. Exit status 1 when a run failed.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
if [ $# -lt 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
  echo "usage: ci/mode_bench.sh BUILD_DIR [N]  (BUILD_DIR: a configured and built build directory)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
n=${2:-3}
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "mode_bench: N must be a positive integer, got '$n'" >&2
  exit 2
fi
mkdir -p "$build/mode_bench"
failed=0
declare -A times
for i in $(seq 1 "$n"); do
  for mode in isolated fast; do
    log="$build/mode_bench/$mode-$i.log"
    start=$(date +%s%N)
    (cd "$build" && STREAMCHECK_MODE=$mode ctest -L '^gpu$' -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure) >"$log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    times[$mode]+="$ms "
    printf 'mode_bench: %-8s run %d/%d rc=%d %7.2f s  %s\n' "$mode" "$i" "$n" "$rc" "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')" \
      "$(grep -E 'tests passed' "$log" | tail -1)"
    [ "$rc" -eq 0 ] || failed=1
  done
done
for mode in isolated fast; do
  # shellcheck disable=SC2086  # one number per word
  printf '%s\n' ${times[$mode]} | sort -n | awk -v m="$mode" '{ t[NR] = $1 } END {
    printf "mode_bench: %-8s min %.2f s, median %.2f s, max %.2f s (%d runs)\n", m, t[1] / 1000, t[int((NR + 1) / 2)] / 1000, t[NR] / 1000, NR }'
done
exit $failed
