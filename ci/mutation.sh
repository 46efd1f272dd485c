#!/usr/bin/env bash
# Mutation job: for each catalog ID, run its family with STREAMCHECK_MUTATE=<ID> (the tests then drop
# that ID's edge or expectation) and require that exactly the tests claiming that ID fail.
#
#   ci/mutation.sh BUILD_DIR LABEL ID [ID ...]
#
# Prints one line per ID and a summary; exits 1 if any mutation survived or hit other tests.
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "$1" && pwd) label=$2
shift 2
failed=0
for id in "$@"; do
  (cd "$build" && STREAMCHECK_MUTATE="$id" STREAMCHECK_GPU_SLOTS=${STREAMCHECK_GPU_SLOTS:-4} \
     ctest -L "^${label}\$" -j "${MUTATION_JOBS:-4}" --timeout 120 >"$build/mutation-$id.log" 2>&1)
  if ! python3 "$src/ci/mutation_check.py" "$(readlink -f "$build/results/latest")" "$id"; then
    failed=1
    tail -n 25 "$build/mutation-$id.log" | sed "s/^/  [$id] /"
  fi
done
[ $failed -eq 0 ] && echo "mutation: every mutation was killed by exactly its own tests" ||
  echo "mutation: some mutations survived or hit other tests (see above)"
exit $failed
