#!/usr/bin/env bash
# GPU runner job: build, run the whole suite, run the mutation job, write the report, and collect the
# results into OUT_DIR (a tarball of the run folder plus logs). Used by the CI templates in ci/.
#
#   ci/gpu_runner.sh OUT_DIR [BUILD_DIR]
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$1
build=${2:-$src/build}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
bash "$src/ci/run_suite.sh" "$build" 2>&1 | tee "$out/suite.log"
suite_rc=${PIPESTATUS[0]}
suite_run=$(sed -n 's/^run_suite: results folder //p' "$out/suite.log" | tail -n 1)
tar -C "$(dirname "$suite_run")" -czf "$out/results.tgz" "$(basename "$suite_run")"
# The page and the folders beside it that it reads when a family or a test's row is opened (families/, details/,
# its drawings, traces).
for part in report.html families details timelines blocks traces; do cp -R "$suite_run/$part" "$out/" 2>/dev/null; done
# The gate's judgement of the whole run (0 as expected, 1 regressed, 2 not trustworthy), as summary.md and
# junit.xml (claim IDs, skip reasons).
python3 "$src/reports/streamcheck_gate.py" "$suite_run" --markdown "$out/summary.md" --junit "$out/junit.xml" | tee "$out/gate.log"
gate_rc=${PIPESTATUS[0]}
mutation_rc=0
# MUTATION_ONLY="<label>:<ID> ..." limits the job to those IDs (e.g. after a change to a few tests).
if [ -n "${MUTATION_ONLY:-}" ]; then
  for item in $MUTATION_ONLY; do
    bash "$src/ci/mutation.sh" "$build" "${item%%:*}" "${item#*:}" 2>&1 | tee -a "$out/mutation.log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  done
elif [ "${SKIP_MUTATION:-0}" != 1 ]; then
  # Every family with a plan: the IDs come from its table (ci/plan_ids.py), less the rows marked
  # "(no mutation run)", which say why, and on a machine of one GPU those marked "(mutation needs two GPUs)".
  # The GPUs CUDA saw in the suite's run (env.json's gpu_count; 0 when the run describes no GPU).
  gpu_count=$(python3 -c 'import json, sys; n = json.load(open(sys.argv[1])).get("gpu_count"); print(n if isinstance(n, int) else 0)' \
              "$suite_run/env.json" 2>/dev/null || echo 0)
  : >"$out/mutation.log"
  for plan in "$src"/tests/*/README.md; do
    family=$(basename "$(dirname "$plan")")
    ids=$(python3 "$src/ci/plan_ids.py" --mutations --gpus "$gpu_count" "$plan" 2>"$out/plan_ids.err")
    rc=$?
    # A plan that lists no ID is skipped; any other failure (a bad argument, a traceback) fails the job.
    if [ $rc -eq 1 ] && grep -q "lists no catalog ID" "$out/plan_ids.err"; then continue; fi
    if [ $rc -ne 0 ]; then
      echo "gpu_runner: ci/plan_ids.py failed on $plan: $(cat "$out/plan_ids.err")" | tee -a "$out/mutation.log"
      mutation_rc=1
      continue
    fi
    # shellcheck disable=SC2086  # one argument per ID
    bash "$src/ci/mutation.sh" "$build" "$family" $ids 2>&1 | tee -a "$out/mutation.log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && mutation_rc=1
  done
fi
echo "gpu_runner: suite rc=$suite_rc gate rc=$gate_rc mutation rc=$mutation_rc; $(cat "$out/gpu.txt")"
[ "$suite_rc" -eq 0 ] && [ "$gate_rc" -eq 0 ] && [ "$mutation_rc" -eq 0 ]
