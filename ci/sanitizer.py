#!/usr/bin/env python3
"""Compute-sanitizer job over the GPU families: the body of ci/sanitizer.sh (see there for usage).

Every GPU ctest entry of the chosen families runs once per tool, as its own process, under
  compute-sanitizer --tool T --error-exitcode 86 --check-exit-code no [per-test options] <the entry's command>
with the entry's environment, working directory and STREAMCHECK_SANITIZER=T (tracing then stays off and
says why; env.json records it), and a deadline. The test's own verdict comes from its GoogleTest output;
the tool's verdict from its summary lines. Standard library only.
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ERROR_EXITCODE = 86
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck", "synccheck")
# racecheck and synccheck look at shared memory and block barriers. The kernels of default_streams (latch,
# mark, fill, mismatch count) use neither, so those tools have nothing to check there; every other family
# runs kernels with __shared__ stamps and __syncthreads (spin, scheduling spin, gap log, grid latch; events
# spins for its host-wait figures). Every tool runs every GPU family (the labels of the entries labelled gpu)
# but these.
LEFT_OUT = {"racecheck": ("default_streams",), "synccheck": ("default_streams",)}

# Tests that pass bad arguments on purpose: the API errors they provoke are the behavior under test, so
# the tool does not report API errors for them (--report-api-errors no). Errors in device code still count.
EXPECTED_API_ERRORS: Dict[str, str] = {
    "PriorityFlags.UnknownFlagBitsAreRejected": "PRIO-09 passes unknown flag bits to the stream create calls",
    "DefaultStreams.DefaultStreamsCannotBeDestroyed": "DFLT-13 destroys the legacy and per-thread streams (child)",
    "DefaultStreams.CaptureExcludesTheLegacyStream": "DFLT-14 begins capture on, and launches into, the legacy stream",
    "DefaultStreams.GreenContextStreamsAreNonBlockingAndHaveNoPerThreadStream":
        "DFLT-21 creates a green-context stream with flags 0 and asks for the per-thread stream's context",
    "HostFuncs.InvalidArgumentsAreRefusedByName":
        "HOST-12 passes callback flags 1, and a null host function in its child process",
    "HostFuncs.CaptureTakesHostFunctionsAsHostNodesAndRefusesCallbacks":
        "HOST-13 adds a stream callback during capture, which is refused",
    "HostFuncs.CudaCallsInsideAHostFunction":
        "HOST-05 makes CUDA calls (an allocation, a query) inside a host function, refused with cudaErrorNotPermitted",
    "EventsAndWaits.ElapsedTimeErrorsByName":
        "EVT-07 asks for elapsed times of pending, untimed and never-recorded events",
    "EventsAndWaits.InvalidArgumentsAreRefusedByName":
        "EVT-11 passes bad wait flags, cudaEventInterprocess with timing, and null out-pointers",
    "EventsAndWaits.DriverStreamCallsWithoutACurrentContext":
        "EVT-20 calls cuStreamQuery and cuStreamSynchronize on a thread without a current context",
    "MemoryPools.CompletedFreeIsReusedWithoutAnEdge":
        "MPOOL-05 allocates in a full one-block pool with opportunistic reuse off, which may fail",
    "MemoryPools.NoReusePolicyFailsWhileTheFreeIsPending":
        "MPOOL-07 allocates in a full one-block pool with every reuse policy off (cudaErrorMemoryAllocation)",
    "MemoryPools.UsedHighMarkResetsOnlyToZero": "MPOOL-12 resets a high-water mark to a non-zero value",
    "MemoryPools.PerThreadStreamsOfTwoThreadsAreTwoStreamsForReuse":
        "MPOOL-08 allocates from another thread in a full one-block pool (cudaErrorMemoryAllocation)",
    "MemoryPools.UnfreedGraphAllocationRefusesTheNextLaunchUntilFreed":
        "MPOOL-11 launches a graph again while its allocation is unfreed (cudaErrorInvalidValue)",
    "StreamCapture.UnsafeCallOnTheCapturingThreadPerMode": "CAPT-02 calls cudaMalloc during a capture, refused under Global and ThreadLocal",
    "StreamCapture.UnsafeCallFromAnotherThreadPerMode": "CAPT-03 calls cudaMalloc from another thread beside a Global capture, refused",
    "StreamCapture.DeviceWideCallsFromAnotherThreadPerMode": "CAPT-04 synchronizes the device from another thread during a capture, refused",
    "StreamCaptureInEachMode.LegacyStreamWorkIsRefusedBesideABlockingCapture/*":
        "CAPT-05 launches into the legacy stream beside a blocking capture, refused",
    "StreamCapture.LegacyStreamWorkFromAnotherThreadBesideABlockingGlobalCapture": "CAPT-05 launches into the legacy stream beside a blocking capture, refused",
    "StreamCapture.CallsACaptureRefusesAndWhetherItSurvives": "CAPT-06 makes calls a capture refuses",
    "StreamCapture.QueriesOfCapturedWorkAreRefused": "CAPT-07 queries and synchronizes a capturing stream and a captured event",
    "StreamCapture.ForkNeverJoinedEndsTheCaptureUnjoined": "CAPT-08 ends a capture with an unjoined fork",
    "StreamCapture.AnotherThreadEndingAThreadLocalCaptureIsTheWrongThread": "CAPT-08 ends a capture from the wrong thread",
    "StreamCapture.CaptureWaitingOnAnEventFromOutsideIsIsolation": "CAPT-08 waits on an event from outside a capture",
    "StreamCapture.SecondCaptureWaitingOnTheFirstsEventIsAMerge": "CAPT-08 waits across two capture sequences",
}
# No test's child is left untracked (--target-processes application-only): under the tool (memcheck, H100,
# CUDA 13.0) a re-executed death-test child's CUDA initialization never returned, tracked or not, so the tests
# with such a child (PRIO-10, DFLT-13, HOST-11, EVT-18, and HOST-12's child part) skip under the tool with that
# reason (sc::requirement::death_test_children).

# Return codes that are statuses, not failures: a query of a stream or event with work pending.
STATUS_NOT_ERRORS = ("cudaErrorNotReady", "CUDA_ERROR_NOT_READY")

API_ERROR = re.compile(r"Program hit (\w+) \(error \d+\).*?on CUDA API call to (\w+)")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
RACECHECK_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
WATCHDOG = "STREAMCHECK-WATCHDOG"
SKIP_LINE = re.compile(r":\d+: Skipped\s*$")


def gtest_name(ctest_name: str, command: List[str]) -> str:
    """Suite.Test of a ctest entry, from its --gtest_filter (the ctest name carries family and entry)."""
    for arg in command:
        if arg.startswith("--gtest_filter="):
            return arg[len("--gtest_filter="):]
    # Discovered entries (PRE_TEST) run through a wrapper: the ctest name is <family>[.<entry>].Suite.Test.
    return ".".join(ctest_name.split(".")[-2:])


def property_of(test: dict, name: str, default=None):
    for p in test.get("properties", []):
        if p.get("name") == name:
            return p.get("value")
    return default


def gpu_families(listing: dict) -> Tuple[str, ...]:
    """The family labels of the GPU entries (every label of an entry labelled gpu but gpu itself)."""
    labels = set()
    for test in listing.get("tests", []):
        test_labels = property_of(test, "LABELS", []) or []
        if "gpu" in test_labels:
            labels.update(test_labels)
    return tuple(sorted(labels - {"gpu"}))


def gpu_entries(listing: dict, labels: Tuple[str, ...]) -> List[dict]:
    """The GPU ctest entries of the given families, in ctest's order, with their own time limit."""
    entries = []
    for test in listing.get("tests", []):
        test_labels = property_of(test, "LABELS", []) or []
        if "gpu" not in test_labels or not any(label in test_labels for label in labels):
            continue
        command = test.get("command") or []
        if not command:
            continue
        entries.append({
            "name": test["name"],
            "gtest": gtest_name(test["name"], command),
            "command": command,
            "environment": property_of(test, "ENVIRONMENT", []) or [],
            "timeout": float(property_of(test, "TIMEOUT", 60.0) or 60.0),
            "workdir": property_of(test, "WORKING_DIRECTORY"),
        })
    return entries


