#!/usr/bin/env bash
# Configure, build, run the whole suite on the default GPU, and write the HTML report.
#
#   ci/run_suite.sh [--every-gpu] [BUILD_DIR] [-- extra ctest arguments]
#
# --every-gpu: every GPU that nvidia-smi lists at once: one run per GPU (CUDA_VISIBLE_DEVICES=<index>, so each
# run folder holds one GPU's results and its env.json names that GPU) and, with two or more GPUs, one run of
# the tests that need two GPUs (label two_gpus: a family's TWO_GPUS) per pair of GPUs (neighbours; with an odd count the last
# with the first): the GPUs' runs at once, then the pairs' runs at once. Each run folder gets its report and ctest's log, each GPU after the
# first a comparison page against the first GPU's run, and the machine one page of its own, machine.html in
# the first GPU's run folder: what differs between the GPUs first, then GPU x family and the pairs' runs.
# Exit status: the worst of the runs'.
#
# Environment: CUDA_ARCHITECTURES (e.g. 90; default: the project's default), STREAMCHECK_MODE (isolated, the
# default, or fast: how ctest runs the tests; the build directory is the same for both).
# Exit status: ctest's (0 = every test passed or skipped with a reason), except 2 where ctest passed and
# nothing was tested on a GPU (no GPU, or every GPU test skipped): such a run is not a green one.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/ctest_run.sh
. "$src/ci/ctest_run.sh"
every_gpu=0
if [ "${1:-}" = "--every-gpu" ]; then
  every_gpu=1
  shift
