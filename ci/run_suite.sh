#!/usr/bin/env bash
# Configure, build, run the whole suite on the default GPU, and write the HTML report.
#
#   ci/run_suite.sh [BUILD_DIR] [-- extra ctest arguments]
#
# Environment: CUDA_ARCHITECTURES (e.g. 90; default: the project's default), STREAMCHECK_DEVICE.
# Exit status: ctest's (0 = every test passed or skipped with a reason).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/build}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
arch=()
[ -n "${CUDA_ARCHITECTURES:-}" ] && arch=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES")
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" "${generator[@]}" "${arch[@]}"
elif [ ${#arch[@]} -gt 0 ]; then
  cmake -S "$src" -B "$build" "${arch[@]}"
fi
cmake --build "$build" --parallel

set +e
(cd "$build" && ctest --output-on-failure --timeout 300 --output-junit junit.xml "$@")
rc=$?
set -e

run=$(readlink -f "$build/results/latest")
if command -v python3 >/dev/null 2>&1; then
  python3 "$src/reports/streamcheck_report.py" "$run" --source "$src" -o "$run/report.html" ||
    echo "run_suite: the report is missing or lists result files it could not read (see above); results are in $run" >&2
else
  echo "run_suite: python3 not found; no HTML report. Results are in $run" >&2
fi
echo "run_suite: results folder $run"
exit $rc
