#!/usr/bin/env bash
# The fleet gate on a real Slurm of one node, this machine: starts munged, slurmctld and slurmd in a folder of
# their own (one GPU of generic resource, so that --gres=gpu:1 is granted here too), submits ci/slurm/submit.sh,
# waits for both jobs, and checks what they left: this host's folder with the gate's exit status, and the fleet
# verdict with its page, Markdown and JUnit. Stops every daemon it started, also when a check fails.
#
#   ci/slurm/one_node_check.sh BUILD_DIR
#
# BUILD_DIR: a built tree; the gate runs its GPU tests from it (on a machine without a GPU every one skips, so
# the right verdict is 2, "not trustworthy: nothing tested on a GPU": this proves the plumbing). Exit status 0
# when every check held, 1 when one did not, 77 (a skip, with the reason) when Slurm or munge is not installed or
# it does not run as root.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:?usage: ci/slurm/one_node_check.sh BUILD_DIR}" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "one_node_check: skipped: starting slurmd as the user it runs jobs for needs root"
  exit 77
fi
for tool in munged slurmctld slurmd sbatch squeue sacct; do
  if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
    echo "one_node_check: skipped: $tool is not installed (Debian packages slurm-wlm and munge)"
    exit 77
  fi
done
PATH=$PATH:/usr/sbin
work=$(mktemp -d /tmp/streamcheck-slurm-XXXXXX)
host=$(hostname -s)
# Ports of this check's own, from its process number: two checks at once do not meet.
port=$((20000 + ($$ % 20000)))
stop() {
  local pidfile
  for pidfile in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munge/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 1
  rm -rf "$work"
}
trap stop EXIT
fail() {
  echo "one_node_check: FAILED: $*"
  for log in "$work"/slurmctld.log "$work"/slurmd.log "$work"/fleet/*.out; do
    [ -f "$log" ] && { echo "--- $log"; tail -n 15 "$log"; }
  done
  exit 1
}

mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/fleet"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/seed" ||
  fail "munged did not start"
cat >"$work/slurm.conf" <<EOF
ClusterName=streamcheck
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$(nproc) RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=check Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
printf 'AutoDetect=off\nNodeName=%s Name=gpu File=/dev/null\n' "$host" >"$work/gres.conf"
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" -c || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 1 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle || fail "the node never became idle: $(sinfo -h -o '%t %E')"

# The fleet gate as a user submits it, the build already made (a node builds nothing here).
# The node builds in $TMPDIR/streamcheck-build-<host> (fleet-gate.sbatch): there, the build already made.
mkdir -p "$work/tmp"
ln -s "$build" "$work/tmp/streamcheck-build-$host"
said=$(TMPDIR=$work/tmp bash "$src/ci/slurm/submit.sh" 1 "$work/fleet" -- --gres=gpu:1 \
  "--output=$work/fleet/%x-%j.out") ||
  fail "submit.sh: $said"
echo "one_node_check: $said"
for _ in $(seq 1 600); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 1
done
[ -z "$(squeue -h -o %i)" ] && echo "one_node_check: both jobs ended" || fail "jobs still queued after 600 s"
[ -f "$work/fleet/$host/gate.exit" ] || fail "the node left no $host/gate.exit"
compgen -G "$work/fleet/$host/*/env.json" >/dev/null || fail "the node's gate left no run folder in $host/"
echo "one_node_check: the gate on $host exited $(cat "$work/fleet/$host/gate.exit")"
for file in fleet.html fleet-summary.md fleet-junit.xml; do
  [ -s "$work/fleet/$file" ] || fail "the verdict job wrote no $file"
done
verdict=$(head -n 1 "$work/fleet/fleet-summary.md")
echo "one_node_check: verdict: $verdict"
# No GPU here: every GPU test skipped, so the right verdict is 2; with a GPU, whatever the gate said.
expected=$(cat "$work/fleet/$host/gate.exit")
grep -q "(exit $expected)" <<<"$verdict" || fail "the fleet verdict does not carry the node's exit $expected"
grep -q "$host" "$work/fleet/fleet-junit.xml" || fail "the JUnit file has no suite for $host"
echo "one_node_check: the gate ran on the node through Slurm and the verdict job judged its folder"