def matches(table: Dict[str, str], name: str) -> Optional[str]:
    for pattern, reason in table.items():
        if fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def tool_options(tool: str, name: str) -> List[str]:
    options = ["--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--check-exit-code", "no"]
    if matches(EXPECTED_API_ERRORS, name):
        options += ["--report-api-errors", "no"]
    return options


def tool_findings(text: str) -> dict:
    """What the tool reported: errors counted by its summaries, less API 'errors' that are statuses; the
    API errors by call; every summary seen (one per tracked process)."""
    api = [(m.group(2), m.group(1)) for m in API_ERROR.finditer(text)]
    statuses = sum(1 for _, code in api if code in STATUS_NOT_ERRORS)
    summaries = [int(n) for n in ERROR_SUMMARY.findall(text)]
    summaries += [int(e) for e, _ in RACECHECK_SUMMARY.findall(text)]
    counted = sum(summaries)
    return {
        "errors": max(counted - statuses, 0),
        "api_errors": [(call, code) for call, code in api if code not in STATUS_NOT_ERRORS],
        "statuses": statuses,
        "summaries": len(summaries),
    }


def test_outcome(text: str) -> Tuple[str, str]:
    """The GoogleTest verdict of one test process and the first line that says why (failures, skips)."""
    if WATCHDOG in text:
        line = next((l for l in text.splitlines() if WATCHDOG in l), WATCHDOG)
        return "failed", "latch watchdog: " + line.strip()
    if "[  FAILED  ]" in text:
        why = next((l.strip() for l in text.splitlines() if "Failure" in l or "error:" in l), "")
        return "failed", why
    if "[  SKIPPED ]" in text:
        # GoogleTest's "<file>:<line>: Skipped", then the reason; not any line that merely contains the word
        # (the command line of a test named ...AreSkipped does).
        lines = text.splitlines()
        for i, l in enumerate(lines):
            if SKIP_LINE.search(l) and i + 1 < len(lines):
                return "skipped", lines[i + 1].strip()
        return "skipped", ""
    if "[  PASSED  ] 1 test" in text:
        return "passed", ""
    return "failed", "no GoogleTest verdict in the output (the process ended early)"


