#!/usr/bin/env python3
"""Where a run's serial time goes: runs a command (a ctest run of the suite) and samples, every half
millisecond, which process holds each GPU's lock (README, "Running tests in parallel"), then prints one line
per holder (when it took the lock, for how long, which test entry it was) and, per GPU, the lock's total held
time, the span from its first take to its last release, and the gaps in between when nobody held it.

    ci/lock_timeline.py [--lock-dir DIR] [--interval-ms MS] [--json FILE] -- COMMAND [ARG...]

e.g.  ci/lock_timeline.py -- ctest --test-dir build -L gpu -j 4

The lock folder is found as the test processes find it: --lock-dir, else STREAMCHECK_GPU_LOCK_DIR, else TMPDIR,
else /tmp; locks are the files streamcheck-gpu-<UUID>.lock there, also those created during the run. The
holders come from /proc/locks (Linux): a process that takes and lets go of a lock between two samples is not
seen, so a holder's time is exact to the interval; sampling takes about a quarter of a CPU core. Ctrl-C (or a
SIGTERM, which is passed on to the command) ends the command and prints what was seen, marked interrupted.
Exit status: the command's (128 + N for a command ended by signal N); 2 for a usage error, or when the command
could not be started.
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

LOCK_PATTERN = "streamcheck-gpu-*.lock"


def lock_dir(given: Optional[str]) -> str:
    """The folder gpu_lock.cpp uses: the option, else STREAMCHECK_GPU_LOCK_DIR, else TMPDIR, else /tmp."""
    if given:
        return given
    for name in ("STREAMCHECK_GPU_LOCK_DIR", "TMPDIR"):
        value = os.environ.get(name)
        if value:
            return value
    return "/tmp"


def lock_files(folder: str) -> Dict[Tuple[int, int], str]:
    """(device, inode) of each lock file in the folder -> the GPU's UUID (from the file name)."""
    found = {}
    for path in glob.glob(os.path.join(folder, LOCK_PATTERN)):
        try:
            st = os.stat(path)
        except OSError:
            continue
        uuid = os.path.basename(path)[len("streamcheck-gpu-"):-len(".lock")]
        found[(st.st_dev, st.st_ino)] = uuid
    return found


def parse_device(field: str) -> Optional[Tuple[int, int]]:
    """/proc/locks' "MAJ:MIN:INODE" (major and minor in hex) as (st_dev, inode), or None."""
    parts = field.split(":")
    if len(parts) != 3:
        return None
    try:
        return os.makedev(int(parts[0], 16), int(parts[1], 16)), int(parts[2])
    except ValueError:
        return None


def holds_file(pid: int, key: Tuple[int, int]) -> bool:
    """Whether one of the process's open files is the file (st_dev, st_ino) `key`, as this process sees it."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == key:
            return True
    return False


def holders(proc_locks: str, locks: Dict[Tuple[int, int], str],
            confirm: Callable[[int, Tuple[int, int]], bool] = holds_file) -> Dict[str, int]:
    """UUID -> pid holding that GPU's lock, from the text of /proc/locks (blocked waiters, "->", skipped).
    A lock is matched by device and inode. Where no line matches a lock that way (an overlay file system may
    report another device number in /proc/locks), a line with its inode alone counts when `confirm` finds
    the lock file among that process's open files: inode numbers repeat across file systems."""
    exact: Dict[str, int] = {}
    by_inode: Dict[int, List[int]] = {}
    for line in proc_locks.splitlines():
        fields = line.split()
        if len(fields) < 6 or "->" in fields or fields[1] != "FLOCK":
            continue
        key = parse_device(fields[5])
        try:
            pid = int(fields[4])
        except ValueError:
            continue
        if key is None:
            continue
        if key in locks:
            exact[locks[key]] = pid
        else:
            by_inode.setdefault(key[1], []).append(pid)
    held = dict(exact)
    for key, uuid in locks.items():
        if uuid in held:
            continue
        for pid in by_inode.get(key[1], []):
            if confirm(pid, key):
                held[uuid] = pid
                break
    return held


