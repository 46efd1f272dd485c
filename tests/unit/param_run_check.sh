#!/usr/bin/env bash
# A run of a value-parameterized test is whole (runner/tools/sc_env.cpp, reports/streamcheck/results.py): its
# instances' XML files lie in subfolders of gtest/ (Holders.HoldTheirStreamButNotAnother/Latch), env.json counts
# them with the rest, and the results reader finds the same number, so the gate has no count to distrust.
# Without a GPU the instances skip; their files are written all the same.
#
#   param_run_check.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
(exec env -u STREAMCHECK_MODE ctest --test-dir "$build" -R '^harness\.Holders\.' >/dev/null 2>&1) &
pid=$!
wait $pid
run=""
for link in "$build"/results/invocations/"$pid"-*; do [ -e "$link" ] && run=$(readlink -f "$link"); done
[ -n "$run" ] && [ -f "$run/env.json" ] || { echo "FAIL: the ctest run has no run folder"; exit 1; }
PYTHONPATH="$src/reports" python3 - "$run" <<'PY'
import json, sys
from pathlib import Path
from streamcheck.results import load_run
run = Path(sys.argv[1])
files = sorted(p.relative_to(run / "gtest").as_posix() for p in (run / "gtest").rglob("*.xml"))
counted = json.loads((run / "env.json").read_text())["run"]["gtest_xml_files"]
read = load_run(run)
nested = [f for f in files if "/" in f]
problems = []
if len(nested) < 2:
    problems.append("no instance's XML lies in a subfolder: %s" % files)
if counted != len(files):
    problems.append("env.json counts %d XML file(s), the folder holds %d" % (counted, len(files)))
if read["xml_files"] != len(files) or any("counts" in n for n in read["notes"]):
    problems.append("the results reader found %d: %s" % (read["xml_files"], read["notes"]))
for p in problems:
    print("FAIL: " + p)
if not problems:
    print("param_run: %d XML files, %d of instances in subfolders, counted alike" % (len(files), len(nested)))
sys.exit(1 if problems else 0)
PY
status=$?
[ $status -eq 0 ] && rm -rf "$run"
exit $status