def skip_group(observation: Path, why: str) -> str:
    """What a skipped test is grouped by in the summary: for a test whose rows were not compared under the
    tool (its observation file's skip_kind not_compared), the tool's reason its rows give, whatever the rows;
    else its skip reason."""
    try:
        doc = json.loads(observation.read_text())
    except (OSError, ValueError):
        return why
    if not isinstance(doc, dict) or doc.get("skip_kind") != "not_compared":
        return why
    details = [row.get("detail") for row in doc.get("baseline") or [] if isinstance(row, dict)
               and row.get("status") == "not-compared" and row.get("detail")]
    return "not compared: %s" % details[0] if details else why


def run_one(sanitizer: str, tool: str, entry: dict, log: Path, deadline_s: float, run_folder: Path) -> dict:
    env = dict(os.environ)
    for item in entry["environment"]:
        key, _, value = item.partition("=")
        env[key] = value
    env["STREAMCHECK_SANITIZER"] = tool
    argv = [sanitizer] + tool_options(tool, entry["gtest"]) + entry["command"]
    start = time.monotonic()
    hung = False
    with open(log, "w") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        # A new session, so that a hang is ended with everything it started (the tool, the test, children).
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=entry["workdir"],
                                   start_new_session=True)
        try:
            rc = process.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(process.pid, 9)
            rc = process.wait()
    wall = time.monotonic() - start
    text = log.read_text(errors="replace")
    found = tool_findings(text)
    if rc == ERROR_EXITCODE and found["errors"] == 0 and found["statuses"] == 0:
        found["errors"] = 1  # the tool said so without a summary we could read
    outcome, why = ("hung", "no end within %.0f s" % deadline_s) if hung else test_outcome(text)
    group = skip_group(run_folder / "observations" / (entry["name"] + ".json"), why) if outcome == "skipped" else why
    return {"entry": entry["name"], "gtest": entry["gtest"], "rc": rc, "wall_s": wall, "outcome": outcome,
            "why": why, "group": group, "log": str(log), **found}


def ctest_listing(build: Path) -> dict:
    """ctest's entries in isolated mode: one process per test is what the job is."""
    env = dict(os.environ, STREAMCHECK_MODE="isolated")
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def fixture_command(listing: dict, name: str) -> Optional[List[str]]:
    for test in listing.get("tests", []):
        if test.get("name") == name:
            return test.get("command")
    return None


