#!/usr/bin/env bash
# Submits a fleet gate on Slurm (docs/fleet.md): the gate on NODES nodes, one task each
# (ci/slurm/fleet-gate.sbatch), then the fleet's verdict as a job that depends on it, whatever it ended with
# (--dependency=afterany, ci/slurm/fleet-verdict.sbatch).
#
#   STREAMCHECK_GRES=gpu:8 ci/slurm/submit.sh NODES FLEET_DIR [PREVIOUS_FLEET_DIR]
#
# STREAMCHECK_GRES: every GPU of a node as your site names it (gpu:8, gpu:h100:4); required.
# STREAMCHECK_SBATCH_ARGS: more sbatch options for both jobs (--partition=gpu --account=...).
# FLEET_DIR must be on a file system the nodes share. Prints both job IDs; the verdict is in FLEET_DIR.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ $# -lt 2 ]; then
  echo "usage: STREAMCHECK_GRES=gpu:G ci/slurm/submit.sh NODES FLEET_DIR [PREVIOUS_FLEET_DIR]" >&2
  exit 2
fi
gres=${STREAMCHECK_GRES:?set STREAMCHECK_GRES to every GPU of a node as your site names them, e.g. gpu:8}
nodes=$1
fleet=$(mkdir -p "$2" && cd "$2" && pwd)
previous=()
[ -n "${3:-}" ] && previous=("$(cd "$3" && pwd)")
read -r -a extra <<<"${STREAMCHECK_SBATCH_ARGS:-}"
common=(--parsable "--chdir=$src" "--export=ALL,STREAMCHECK_SRC=$src" "${extra[@]}")
# --parsable prints "<id>" or "<id>;<cluster>".
gate_job=$(sbatch "${common[@]}" --nodes="$nodes" --gres="$gres" "$src/ci/slurm/fleet-gate.sbatch" "$fleet")
gate_job=${gate_job%%;*}
verdict_job=$(sbatch "${common[@]}" --dependency=afterany:"$gate_job" "$src/ci/slurm/fleet-verdict.sbatch" \
  "$fleet" "${previous[@]}")
echo "submit: gate job ${gate_job} on ${nodes} node(s), verdict job ${verdict_job%%;*} after it; results in $fleet"
