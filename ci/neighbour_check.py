#!/usr/bin/env python3
"""The gate's own check on a GPU: does it see a neighbour? Runs ci/gate.sh on one GPU (CUDA_VISIBLE_DEVICES,
default 0) alone and beside each neighbour, a second process (sc_probe busy) with a context on that GPU:

    alone    no neighbour: the gate must exit 0 and no test may say it shared the GPU
    short    200 us kernels of one block, one after another, for the whole run
    full     2 ms kernels filling every SM, for the whole run
    window   2 ms kernels filling every SM, started after the run began and ended before it finished
    blip     the same for 0.3 s only: a neighbour that can come and go within one test

Beside a neighbour the gate must exit 2, and every GPU test that held the GPU while the neighbour's kernels ran
(from its "ready" to its "stopped"; the test's time from the observation's started_unix_ms, its set-up steps up
to the GPU lock, and duration_ms) must end "not judged" (skip kind shared_gpu), never passed or failed. Tests
that held the GPU only while the neighbour destroyed its context (from "stopped" to "done") are counted apart:
the neighbour ran nothing then, and NVML may no longer list it. It prints a line per case, with the widest stop of the tests' own kernels (the evidence of
sharing.hpp's bound), and exits 0 when every case held.

    ci/neighbour_check.py BUILD_DIR [CASE ...]
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent
SAID_WITHIN_S = 120  # reason: a context is made or destroyed in well under a second; a neighbour silent longer hangs
CASES = {  # sc_probe busy arguments, and (start after, life) in seconds for a neighbour of a window
    "alone": None,
    "short": (["--spin-us", "200", "--blocks", "1"], None),
    "full": (["--spin-us", "2000"], None),
    "window": (["--spin-us", "2000"], (4.0, 4.0)),
    "blip": (["--spin-us", "2000"], (5.0, 0.3)),
}


def start_neighbour(build, device, args, life_s=None):
    """sc_probe busy on `device`; returns the process and its lines (a queue) once it said ready, and when."""
    command = [str(Path(build) / "fixtures" / "sc_probe"), "busy", "--device", device] + args
    if life_s is not None:
        command += ["--ms", str(int(life_s * 1000))]
    probe = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, CUDA_VISIBLE_DEVICES=device))
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in probe.stdout], daemon=True).start()
    next_line(probe, lines, "ready")
    return (probe, lines), time.time()


def next_line(probe, lines, expected):
    """The neighbour's next line, which must start with `expected`; a neighbour silent for SAID_WITHIN_S is
    stopped and the check fails with that, rather than hang."""
    try:
        line = lines.get(timeout=SAID_WITHIN_S)
    except queue.Empty:
        probe.kill()
        raise RuntimeError("the neighbour did not say %r within %d s" % (expected, SAID_WITHIN_S))
    if not line.startswith(expected):
        probe.kill()
        raise RuntimeError("the neighbour said %r where %r was due" % (line.strip(), expected))
    return line


def stop_neighbour(neighbour, ends_by_itself=False):
    """Ends the neighbour (closes its input, unless it ends by itself); returns when its last kernel ended (it
    says "stopped") and when its context did (it says "done" once cudaDeviceReset returned)."""
    probe, lines = neighbour
    if not ends_by_itself and probe.poll() is None:
        probe.stdin.close()
    next_line(probe, lines, "stopped")
    stopped = time.time()
    next_line(probe, lines, "done")
    ended = time.time()
    probe.wait(timeout=120)
    return stopped, ended


def tests_of(run):
    """(name, start, end, outcome, skip kind, evidence) of each GPU test of a run folder, from its observations."""
    found = []
    for path in sorted((Path(run) / "observations").rglob("*.json")):
        doc = json.loads(path.read_text())
        start = doc.get("started_unix_ms")
        if not isinstance(start, int) or "gpu_sharing" not in doc:
            continue  # skipped before it had a GPU
        end = start + int(doc.get("duration_ms") or 0)
        # The test has the GPU once its lock is taken: before that it waited for another test of the run.
        steps = doc.get("setup_steps_ms") or []
        names = [step[0] for step in steps]
        if "gpu_lock" in names:
            start += int(sum(step[1] for step in steps[:names.index("gpu_lock") + 1]))
        found.append((doc.get("ctest_name"), start / 1000.0, end / 1000.0, doc.get("outcome"),
                      doc.get("skip_kind"), doc["gpu_sharing"]))
    return found


def run_gate(build, device, case):
    """Runs the gate beside the case's neighbour; returns (exit status, run folder, neighbour's life, log)."""
    spec = CASES[case]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=device)
    log = Path(build, "neighbour-%s.log" % case)
    probe = None
    if spec is not None and spec[1] is None:
        probe, born = start_neighbour(build, device, spec[0])
    with log.open("w") as out:
        gate = subprocess.Popen(["bash", str(SRC / "ci" / "gate.sh"), str(build)], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        life = None
        if spec is not None and spec[1] is not None:
            time.sleep(spec[1][0])  # a neighbour that comes while the run goes on (no ordering rests on it)
            probe, born = start_neighbour(build, device, spec[0], spec[1][1])
            life = (born,) + stop_neighbour(probe, ends_by_itself=True)  # before the run ends
            if gate.poll() is not None:
                print("neighbour_check: %s: the run ended before its neighbour did (lengthen the run or shorten "
                      "the window)" % case)
                life = (born, float("inf"), float("inf"))  # not the case it should be: it does not hold
        gate.wait(timeout=900)
    if probe is not None and life is None:
        life = (born,) + stop_neighbour(probe)
    said = log.read_text()
    runs = re.findall(r"^gate: results in (\S+)", said, re.M)
    return gate.returncode, (runs[0] if runs else None), life


def judge(case, rc, run, life):
    """The case's line and whether it held."""
    tests = tests_of(run) if run else []
    gaps = [(t[5].get("widest_gap_ns") or 0, t[0], t[5].get("gap_where")) for t in tests]
    widest = max(gaps) if gaps else (0, None, None)
    shared = [t for t in tests if t[4] == "shared_gpu"]
    sources = sorted({t[5].get("process_source", "?").split(":")[0] for t in tests})
    if life is None:
        ok = rc == 0 and not shared and bool(tests)
        what = "gate exit %d, %d GPU tests, %d not judged (shared)" % (rc, len(tests), len(shared))
    else:
        # Beside it: held the GPU while its kernels ran. A test that held it only while the neighbour's context
        # was being destroyed (no work of the neighbour left) is counted apart, and may be judged.
        beside = [t for t in tests if t[1] < life[1] and t[2] > life[0]]
        teardown = [t for t in tests if t[1] < life[2] and t[2] > life[1] and t not in beside]
        judged = [t for t in beside if t[3] in ("passed", "failed")]
        ok = rc == 2 and bool(beside) and not judged and life[1] != float("inf")
        told = {}  # how the tests beside it saw it: listed at their start, while they ran, at their end
        for t in beside:
            for when in {p.get("seen") for p in t[5].get("other_processes") or []} or {"by no listing"}:
                told[when] = told.get(when, 0) + 1
        what = ("gate exit %d, %d GPU tests, %d beside the neighbour's kernels, %d of them not judged (seen: %s), "
                "%d judged; %d beside its context's teardown only (%.1f ms), %d of them judged%s") % (
            rc, len(tests), len(beside), sum(1 for t in beside if t[4] == "shared_gpu"),
            ", ".join("%s %d" % kv for kv in sorted(told.items())), len(judged), len(teardown),
            (life[2] - life[1]) * 1e3, sum(1 for t in teardown if t[3] in ("passed", "failed")),
            "".join("\n    judged beside it: %s (%s; held the GPU from %+.1f ms to %+.1f ms of the neighbour's "
                    "%.1f ms of kernels; widest stop of its kernels %s)"
                    % (t[0], t[3], (t[1] - life[0]) * 1e3, (t[2] - life[0]) * 1e3, (life[1] - life[0]) * 1e3,
                       "none recorded" if t[5].get("widest_gap_ns") is None
                       else "%.3f ms" % (t[5]["widest_gap_ns"] / 1e6)) for t in judged[:40]))
    print("neighbour_check: %-6s %s: %s; widest stop of a test's own kernel %.3f ms (%s, %s); process source %s"
          % (case, "held" if ok else "FAILED", what, widest[0] / 1e6, widest[1], widest[2], ",".join(sources)))
    return ok


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    build = Path(argv[1]).resolve()
    cases = argv[2:] or list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print("neighbour_check: unknown case(s) %s; cases: %s" % (", ".join(unknown), ", ".join(CASES)),
              file=sys.stderr)
        return 2
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    held = True
    for case in cases:
        rc, run, life = run_gate(build, device, case)
        held = judge(case, rc, run, life) and held
    print("neighbour_check: %s" % ("every case held" if held else "a case did not hold (see above)"))
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
