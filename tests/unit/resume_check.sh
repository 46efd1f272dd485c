#!/usr/bin/env bash
# A process of several tests resumes after a test that ended it (runner/include/sc/runner/resume.hpp), checked
# on resume_fake.cpp's three tests: the crash costs that test alone, the test after it runs in a fresh process,
# the exit status is the crashed child's; without a crash every test runs once, in one child.
#
#   resume_check.sh SC_RESUME_FAKE
set -uo pipefail
ulimit -c 0  # the crash is asked for: no core file
exe=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
problems=0
expect() {  # expect WHAT COUNT PATTERN: the log holds PATTERN COUNT times
  local n
  n=$(grep -c -- "$3" "$log")
  if [ "$n" -ne "$2" ]; then
    echo "resume_check: $1: '$3' seen $n times, want $2" >&2
    problems=1
  fi
}

SC_RESUME_CRASH=1 "$exe" >"$log" 2>&1
rc=$?
[ "$rc" -eq 134 ] || { echo "resume_check: a crashed child (SIGABRT) must give status 134, got $rc" >&2; problems=1; }
expect "the test before the crash" 1 '\[       OK \] Resume.First'
expect "the crashed test" 1 '\[ RUN      \] Resume.Crashes'
expect "the test after the crash" 1 '\[       OK \] Resume.Last'
expect "the parent's word" 1 'Resume.Crashes ended its process (status 134); its 1 tests not started run in a fresh one'

"$exe" >"$log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { echo "resume_check: without a crash the status must be 0, got $rc" >&2; problems=1; }
expect "every test once" 3 '\[       OK \] Resume\.'
expect "one child" 1 '\[==========\] Running 3 tests'
[ $problems -eq 0 ] || { cat "$log" >&2; exit 1; }
echo "resume_check: a crash cost one test; without one, one child ran every test"
