# shellcheck shell=bash
# Sourced by the ci/ scripts. ctest_run BUILD_DIR [ctest arguments...]: runs ctest in BUILD_DIR, returns its
# status, and sets `run` to the folder of that run: results/invocations/<ctest pid>-<start> names it
# (runner/include/sc/runner/run_context.hpp), so runs started together in one build folder each find
# their own. `run` is empty when the run made no folder (nothing was selected, or it ended before its begin).
# shellcheck disable=SC2034  # `run` is read by the scripts that source this file
ctest_run() {
  local build=$1
  shift
  (cd "$build" && exec ctest "$@") &
  local pid=$! rc=0
  wait "$pid" || rc=$?
  run=""
  local link
  for link in "$build"/results/invocations/"$pid"-*; do
    [ -e "$link" ] && run=$(readlink -f "$link")
  done
  return "$rc"
}
