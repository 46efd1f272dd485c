#!/usr/bin/env bash
# Environment matrix: runs the GPU families once with CUDA_LAUNCH_BLOCKING=1 and once with
# CUDA_DEVICE_MAX_CONNECTIONS=1 set in the calling environment. Tests whose arrangement cannot hold there
# must skip at once with their reason (sc::requirement, fixtures/include/sc/fixtures/environment.hpp), so
# both runs pass and take about as long as a plain run; the environment variants that set a variable
# themselves (default_streams.launch_blocking.*, conn1.*, ...) still run their own checks.
#
#   ci/env_matrix.sh BUILD_DIR [LABEL_REGEX]      LABEL_REGEX default: ^gpu$ (every GPU family)
#
# Per run: ctest's summary line, the wall time, the failed tests, and the skips grouped by reason (from
# the run's GoogleTest XML files). Logs: BUILD_DIR/env_matrix/<variable>.log. Exit status 0 only when both
# runs passed.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
if [ $# -lt 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
  echo "usage: ci/env_matrix.sh BUILD_DIR [LABEL_REGEX]  (BUILD_DIR: a configured and built build directory)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
# shellcheck source=ci/ctest_run.sh
. "$(dirname "${BASH_SOURCE[0]}")/ctest_run.sh"
labels=${2:-^gpu\$}
mkdir -p "$build/env_matrix"
status=0
for setting in CUDA_LAUNCH_BLOCKING=1 CUDA_DEVICE_MAX_CONNECTIONS=1; do
  log="$build/env_matrix/${setting%%=*}.log"
  start=$(date +%s%N)
  export "${setting?}"
  ctest_run "$build" -L "$labels" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure --no-tests=error >"$log" 2>&1
  rc=$?
  unset "${setting%%=*}"
  wall=$(awk -v ns="$(( $(date +%s%N) - start ))" 'BEGIN { printf "%.1f", ns / 1e9 }')
  summary=$(grep -E "tests passed|No tests were found" "$log" | tail -1)
  echo "env_matrix: $setting: rc=$rc wall ${wall} s: ${summary:-no ctest summary (see $log)}"
  # ctest lists failures as "  <n> - <name> (Failed|Timeout|...)".
  sed -n 's/^[[:space:]]*[0-9]\{1,\} - \([^ ]*\) (\([A-Za-z ]*\)).*/  failed: \1 (\2)/p' "$log" | grep -v "(Skipped)" || true
  python3 - "$run" <<'PY'
import collections, sys, xml.etree.ElementTree as ET
from pathlib import Path
reasons = collections.Counter()
for xml in sorted(Path(sys.argv[1], "gtest").rglob("*.xml")):
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        continue
    for skipped in root.iter("skipped"):
        text = (skipped.get("message") or "").split("\n", 1)
        reasons[(text[1] if len(text) > 1 else text[0])[:200]] += 1
for reason, n in reasons.most_common():
    print("  skipped %3d: %s" % (n, reason))
PY
  [ "$rc" -eq 0 ] || status=1
done
[ "$status" -eq 0 ] && echo "env_matrix: both runs passed" || echo "env_matrix: FAILED (logs in $build/env_matrix)"
exit $status
