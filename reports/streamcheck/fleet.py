"""The verdict of a fleet: the gate runs of many machines (ci/gate.sh on each, docs/fleet.md), judged host by
host with the one gate (gate.gate), grouped by GPU model, driver and toolkit, with each observed value's spread
within its group, the hosts that stand apart from their group, and what changed since a previous fleet run.

The layout read (what the CI artifacts, the Slurm script and the Kubernetes job write):

    FLEET_DIR/<host>/            one folder per machine, named after it
    FLEET_DIR/<host>/.../<run>/  the run folders of its gate (a folder with env.json, at most MAX_DEPTH below)
    FLEET_DIR/<host>/gate.exit   optional: ci/gate.sh's exit status as the host saw it (ci/fleet_node.sh)

A host's verdict is the worst of its runs' and of its gate.exit; the fleet's is the worst host's, with the
gate's meanings (0 as expected, 1 regressed, 2 not trustworthy). Results files only; Python 3.9+ standard
library only.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .common import InputError, cuda_version, dig, driver_text, fmt_value
from .compare import NOISE_RELATIVE
from .gate import PASS, UNTRUSTWORTHY, VERDICT, gate
from .results import SHARED_GPU, outcome

# How deep below a host's folder its run folders may be (an artifact may keep build/results/runs/<id>/).
MAX_DEPTH = 4
GATE_EXIT_FILE = "gate.exit"
# The outlier rule, "median ± 5 MAD, 5 % floor" (docs/fleet.md): a sample stands apart from its group when it is
# further from the group's median than K_MAD times the group's scaled MAD (MAD_SCALE makes it one standard
# deviation of normal data), and further than NOISE_RELATIVE of the median (compare.py: repeat runs of one GPU
# differ by up to 4 %). A group of fewer than MIN_SAMPLES samples names no one: two values cannot say which is off.
K_MAD = 5.0
MAD_SCALE = 1.4826
MIN_SAMPLES = 3
RULE = "median \u00b1 %g \u00d7 1.4826 MAD, at least %d %% of the median, groups of %d samples or more" % (
    K_MAD, round(100 * NOISE_RELATIVE), MIN_SAMPLES)
# Observed values in GoogleTest XML are text; this much of a text is read as a number.
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
# Fields of a test that the fleet never reads: dropped after judging, so that a hundred hosts fit in memory.
HEAVY_FIELDS = ("timeline", "block_chart", "setup_steps", "plan_rows", "baseline")

GroupKey = Tuple[str, str, str]


# ------------------------------------------------------------------------------------------------
# Reading the fleet
# ------------------------------------------------------------------------------------------------
def run_folders(host_dir: Path) -> List[Path]:
    """The run folders below a host's folder (not through links: build/results/latest is one)."""
    found: List[Path] = []
    for top, dirs, files in os.walk(host_dir):
        depth = len(Path(top).relative_to(host_dir).parts)
        if "env.json" in files and depth > 0:
            found.append(Path(top))
            dirs[:] = []
        elif depth >= MAX_DEPTH:
            dirs[:] = []
        dirs.sort()
    return found


