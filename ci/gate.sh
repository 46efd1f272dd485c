#!/usr/bin/env bash
# Gate for a GPU runner (driver or toolkit upgrade, new GPU, virtualized GPU): build, run every GPU test on
# every GPU of the machine at once (ci/run_suite.sh --every-gpu: a run per GPU, the two-GPU tests over pairs),
# and judge the runs with reports/streamcheck_gate.py (the one gate; README, "Gating a runner"); the worst
# run's verdict is the machine's. With CUDA_VISIBLE_DEVICES set, one run on the GPUs it names. Which rows gate
# is the baselines' policy (baselines/sm_<cc>.json), not a list of families.
#
#   ci/gate.sh [BUILD_DIR] [-- extra ctest arguments]
#
# Exit status: 0 every behavior as expected; 1 a behavior regressed (a test failed, a gating baseline row
# differs); 2 the run is not trustworthy (nothing tested on a GPU, the runner's set-up (CUDA_LAUNCH_BLOCKING,
# a sanitizer, MPS, MIG, another process on the GPU), CUPTI off, results incomplete, a watchdog fired, or no
# new run at all). Writes gate-summary.md (also appended to $GITHUB_STEP_SUMMARY when set) and gate-junit.xml
# (claim IDs, skip reasons) into its first run's folder, and copies both to BUILD_DIR.
#
# Mode: fast unless STREAMCHECK_MODE says otherwise (a runner gating many machines pays the suite's time on
# each; the gate reads both modes alike, and a test that breaks its fast process leaves the rest of its
# entry not run, which the gate calls not trustworthy). The build directory serves both modes.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
export STREAMCHECK_MODE=${STREAMCHECK_MODE:-fast}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/build}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
mkdir -p "$build"
# An earlier gate's summary must never stand for this one's.
rm -f "$build/gate-summary.md" "$build/gate-junit.xml"
said=$(mktemp)
trap 'rm -f "$said"' EXIT
every=(--every-gpu)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && every=()
bash "$src/ci/run_suite.sh" "${every[@]}" "$build" -- -L '^gpu$' --no-tests=error "$@" 2>&1 | tee "$said"
suite_rc=${PIPESTATUS[0]}
# This gate's own runs, as run_suite.sh names them (another run in the same build folder may be newer).
mapfile -t runs < <(sed -n 's/^run_suite: results folder //p' "$said")
run=${runs[0]:-}
if [ -z "$run" ] || [ ! -f "$run/env.json" ]; then
  # A build that failed leaves no run; an earlier one must not be judged in its place.
  echo "gate: NOT TRUSTWORTHY: this gate produced no run folder (ctest status $suite_rc); see above" |
    tee "$build/gate-summary.md"
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat "$build/gate-summary.md" >>"$GITHUB_STEP_SUMMARY"
  exit 2
fi
# Each run's ctest record (RUN/junit.xml) is read with it. The summary is written into the gate's first run
# folder, so that gates run at once in one build folder (one per GPU) keep theirs, then copied to BUILD_DIR.
python3 "$src/reports/streamcheck_gate.py" "${runs[@]}" --markdown "$run/gate-summary.md" \
  --junit "$run/gate-junit.xml"
rc=$?
# A GPU whose ctest made no run folder was not gated: the machine's gate proves nothing about it.
if grep -q "ctest made no results folder" "$said"; then
  {
    echo ""
    echo "**NOT TRUSTWORTHY**: $(grep "ctest made no results folder" "$said" | sed 's/^run_suite: //' | paste -sd ';' -)"
  } | tee -a "$run/gate-summary.md"
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] && tail -n 2 "$run/gate-summary.md" >>"$GITHUB_STEP_SUMMARY"
  rc=2
fi
cp -f "$run/gate-summary.md" "$build/gate-summary.md.$$" && mv -f "$build/gate-summary.md.$$" "$build/gate-summary.md"
cp -f "$run/gate-junit.xml" "$build/gate-junit.xml.$$" 2>/dev/null && mv -f "$build/gate-junit.xml.$$" "$build/gate-junit.xml"
echo "gate: results in ${runs[*]} (exit $rc)"
exit $rc