fi
build=${1:-$src/build}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
options=()
[ -n "${CUDA_ARCHITECTURES:-}" ] && options+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES")
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" "${generator[@]}" "${options[@]}"
elif [ ${#options[@]} -gt 0 ]; then
  cmake -S "$src" -B "$build" "${options[@]}"
fi
cmake --build "$build" --parallel

nothing_on_gpu=""
finish() {  # finish STATUS: exits with it, or with 2 where it is 0 and a report said nothing was tested on a GPU
  if [ "$1" -eq 0 ] && [ -n "$nothing_on_gpu" ]; then
    echo "run_suite: $nothing_on_gpu: exit 2, not a green run" >&2
    exit 2
  fi
  exit "$1"
}
page() {  # page RUN_FOLDER: the run's page
  local run=$1 said
  if ! command -v python3 >/dev/null 2>&1; then
    echo "run_suite: python3 not found; no HTML report. Results are in $run" >&2
    return
  fi
  said=$(python3 "$src/reports/streamcheck_report.py" "$run" --source "$src" -o "$run/report.html") ||
    echo "run_suite: the report is missing or lists result files it could not read (see below); results are in $run" >&2
  [ -n "$said" ] && echo "$said"
  # The report's words for a run in which no GPU test passed or failed (reports/streamcheck/results.py).
  if grep -q "^report: nothing was tested on a GPU" <<<"$said"; then
    nothing_on_gpu=$(grep "^report: nothing was tested on a GPU" <<<"$said" | sed 's/^report: //')
  fi
}
compare() {  # compare RUN_FOLDER OLD_RUN_FOLDER: the comparison of the two runs' pages
  command -v python3 >/dev/null 2>&1 || return 0
  python3 "$src/reports/streamcheck_report.py" "$2" "$1" --source "$src" \
    -o "$1/compare-$(basename "$2").html" --text "$1/compare-$(basename "$2").txt" >/dev/null ||
    echo "run_suite: the comparison of $2 and $1 could not be written (see above)" >&2
}
report() {  # report RUN_FOLDER: its page, then where it is
  page "$1"
  echo "run_suite: results folder $1"
}

if [ $every_gpu -eq 1 ]; then
  gpus=()
  if command -v nvidia-smi >/dev/null 2>&1; then
    mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ')
  fi
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    echo "run_suite: --every-gpu sets CUDA_VISIBLE_DEVICES itself; unset it (it is '$CUDA_VISIBLE_DEVICES')" >&2
    exit 2
  fi
  if [ ${#gpus[@]} -eq 0 ]; then
    echo "run_suite: --every-gpu: nvidia-smi lists no GPU; one run on whatever CUDA sees" >&2
    gpus=("")
  fi
  # nvidia-smi numbers GPUs by PCI bus; CUDA numbers them fastest first unless told otherwise.
  export CUDA_DEVICE_ORDER=PCI_BUS_ID
  # Pairs for the two-GPU tests: neighbours, and with an odd count the last with the first, so every GPU is in
  # one. An empty CUDA_VISIBLE_DEVICES would hide every GPU: it is set only with an index.
  jobs_=()
  for g in "${gpus[@]}"; do jobs_+=("$g"); done
  n=${#gpus[@]}
  if [ "$n" -ge 2 ]; then
    for ((i = 0; i + 1 < n; i += 2)); do jobs_+=("${gpus[i]},${gpus[i + 1]}"); done
    [ $((n % 2)) -eq 1 ] && jobs_+=("${gpus[n - 1]},${gpus[0]}")
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # One run per GPU, all at once; then the pairs' runs, all at once. A test of two GPUs takes the second GPU's
  # lock while it holds the first: started beside the GPUs' own runs, it held one GPU idle for as long as a
  # process of the other GPU's run kept that one (on four H100s each GPU's run took 40-44 s, against 17-18 s alone).
  # The selection comes last: an older ctest keeps the last -L it is given, a newer one requires every -L.
  start_run() {  # start_run JOB: one ctest run in the background, its status and run folder into $work
    local j=$1 select_
    case "$j" in
      *,*) select_=(-L '^two_gpus$' --no-tests=error) ;;
      *) select_=(-LE '^two_gpus$') ;;
    esac
    (
      set +e
      if [ -n "$j" ]; then
        CUDA_VISIBLE_DEVICES=$j ctest_run "$build" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure \
          --timeout 300 --output-junit "junit-$$-${j/,/-}.xml" "$@" "${select_[@]}"
      else
        ctest_run "$build" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure --timeout 300 \
          --output-junit "junit-$$-.xml" "$@" "${select_[@]}"
      fi
      echo "$? $run" >"$work/status-${j/,/-}"
    ) >"$work/log-${j/,/-}" 2>&1 &
  }
  for j in "${jobs_[@]}"; do
    if [[ $j != *,* ]]; then start_run "$j" "$@"; fi
  done
  wait
  # Each GPU's page is written while the pairs' runs go on (a page reads its run's files only).
  for j in "${jobs_[@]}"; do
    if [[ $j != *,* ]] && read -r _ gpu_run <"$work/status-$j" && [ -n "$gpu_run" ]; then
      page "$gpu_run" >"$work/page-$j" 2>&1 &
    fi
  done
  for j in "${jobs_[@]}"; do
    if [[ $j == *,* ]]; then start_run "$j" "$@"; fi
  done
  wait
  worst=0
  first=""
  machine=()
  for j in "${jobs_[@]}"; do
    read -r rc run <"$work/status-${j/,/-}" || { rc=1; run=""; }
    label="GPU ${j:-(as CUDA sees them)}"
    [[ $j == *,* ]] && label="GPUs $j (tests that need two GPUs)"
    echo "run_suite: $label: ctest status $rc"
    # ctest's summary and what failed; the whole log goes into the run's folder.
    sed -n '/tests passed\|tests failed\|The following tests FAILED\|^\s*[0-9]* - .*(\(Failed\|Timeout\|Not Run\|Exception\))/p' \
      "$work/log-${j/,/-}" | sed "s/^/  /"
    [ "$rc" -gt "$worst" ] && worst=$rc
    if [ -z "$run" ]; then
      echo "run_suite: $label: ctest made no results folder (status $rc)" >&2
      cat "$work/log-${j/,/-}" >&2
      [ "$worst" -eq 0 ] && worst=1
      continue
    fi
    cp "$work/log-${j/,/-}" "$run/ctest.log"
    mv -f "$build/junit-$$-${j/,/-}.xml" "$run/junit.xml" 2>/dev/null || true
    machine+=("$run")
    # The pairs' pages and the comparisons are written at once, and all are said in the runs' order below.
    if [[ $j == *,* ]]; then
      report "$run" >"$work/report-${#machine[@]}" 2>&1 &
    elif [ -z "$first" ]; then
      first=$run
      { cat "$work/page-$j"; echo "run_suite: results folder $run"; } >"$work/report-${#machine[@]}"
    else
      { cat "$work/page-$j"; compare "$run" "$first"; echo "run_suite: results folder $run"; } \
        >"$work/report-${#machine[@]}" 2>&1 &
    fi
  done
  wait
  if [ ${#machine[@]} -ge 2 ] && command -v python3 >/dev/null 2>&1; then
    # In the first GPU's run folder, where the gate finds it; after the runs' pages, which it links.
    { python3 "$src/reports/streamcheck_report.py" --machine "${machine[@]}" --source "$src" \
        -o "${first:-${machine[0]}}/machine.html" ||
        echo "run_suite: the machine page could not be written (see above)"; } >"$work/machine" 2>&1
  fi
  for ((k = 1; k <= ${#machine[@]}; k++)); do
    cat "$work/report-$k"
    grep -q "^report: nothing was tested on a GPU" "$work/report-$k" &&
      nothing_on_gpu=$(grep "^report: nothing was tested on a GPU" "$work/report-$k" | sed 's/^report: //' | head -n 1)
  done
  [ -f "$work/machine" ] && cat "$work/machine"
  finish "$worst"
fi

set +e
ctest_run "$build" -j "${CTEST_PARALLEL_LEVEL:-4}" --output-on-failure --timeout 300 --output-junit "junit-$$.xml" "$@"
rc=$?
set -e
if [ -z "$run" ]; then
  echo "run_suite: ctest made no results folder (status $rc)" >&2
  exit $(( rc == 0 ? 1 : rc ))
fi
# ctest's own record of the run (its JUnit file) goes into the run's folder.
mv -f "$build/junit-$$.xml" "$run/junit.xml" 2>/dev/null || true
report "$run"
finish $rc
