#!/usr/bin/env bash
# Gate for a GPU runner (driver or toolkit upgrade, new GPU, virtualized GPU): build, run the gate
# families, and fail unless a GPU was really used. On a GPU runner a skip for "no GPU" is a failure.
#
#   ci/gate.sh [BUILD_DIR]
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/build-gate}
bash "$src/ci/run_suite.sh" "$build" -- -L '^(instruments|harness|priority_flags)$' --no-tests=error
rc=$?
run=$(readlink -f "$build/results/latest")
python3 - "$run" <<'PY' || rc=1
import json, sys
env = json.load(open(sys.argv[1] + "/env.json"))
if env.get("gpu") is None:
    print("gate: FAILED: no GPU was used on this runner:", env.get("gpu_unavailable_reason"))
    sys.exit(1)
g = env["gpu"]
print(f"gate: {g['name']} sm_{g['arch'][3:]} driver {env['cuda']['driver_version']} "
      f"runtime {env['cuda']['runtime_version']} tick {g['timer_tick_ns']} ns "
      f"priorities {g['priority_range']['least']}..{g['priority_range']['greatest']}")
PY
[ $rc -eq 0 ] && echo "gate: passed" || echo "gate: FAILED (results in $run)"
exit $rc