def describe(pid: int) -> str:
    """What a holder was: its program and, for a test process, its gtest filter (a fast entry) or test."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "(exited before it was described)"
    if not argv:
        return "?"
    what = os.path.basename(argv[0])
    for arg in argv[1:]:
        if arg.startswith("--streamcheck-prefix="):
            what += " " + arg.split("=", 1)[1]
        elif arg.startswith("--gtest_filter="):
            what += " " + arg.split("=", 1)[1]
    return what


def sample(command: List[str], folder: str, interval: float) -> Tuple[int, float, Dict[str, list], str]:
    """Runs the command, sampling; returns its exit status, its wall time, per GPU UUID the holds as
    [pid, what, start, end] (seconds from the command's start), and a note ("" or why the figures are partial)."""
    start = time.monotonic()
    child = subprocess.Popen(command)
    interrupted = []

    def forward(signum, _frame):
        interrupted.append(signum)
        try:
            child.send_signal(signum)
        except OSError:
            pass

    previous = signal.signal(signal.SIGTERM, forward)
    locks: Dict[Tuple[int, int], str] = {}
    last_scan = -1.0
    current: Dict[str, list] = {}
    holds: Dict[str, list] = {}
    readable = True
    try:
        while True:
            try:
                now = time.monotonic() - start
                # Lock files appear when the first process of a GPU tries to lock it: looked for every 5 ms
                # until one exists, then every 50 ms (a second GPU's first hold may be seen up to 50 ms late).
                if now - last_scan > (0.005 if not locks else 0.05):
                    locks = lock_files(folder)
                    last_scan = now
                held = {}
                if locks and readable:
                    try:
                        with open("/proc/locks") as f:
                            held = holders(f.read(), locks)
                    except OSError:
                        readable = False
                for uuid in set(current) | set(held):
                    pid = held.get(uuid)
                    hold = current.get(uuid)
                    if hold is not None and hold[0] != pid:
                        hold[3] = now
                        del current[uuid]
                    if pid is not None and uuid not in current:
                        current[uuid] = [pid, describe(pid), now, None]
                        holds.setdefault(uuid, []).append(current[uuid])
                if child.poll() is not None:
                    break
                time.sleep(interval)
            except KeyboardInterrupt:  # Ctrl-C reached the command too (same process group): wait for it
                interrupted.append(signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)
    wall = time.monotonic() - start
    for hold in current.values():
        hold[3] = wall
    notes = []
    if not readable:
        notes.append("/proc/locks could not be read: holders after that are missing")
    if interrupted:
        notes.append("interrupted by %s: the command was ended early" % signal.Signals(interrupted[0]).name)
    return child.returncode, wall, holds, "; ".join(notes)


def report(wall: float, holds: Dict[str, list], note: str = "") -> dict:
    """The printed figures, also written with --json."""
    gpus = {}
    for uuid, items in sorted(holds.items()):
        items = sorted(items, key=lambda h: h[2])
        gaps = [(b[2] - a[3], a[3]) for a, b in zip(items, items[1:]) if b[2] > a[3]]
        gpus[uuid] = {
            "holds": [{"pid": h[0], "what": h[1], "start_s": round(h[2], 4), "held_s": round(h[3] - h[2], 4)}
                      for h in items],
            "processes": len({h[0] for h in items}),
            "held_s": round(sum(h[3] - h[2] for h in items), 4),
            "first_take_s": round(items[0][2], 4),
            "last_release_s": round(items[-1][3], 4),
            "idle_s": round(sum(g for g, _ in gaps), 4),
            "idle_gaps": [{"at_s": round(at, 4), "length_s": round(g, 4)} for g, at in gaps],
        }
    return {"wall_s": round(wall, 4), "gpus": gpus, "note": note}


def print_report(figures: dict) -> None:
    print("lock_timeline: the command took %.3f s" % figures["wall_s"])
    if figures.get("note"):
        print("lock_timeline: partial figures: %s" % figures["note"])
    if not figures["gpus"]:
        print("lock_timeline: no process of the suite held a GPU lock (no GPU test ran, or the lock folder "
              "differs: --lock-dir)")
    for uuid, gpu in figures["gpus"].items():
        print("GPU %s:" % uuid)
        print("  %8s %8s %8s  %s" % ("pid", "taken s", "held s", "what"))
        for h in gpu["holds"]:
            print("  %8d %8.3f %8.3f  %s" % (h["pid"], h["start_s"], h["held_s"], h["what"][:110]))
        span = gpu["last_release_s"] - gpu["first_take_s"]
        print("  held %.3f s in %d hold(s) by %d process(es), from %.3f s to %.3f s (span %.3f s); free in between "
              "%.3f s%s"
              % (gpu["held_s"], len(gpu["holds"]), gpu["processes"], gpu["first_take_s"], gpu["last_release_s"], span,
                 gpu["idle_s"], "" if not gpu["idle_gaps"] else " (longest %.3f s at %.3f s)" % max(
                     (g["length_s"], g["at_s"]) for g in gpu["idle_gaps"])))
        print("  before the first take %.3f s, after the last release %.3f s"
              % (gpu["first_take_s"], figures["wall_s"] - gpu["last_release_s"]))


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print("usage: ci/lock_timeline.py [--lock-dir DIR] [--interval-ms MS] [--json FILE] -- COMMAND [ARG...]",
              file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lock-dir")
    parser.add_argument("--interval-ms", type=float, default=0.5)
    parser.add_argument("--json")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command or not args.interval_ms > 0:
        print("lock_timeline: give a command after '--' and a positive --interval-ms", file=sys.stderr)
        return 2
    try:
        status, wall, holds, note = sample(command, lock_dir(args.lock_dir), args.interval_ms / 1000.0)
    except OSError as e:
        print("lock_timeline: cannot run %s: %s" % (command[0], e), file=sys.stderr)
        return 2
    figures = report(wall, holds, note)
    print_report(figures)
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=2)
                f.write("\n")
        except OSError as e:
            print("lock_timeline: cannot write %s: %s (the command's status follows)" % (args.json, e),
                  file=sys.stderr)
    return status if status >= 0 else 128 - status  # a command ended by a signal: as a shell reports it


if __name__ == "__main__":
    sys.exit(main())
