#!/usr/bin/env bash
# One host's part of a fleet gate (docs/fleet.md): ci/gate.sh, then this gate's run folders copied into OUT_DIR,
# the host's folder of the fleet (FLEET_DIR/<host>/), with gate.exit (the gate's exit status as this host saw
# it), gate-summary.md and gate.log (its output): the layout reports/streamcheck_fleet.py reads. The GitHub Actions and GitLab
# templates, the Slurm script and the Kubernetes job all run it.
#
#   ci/fleet_node.sh BUILD_DIR OUT_DIR [-- extra ctest arguments]
#
# Exit status: the gate's (0 as expected, 1 regressed, 2 not trustworthy).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 2 ]; then
  echo "usage: ci/fleet_node.sh BUILD_DIR OUT_DIR [-- extra ctest arguments]" >&2
  exit 2
fi
build=$1
out=$2
shift 2
mkdir -p "$out" || exit 2
# The gate's output is kept with its results (gate.log): its last line names its run folders.
said=$out/gate.log
bash "$src/ci/gate.sh" "$build" "$@" 2>&1 | tee "$said"
rc=${PIPESTATUS[0]}
# The gate's last line names its own run folders: "gate: results in RUN... (exit N)".
read -r -a runs < <(sed -n 's/^gate: results in \(.*\) (exit [0-9]*)$/\1/p' "$said" | tail -n 1)
copied=0
for run in "${runs[@]}"; do
  if [ -f "$run/env.json" ] && cp -a "$run" "$out/"; then
    copied=$((copied + 1))
  fi
done
cp -f "$build/gate-summary.md" "$out/gate-summary.md" 2>/dev/null || true
echo "$rc" >"$out/gate.exit"
echo "fleet_node: $copied run folder(s) of this gate copied to $out (gate exit $rc)"
exit "$rc"
