#!/usr/bin/env bash
# Submits a fleet gate on Slurm (docs/fleet.md): the gate on NODES nodes, one task each
# (ci/slurm/fleet-gate.sbatch), then the fleet's verdict as a job that depends on it, whatever it ended with
# (--dependency=afterany, ci/slurm/fleet-verdict.sbatch). The sbatch options after -- go to both jobs, and must
# ask for every GPU of a node as your site names them (--gres=gpu:8, --gres=gpu:h100:4).
#
#   ci/slurm/submit.sh NODES FLEET_DIR [PREVIOUS_FLEET_DIR] -- --gres=gpu:8 [--partition=gpu ...]
#
# FLEET_DIR must be on a file system the nodes share. Both jobs are submitted from the source tree (their
# SLURM_SUBMIT_DIR, where they find the scripts). Prints both job IDs; the verdict is in FLEET_DIR.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
usage="usage: ci/slurm/submit.sh NODES FLEET_DIR [PREVIOUS_FLEET_DIR] -- --gres=gpu:G [sbatch options]"
args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  args+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
if [ ${#args[@]} -lt 2 ] || [[ " $* " != *" --gres="* ]]; then
  echo "$usage (--gres: every GPU of a node, as your site names them)" >&2
  exit 2
fi
nodes=${args[0]}
fleet=$(mkdir -p "${args[1]}" && cd "${args[1]}" && pwd)
previous=()
[ -n "${args[2]:-}" ] && previous=("$(cd "${args[2]}" && pwd)")
cd "$src"
# The verdict job needs no GPU: it gets the options without --gres.
verdict_options=()
for option in "$@"; do [[ $option == --gres=* ]] || verdict_options+=("$option"); done
# --parsable prints "<id>" or "<id>;<cluster>".
gate_job=$(sbatch --parsable "--chdir=$src" "$@" --nodes="$nodes" "$src/ci/slurm/fleet-gate.sbatch" "$fleet")
gate_job=${gate_job%%;*}
verdict_job=$(sbatch --parsable "--chdir=$src" "${verdict_options[@]}" --dependency=afterany:"$gate_job" \
  "$src/ci/slurm/fleet-verdict.sbatch" \
  "$fleet" "${previous[@]}")
echo "submit: gate job ${gate_job} on ${nodes} node(s), verdict job ${verdict_job%%;*} after it; results in $fleet"
