#!/usr/bin/env python3
"""A fast entry whose filter selects no test must not load CUPTI (fixtures/src/main.cpp sets CUPTI up in
GoogleTest's global environment, which runs only when a test is selected). Runs the sample binary twice
with the dynamic loader's file log (LD_DEBUG=files): with a filter that selects nothing, libcupti must not
be loaded; with one that selects a test it must be (the control: without it the first check proves
nothing, and the check skips, exit 77, where CUPTI cannot be loaded at all).

    empty_entry_check.py SAMPLE_EXE WORK_DIR
"""
import os
import subprocess
import sys


def loads_cupti(exe, work, test_filter):
    env = dict(os.environ, LD_DEBUG="files")
    env.pop("STREAMCHECK_TRACE", None)  # "off" would keep CUPTI out in both runs
    run = subprocess.run([exe, "--gtest_filter=" + test_filter, "--streamcheck-mode=fast",
                          "--streamcheck-results=" + work], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    loaded = [line for line in run.stderr.splitlines() if "libcupti" in line and "dynamically loaded" in line]
    return run.returncode, loaded


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rc, loaded = loads_cupti(exe, work, "NoSuchSuite.*")
    if loaded:
        print("FAIL: a process whose filter selects no test loaded CUPTI:\n  " + "\n  ".join(loaded))
        return 1
    if rc not in (0, 77):
        print("FAIL: the process with no test selected exited with %d" % rc)
        return 1
    rc, loaded = loads_cupti(exe, work, "Sample.PassesWithoutProperties")
    if not loaded:
        print("SKIP: CUPTI is not loaded even when a test is selected here (no libcupti?), so its absence "
              "above proves nothing")
        return 77
    where = loaded[0].split("file=", 1)[-1].split(" [", 1)[0]
    print("OK: no test selected: CUPTI not loaded; a test selected: CUPTI loaded (%s)" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