def summarize(tool: str, results: List[dict], wall: float, run_folder: str) -> Tuple[bool, List[str]]:
    count = {k: sum(1 for r in results if r["outcome"] == k) for k in ("passed", "skipped", "failed", "hung")}
    errors = sum(r["errors"] for r in results)
    lines = ["sanitizer %s: %d test(s) run: %d passed, %d skipped, %d failed, %d hung; %d error(s); %.0f s; "
             "results in %s" % (tool, len(results), count["passed"], count["skipped"], count["failed"],
                                count["hung"], errors, wall, run_folder)]
    expected = sorted({r["gtest"] for r in results if matches(EXPECTED_API_ERRORS, r["gtest"])})
    if expected:
        lines.append("  API errors expected, not reported (--report-api-errors no):")
        lines += ["    %s: %s" % (n, matches(EXPECTED_API_ERRORS, n)) for n in expected]
    for r in results:
        if r["errors"]:
            calls = ", ".join(sorted({"%s -> %s" % c for c in r["api_errors"]}))
            lines.append("  ERRORS %s: %d%s (%s)" % (r["entry"], r["errors"], "; API: " + calls if calls else "",
                                                     r["log"]))
    for r in results:
        if r["outcome"] == "hung":
            lines.append("  HUNG %s: %s (%s)" % (r["entry"], r["why"], r["log"]))
    for r in results:
        if r["outcome"] == "failed":
            lines.append("  FAILED %s: %s (%s)" % (r["entry"], r["why"] or "see the log", r["log"]))
    skips: Dict[str, List[str]] = {}
    for r in results:
        if r["outcome"] == "skipped":
            skips.setdefault(r.get("group") or r["why"], []).append(r["entry"])
    for why, names in sorted(skips.items(), key=lambda item: -len(item[1])):
        lines.append("  skipped (%d): %s [%s%s]" % (len(names), why or "no reason printed", ", ".join(names[:3]),
                                                    ", ..." if len(names) > 3 else ""))
    ok = errors == 0 and count["hung"] == 0 and count["failed"] == 0
    return ok, lines


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip() + "\n\nusage: ci/sanitizer.sh BUILD_DIR [tool...]")
        return 0
    if len(argv) < 2:
        print(__doc__.strip() + "\n\nusage: ci/sanitizer.sh BUILD_DIR [tool...]", file=sys.stderr)
        return 2
    build = Path(argv[1]).resolve()
    tools = tuple(argv[2:]) or DEFAULT_TOOLS
    for tool in tools:
        if tool not in TOOLS:
            print("sanitizer: unknown tool %r (known: %s)" % (tool, ", ".join(TOOLS)), file=sys.stderr)
            return 2
    if not (build / "CTestTestfile.cmake").exists():
        print("sanitizer: %s is not a configured build directory" % build, file=sys.stderr)
        return 2
    sanitizer = os.environ.get("COMPUTE_SANITIZER") or shutil.which("compute-sanitizer") or ""
    if not sanitizer:
        cuda = Path("/usr/local/cuda/bin/compute-sanitizer")
        sanitizer = str(cuda) if cuda.exists() else ""
    if not sanitizer:
        print("sanitizer: compute-sanitizer not found (PATH, /usr/local/cuda/bin, or COMPUTE_SANITIZER)", file=sys.stderr)
        return 2
    version = subprocess.run([sanitizer, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    print("sanitizer: %s (%s)" % (sanitizer, version[-1] if version else "version unknown"))
    labels_override = tuple(l for l in os.environ.get("SANITIZER_LABELS", "").replace(",", " ").split() if l)
    only = os.environ.get("SANITIZER_FILTER", "")
    deadline_floor = float(os.environ.get("SANITIZER_TEST_TIMEOUT", "120"))
    listing = ctest_listing(build)
    families = gpu_families(listing)
    begin = fixture_command(listing, "streamcheck.run.begin")
    finish = fixture_command(listing, "streamcheck.run.finish")
    all_ok = True
    report: List[str] = []
    for tool in tools:
        labels = labels_override or tuple(f for f in families if f not in LEFT_OUT.get(tool, ()))
        entries = [e for e in gpu_entries(listing, labels) if not only or fnmatch.fnmatchcase(e["name"], only)]
        if not entries:
            print("sanitizer %s: no GPU test selected (labels %s%s)" % (tool, " ".join(labels),
                                                                      ", filter " + only if only else ""))
            all_ok = False
            continue
        logs = build / "sanitizer" / tool
        logs.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, STREAMCHECK_SANITIZER=tool, STREAMCHECK_MODE="isolated")
        if begin:  # a results folder of its own, whose env.json records the tool
            subprocess.run(begin, env=env, cwd=build, stdout=subprocess.DEVNULL, check=False)
        # This script runs the run: its begin named the folder after this process (run_context.hpp).
        mine = sorted((build / "results" / "invocations").glob("%d-*" % os.getpid()))
        run_folder = str(mine[0].resolve()) if mine else "(no run folder: streamcheck.run.begin failed)"
        print("sanitizer %s: %d test(s) of %s" % (tool, len(entries), " ".join(labels)), flush=True)
        start = time.monotonic()
        results = []
        for i, entry in enumerate(entries, 1):
            deadline = max(entry["timeout"], deadline_floor)
            r = run_one(sanitizer, tool, entry, logs / (entry["name"] + ".log"), deadline, Path(run_folder))
            results.append(r)
            print("  [%3d/%d] %-7s %5.1f s  errors %d  %s" % (i, len(entries), r["outcome"], r["wall_s"], r["errors"],
                                                             entry["name"]), flush=True)
        if finish:
            subprocess.run(finish, env=env, cwd=build, stdout=subprocess.DEVNULL, check=False)
        (logs / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        ok, lines = summarize(tool, results, time.monotonic() - start, run_folder)
        all_ok = all_ok and ok
        report += lines
    print("\n".join(report))
    print("sanitizer: %s" % ("passed: no errors, no hangs, no failed tests" if all_ok else "FAILED (see above)"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
