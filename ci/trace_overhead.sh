#!/usr/bin/env bash
# Benchmark (not a test): what CUPTI tracing costs. Runs the GPU families twice, with STREAMCHECK_TRACE=off
# and with tracing on, and prints the ctest wall times and INST-05's 1000-launch figures of each run.
#
#   ci/trace_overhead.sh BUILD_DIR [REPEATS]
set -euo pipefail
build=$(cd "$1" && pwd)
repeats=${2:-3}
labels='^(instruments|harness|priority_flags)$'
for mode in off on; do
  for i in $(seq "$repeats"); do
    start=$(date +%s.%N)
    (cd "$build" && env STREAMCHECK_TRACE=$mode ctest -L "$labels" -Q >/dev/null 2>&1) || true
    end=$(date +%s.%N)
    run=$(readlink -f "$build/results/latest")
    python3 - "$mode" "$start" "$end" "$run" "$(dirname "$0")/../reports" <<'PY'
import sys
from pathlib import Path
mode, start, end, run = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sys.path.insert(0, sys.argv[5])
from streamcheck.results import load_env  # the one results reader
env = load_env(Path(run))
i5 = (env.get("instruments") or {}).get("INST-05", {}).get("figures", {})
print(f"tracing={mode:3} suite_wall_s={end - start:6.2f} "
      f"launch_us_gpu={i5.get('gpu_us_per_launch', float('nan')):.3f} "
      f"launch_us_host={i5.get('host_enqueue_us_per_launch', float('nan')):.3f} "
      f"cupti_active={i5.get('cupti_active')} tracing_env={(env.get('tracing') or {}).get('enabled')}")
PY
  done
done
