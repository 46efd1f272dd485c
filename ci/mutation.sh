#!/usr/bin/env bash
# Mutation job: for each catalog ID, run its family with STREAMCHECK_MUTATE=<ID> (the tests then drop
# that ID's edge or expectation) and require that exactly the tests claiming that ID fail. The family's
# entries alone are made (STREAMCHECK_FAMILIES): in fast mode, its tests alone share the process.
#
#   ci/mutation.sh BUILD_DIR LABEL ID [ID ...]
#   STREAMCHECK_MODE=fast ci/mutation.sh BUILD_DIR LABEL ID ...   (the same in fast mode)
#
# Prints one line per ID (with the kind of mutation its tests applied: arrangement or expectation) and a
# summary that counts both kinds; exits 1 if any mutation survived or hit other tests.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/ctest_run.sh
. "$src/ci/ctest_run.sh"
build=$(cd "$1" && pwd) label=$2
shift 2
echo "mutation: mode ${STREAMCHECK_MODE:-isolated}"
failed=0
lines=()
for id in "$@"; do
  STREAMCHECK_FAMILIES="$label" STREAMCHECK_MUTATE="$id" ctest_run "$build" -L "^${label}\$" -j "${MUTATION_JOBS:-4}" --timeout 120 \
    >"$build/mutation-${STREAMCHECK_MODE:-isolated}-$id.log" 2>&1
  line=$(python3 "$src/ci/mutation_check.py" "${run:-no run folder}" "$id")
  status=$?
  echo "$line"
  lines+=("$line")
  if [ $status -ne 0 ]; then
    failed=1
    tail -n 25 "$build/mutation-${STREAMCHECK_MODE:-isolated}-$id.log" | sed "s/^/  [$id] /"
  fi
done
count() { printf '%s\n' "${lines[@]}" | grep -c -- "$1" || true; }
echo "mutation summary ($label): $(count ': killed \[arrangement\]') killed by an arrangement change," \
     "$(count ': killed \[expectation\]') by an expectation change only," \
     "$(count ': killed \[.*+.*\]') by both kinds in different tests," \
     "$(count 'NOT KILLED') not killed, of $# ID(s)"
[ $failed -eq 0 ] && echo "mutation: every mutation was killed by exactly its own tests" ||
  echo "mutation: some mutations survived or hit other tests (see above)"
exit $failed
