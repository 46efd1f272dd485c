#!/usr/bin/env bash
# GPU runner job: build, run the whole suite, run the mutation job, write the report, and collect the
# results into OUT_DIR (a tarball of the run folder plus logs). Used by the CI templates in ci/.
#
#   ci/gpu_runner.sh OUT_DIR [BUILD_DIR]
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$1
build=${2:-$src/build-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
bash "$src/ci/run_suite.sh" "$build" 2>&1 | tee "$out/suite.log"
suite_rc=${PIPESTATUS[0]}
suite_run=$(readlink -f "$build/results/latest")
tar -C "$(dirname "$suite_run")" -czf "$out/results.tgz" "$(basename "$suite_run")"
cp "$suite_run/report.html" "$out/report.html" 2>/dev/null
mutation_rc=0
# MUTATION_ONLY="<label>:<ID> ..." limits the job to those IDs (e.g. after a change to a few tests).
if [ -n "${MUTATION_ONLY:-}" ]; then
  for item in $MUTATION_ONLY; do
    bash "$src/ci/mutation.sh" "$build" "${item%%:*}" "${item#*:}" 2>&1 | tee -a "$out/mutation.log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  done
elif [ "${SKIP_MUTATION:-0}" != 1 ]; then
  bash "$src/ci/mutation.sh" "$build" priority_flags \
    PRIO-01 PRIO-02 PRIO-03 PRIO-04 PRIO-05 PRIO-06 PRIO-07 PRIO-08 PRIO-09 PRIO-10 PRIO-11 PRIO-12 PRIO-13 \
    2>&1 | tee "$out/mutation.log"
  mutation_rc=${PIPESTATUS[0]}
  bash "$src/ci/mutation.sh" "$build" instruments INST-01 INST-02 INST-03 INST-04 INST-05 INST-06 INST-07 INST-08 \
    2>&1 | tee -a "$out/mutation.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  bash "$src/ci/mutation.sh" "$build" default_streams DFLT-01 DFLT-02 DFLT-03 DFLT-04 DFLT-05 DFLT-06 DFLT-07 \
    DFLT-08 DFLT-09 DFLT-10 DFLT-11 DFLT-12 DFLT-13 DFLT-14 DFLT-15 DFLT-16 DFLT-17 DFLT-18 DFLT-19 DFLT-20 DFLT-21 DFLT-22 DFLT-23 2>&1 | tee -a "$out/mutation.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  bash "$src/ci/mutation.sh" "$build" host_funcs HOST-01 HOST-02 HOST-03 HOST-04 HOST-05 HOST-06 HOST-07 HOST-08 HOST-09 \
    HOST-10 HOST-11 HOST-12 HOST-13 HOST-14 2>&1 | tee -a "$out/mutation.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  bash "$src/ci/mutation.sh" "$build" copy_overlap COPY-01 COPY-02 COPY-03 COPY-04 COPY-05 COPY-06 COPY-07 \
    COPY-08 COPY-09 COPY-10 COPY-11 COPY-12 COPY-13 2>&1 | tee -a "$out/mutation.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  # SCHED-03, SCHED-12 and SCHED-13 have no mutation of their own: they are judged in tests that the
  # SCHED-01/02/09 mutations (and, for SCHED-13, every other one) already kill (the plan says so).
  bash "$src/ci/mutation.sh" "$build" priority_sched SCHED-01 SCHED-02 SCHED-04 SCHED-05 SCHED-06 SCHED-07 \
    SCHED-08 SCHED-09 SCHED-10 SCHED-11 2>&1 | tee -a "$out/mutation.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
fi
echo "gpu_runner: suite rc=$suite_rc mutation rc=$mutation_rc; $(cat "$out/gpu.txt")"
[ $suite_rc -eq 0 ] && [ $mutation_rc -eq 0 ]