def recorded_exit(host_dir: Path) -> Optional[int]:
    """The gate's exit status the host recorded (gate.exit), or None."""
    try:
        text = (host_dir / GATE_EXIT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else UNTRUSTWORTHY


def slim(run: Dict[str, Any]) -> None:
    for test in run["tests"].values():
        for field in HEAVY_FIELDS:
            test[field] = None


def run_label(judged: Dict[str, Any]) -> str:
    return judged["verdict"].get("label") or judged["verdict"]["run"]


def load_host(name: str, host_dir: Path) -> Dict[str, Any]:
    """A host: its judged runs (gate.gate each), its verdict, why, and its group."""
    runs = [gate(d) for d in run_folders(host_dir)]
    for judged in runs:
        slim(judged["run"])
    untrusted = ["%s: %s" % (run_label(j), r) for j in runs for r in j["verdict"]["untrustworthy"]]
    regressed = ["%s: %s" % (run_label(j), r) for j in runs for r in j["verdict"]["regressions"]]
    codes = [j["verdict"]["code"] for j in runs]
    if not runs:
        codes.append(UNTRUSTWORTHY)
        untrusted.append("no run folder under %s: the gate made none (a failed build?), or it was not collected"
                         % host_dir)
    recorded = recorded_exit(host_dir)
    if recorded is not None and recorded > max(codes):
        codes.append(min(recorded, UNTRUSTWORTHY))
        (untrusted if recorded >= UNTRUSTWORTHY else regressed).append(
            "the host's gate exited %d (%s), worse than its run folders show" % (recorded, GATE_EXIT_FILE))
    code = max(codes)
    return {"name": name, "dir": str(host_dir), "runs": runs, "code": code, "verdict": VERDICT[code],
            "untrustworthy": untrusted, "why": untrusted + regressed, "group": group_key(runs),
            "recorded_exit": recorded}


def group_key(runs: List[Dict[str, Any]]) -> GroupKey:
    """(GPU model, driver, toolkit) of a host's runs; several values joined with " + "."""
    envs = [j["run"]["env"] for j in runs]
    def joined(values: Iterable[Any]) -> str:
        return " + ".join(sorted({str(v) for v in values if v})) or "unknown"
    return (joined(dig(e, "gpu", "name") for e in envs),
            joined(driver_text(dig(e, "driver", "version"), dig(e, "cuda", "driver_version")) for e in envs),
            joined(toolkit(e) for e in envs))


def toolkit(env: Dict[str, Any]) -> Optional[str]:
    """The toolkit the suite was built with (build.cuda_toolkit_version), else its runtime's version."""
    built = dig(env, "build", "cuda_toolkit_version")
    runtime = dig(env, "cuda", "runtime_version")
    return str(built) if built else "runtime %s" % cuda_version(runtime) if runtime is not None else None


def group_label(key: GroupKey) -> str:
    return "%s \u00b7 driver %s \u00b7 toolkit %s" % key


def load_fleet(fleet_dir: Path, expected: Iterable[str] = ()) -> Dict[str, Any]:
    """Every host folder of FLEET_DIR judged, and each expected host without one (not trustworthy: it sent
    nothing); an InputError when there is no host at all."""
    fleet_dir = Path(fleet_dir)
    if not fleet_dir.is_dir():
        raise InputError("%s: not a folder" % fleet_dir)
    found = {p.name for p in fleet_dir.iterdir() if p.is_dir() and not p.name.startswith(".")}
    names = sorted(found | {n for n in expected if n})
    hosts = [load_host(n, fleet_dir / n) for n in names]
    if not hosts:
        raise InputError("%s: no host folder (expected FLEET_DIR/<host>/<run folders>)" % fleet_dir)
    groups: Dict[GroupKey, List[Dict[str, Any]]] = {}
    for host in hosts:
        groups.setdefault(host["group"], []).append(host)
    code = max(h["code"] for h in hosts)
    return {"dir": str(fleet_dir), "hosts": hosts, "groups": dict(sorted(groups.items())), "code": code,
            "verdict": VERDICT[code], "behind": [h["name"] for h in hosts if h["code"] == code and code != PASS]}


# ------------------------------------------------------------------------------------------------
# Tests, samples and spreads
# ------------------------------------------------------------------------------------------------
def samples_of(host: Dict[str, Any]) -> Iterable[Tuple[str, str, Dict[str, Any]]]:
    """(sample label, run label, test) of every test of a host: the label names the host, and its GPU where the
    host has several runs."""
    for judged in host["runs"]:
        label = host["name"] if len(host["runs"]) == 1 else "%s (%s)" % (host["name"], run_label(judged))
        for name, test in sorted(judged["run"]["tests"].items()):
            yield label, run_label(judged), test


def tests_not_passing(fleet: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per test, the samples where it failed and where it was not judged (shared GPU, not run); the most hosts
    first."""
    found: Dict[str, Dict[str, List[str]]] = {}
    for host in fleet["hosts"]:
        for label, _, test in samples_of(host):
            kind = outcome(test)
            if kind in ("failed", SHARED_GPU, "notrun"):
                entry = found.setdefault(test["ctest_name"], {"failed": [], "unjudged": []})
                entry["failed" if kind == "failed" else "unjudged"].append(label)
    rows = [dict(test=name, **entry) for name, entry in found.items()]
    return sorted(rows, key=lambda r: (-len(r["failed"]), -len(r["unjudged"]), r["test"]))


def as_number(value: Any) -> Optional[float]:
    """A finite number (GoogleTest XML's text of one too), else None; a boolean is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and NUMBER.match(value.strip()):
        return float(value)
    return None


def group_samples(hosts: List[Dict[str, Any]]) -> Dict[Tuple[str, str], List[Tuple[str, Any]]]:
    """(test, key) -> [(sample label, value)] over a group's hosts; tests not judged for a shared GPU left out."""
    found: Dict[Tuple[str, str], List[Tuple[str, Any]]] = {}
    for host in hosts:
        for label, _, test in samples_of(host):
            if outcome(test) == SHARED_GPU:
                continue
            for key, value in test["observations"].items():
                found.setdefault((test["ctest_name"], str(key)), []).append((label, value))
    return found


def noise_band(numbers: List[float]) -> Optional[float]:
    """How far a value may lie from its group's median and be noise (RULE); None below MIN_SAMPLES values."""
    if len(numbers) < MIN_SAMPLES:
        return None
    middle = statistics.median(numbers)
    mad = statistics.median(abs(x - middle) for x in numbers)
    return max(K_MAD * MAD_SCALE * mad, NOISE_RELATIVE * abs(middle))


def majority(values: List[str]) -> Optional[str]:
    """The value more than half of the samples have, or None."""
    counts: Dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1])
    return best[0] if best[1] * 2 > len(values) else None


def spread(test: str, key: str, found: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """One observed value over a group: numbers' median, MAD, range and the samples apart from the median by more
    than the noise band; anything else's distinct values and the samples apart from the majority's."""
    numbers = [as_number(v) for _, v in found]
    row: Dict[str, Any] = {"test": test, "key": key, "n": len(found)}
    if all(x is not None for x in numbers):
        middle = statistics.median(numbers)
        band = noise_band(numbers)
        row.update(kind="number", median=middle, mad=statistics.median(abs(x - middle) for x in numbers),
                   low=min(numbers), high=max(numbers), band=band, varies=min(numbers) != max(numbers))
        apart = [(label, x, abs(x - middle)) for (label, _), x in zip(found, numbers)
                 if band is not None and abs(x - middle) > band]
        row["apart"] = [(label, x) for label, x, _ in sorted(apart, key=lambda a: -a[2])]
        row["score"] = max((d / band if band else math.inf for _, _, d in apart), default=0.0)
        return row
    texts = [fmt_value(v) for _, v in found]
    common = majority(texts) if len(texts) >= MIN_SAMPLES else None
    row.update(kind="text", distinct=len(set(texts)), majority=common, varies=len(set(texts)) > 1,
               apart=[(label, t) for (label, _), t in zip(found, texts) if common is not None and t != common],
               score=0.0)
    return row


def value_spreads(hosts: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A group's observed values: those with samples apart (numbers first, the furthest first), those that vary
    within the rule, and how many are the same on every sample."""
    rows = [spread(test, key, found) for (test, key), found in sorted(group_samples(hosts).items())]
    apart = sorted((r for r in rows if r["apart"]), key=lambda r: (r["kind"] != "number", -r["score"],
                                                                  -len(r["apart"]), r["test"], r["key"]))
    varying = [r for r in rows if r["varies"] and not r["apart"]]
    return {"apart": apart, "varying": varying, "constant": sum(1 for r in rows if not r["varies"]),
            "samples": sum(len(h["runs"]) for h in hosts)}


# ------------------------------------------------------------------------------------------------
# What changed since a previous fleet run
# ------------------------------------------------------------------------------------------------
ENV_PARTS = ("GPU", "driver", "toolkit")


def environment_changes(old: Dict[str, Dict[str, Any]], new: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Driver, toolkit and GPU changes of the hosts in both fleets, each change with its hosts: driver first."""
    found: Dict[Tuple[str, str, str], List[str]] = {}
    for name in sorted(set(old) & set(new)):
        for part, a, b in zip(ENV_PARTS, old[name]["group"], new[name]["group"]):
            if a != b:
                found.setdefault((part, a, b), []).append(name)
    order = {"driver": 0, "toolkit": 1, "GPU": 2}
    return [{"what": what, "old": a, "new": b, "hosts": hosts}
            for (what, a, b), hosts in sorted(found.items(), key=lambda kv: (order[kv[0][0]], -len(kv[1]), kv[0]))]


def by_label(host: Dict[str, Any]) -> Dict[str, Dict[str, Tuple[str, Dict[str, Any]]]]:
    """run label -> ctest name -> (sample label, test), for matching a host's runs across fleet runs."""
    out: Dict[str, Dict[str, Tuple[str, Dict[str, Any]]]] = {}
    for sample, label, test in samples_of(host):
        out.setdefault(label, {})[test["ctest_name"]] = (sample, test)
    return out


def matched_tests(old: Dict[str, Any], new: Dict[str, Any]) -> Iterable[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    """(sample label, old test, new test) of the tests a host ran in both fleet runs, on the same GPU label."""
    before, after = by_label(old), by_label(new)
    for label in sorted(set(before) & set(after)):
        for name in sorted(set(before[label]) & set(after[label])):
            sample, test = after[label][name]
            yield sample, before[label][name][1], test


def verdict_changes(old: Dict[str, Dict[str, Any]], new: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Hosts whose verdict changed, and per test and change of outcome, the samples it changed on."""
    hosts = [{"host": n, "old": old[n]["code"], "new": new[n]["code"], "why": new[n]["why"][:1]}
             for n in sorted(set(old) & set(new)) if old[n]["code"] != new[n]["code"]]
    tests: Dict[Tuple[str, str, str], List[str]] = {}
    for name in sorted(set(old) & set(new)):
        for label, a, b in matched_tests(old[name], new[name]):
            if outcome(a) != outcome(b):
                tests.setdefault((b["ctest_name"], outcome(a), outcome(b)), []).append(label)
    rows = [{"test": t, "old": a, "new": b, "hosts": h} for (t, a, b), h in tests.items()]
    rows.sort(key=lambda r: (r["new"] != "failed", -len(r["hosts"]), r["test"]))
    return {"hosts": hosts, "tests": rows, "added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new))}


def value_change(old_value: Any, new_value: Any, before: List[Tuple[str, Any]]) -> Optional[Dict[str, Any]]:
    """A change of one value on one sample told from noise by the value's own spread in the previous fleet run's
    group (noise_band; with fewer samples, NOISE_RELATIVE of the old value, compare.py's rule): the change with
    its size in bands ("score"), real or not; None when the value did not change."""
    a, b = as_number(old_value), as_number(new_value)
    if a is not None and b is not None:
        if a == b:
            return None
        numbers = [x for x in (as_number(v) for _, v in before) if x is not None]
        band = noise_band(numbers) if len(numbers) == len(before) else None
        band = NOISE_RELATIVE * abs(a) if band is None else band
        score = abs(b - a) / band if band else math.inf
        return {"kind": "number", "old": a, "new": b, "score": score, "real": score > 1, "band": band}
    if fmt_value(old_value) == fmt_value(new_value):
        return None
    # A text value that varied within its group before is noise when it changes; one all samples agreed on is not.
    settled = len({fmt_value(v) for _, v in before}) == 1 or len(before) < MIN_SAMPLES
    return {"kind": "text", "old": fmt_value(old_value), "new": fmt_value(new_value), "score": 0.0, "real": settled,
            "band": None}


def value_changes(old_fleet: Dict[str, Any], old: Dict[str, Dict[str, Any]],
                  new: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Real value changes per (test, key), each with its samples; numbers first, the largest change first; and
    how many changes were within noise."""
    before = {key: group_samples(hosts) for key, hosts in old_fleet["groups"].items()}
    # A group of fewer than MIN_SAMPLES samples borrows the value's spread over the whole previous fleet: unlike
    # hosts' spread is wider than like hosts', never narrower than none.
    everywhere = group_samples([h for hosts in old_fleet["groups"].values() for h in hosts])
    found: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    noise = 0
    for name in sorted(set(old) & set(new)):
        group = before[old[name]["group"]]
        for label, a, b in matched_tests(old[name], new[name]):
            for key in sorted(set(a["observations"]) & set(b["observations"]), key=str):
                samples = group.get((a["ctest_name"], str(key)), [])
                if len(samples) < MIN_SAMPLES:
                    samples = everywhere.get((a["ctest_name"], str(key)), samples)
                change = value_change(a["observations"][key], b["observations"][key], samples)
                if change and change["real"]:
                    found.setdefault((b["ctest_name"], str(key)), []).append(dict(change, host=label))
                elif change:
                    noise += 1
    rows = [{"test": t, "key": k, "kind": c[0]["kind"], "changes": sorted(c, key=lambda x: -x["score"]),
             "score": max(x["score"] for x in c)} for (t, k), c in found.items()]
    rows.sort(key=lambda r: (r["kind"] != "number", -r["score"], -len(r["changes"]), r["test"], r["key"]))
    return {"values": rows, "noise": noise}


def fleet_changes(old_fleet: Dict[str, Any], new_fleet: Dict[str, Any]) -> Dict[str, Any]:
    """What changed: driver and toolkit first, then verdicts, then values."""
    old = {h["name"]: h for h in old_fleet["hosts"]}
    new = {h["name"]: h for h in new_fleet["hosts"]}
    return {"previous": old_fleet["dir"], "previous_code": old_fleet["code"],
            "environment": environment_changes(old, new), "verdicts": verdict_changes(old, new),
            **value_changes(old_fleet, old, new)}


def fleet_view(fleet: Dict[str, Any], previous: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Everything the page, the summary and the log show."""
    return {"fleet": fleet, "tests": tests_not_passing(fleet),
            "spreads": {key: value_spreads(hosts) for key, hosts in fleet["groups"].items()},
            "changes": fleet_changes(previous, fleet) if previous else None}
