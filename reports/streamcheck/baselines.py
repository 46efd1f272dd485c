"""Baselines for more GPUs: a baseline file (schema streamcheck.baseline 1.2) written from a run's observed values,
with its provenance (GPU, driver, runtime, commit, date) inside, and its differences from an existing file.

Each entry of the new file comes from the baseline rows the run's tests wrote (every matches_baseline call
writes one, with the observed value, also when there was no baseline to compare with). An entry that the
existing file (--against) has keeps that file's policy (gating, gating_reason, driver_may_flip, finding) and
takes the run's value; an entry it lacks is written not gating, for review. A key observed with different
values in one run (e.g. in two build variants) is left out and listed. Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .common import InputError, cuda_version, dig, driver_text, fmt_value
from .model import same_value
from .results import BASELINE_SCHEMA, check_member, check_schema, read_json

SCHEMA_VERSION = "1.2.0"
NEW_ENTRY_REASON = ("new entry written from a run by the baseline writer: recorded, not gating until someone has "
                    "reviewed the value and decided whether a difference must fail")


def run_arch(env: Dict[str, Any]) -> Optional[str]:
    arch = dig(env, "gpu", "arch")
    if isinstance(arch, str) and arch.startswith("sm_"):
        return arch
    cc = dig(env, "gpu", "compute_capability")
    return "sm_" + cc.replace(".", "") if isinstance(cc, str) and cc else None


def observed_values(run: Dict[str, Any]) -> Tuple[Dict[Tuple[str, str], Dict[str, Any]], List[str]]:
    """(id, key) -> {value, tests} of the run's baseline rows, and the keys seen with more than one value."""
    found: Dict[Tuple[str, str], Dict[str, Any]] = {}
    conflicts = []
    for name, test in sorted(run["tests"].items()):
        for row in test["baseline"]:
            if "observed" not in row or row.get("id") in (None, "") or row.get("key") in (None, ""):
                continue
            where = (str(row["id"]), str(row["key"]))
            seen = found.setdefault(where, {"value": row["observed"], "tests": []})
            if not same_value(seen["value"], row["observed"]):
                seen["conflict"] = True
                conflicts.append("%s/%s: %s in %s, %s in %s" % (where[0], where[1], fmt_value(seen["value"]),
                                                                 seen["tests"][0], fmt_value(row["observed"]), name))
            seen["tests"].append(name)
    return {k: v for k, v in found.items() if not v.get("conflict")}, conflicts


def load_baseline_file(path: Path) -> Dict[str, Any]:
    doc = read_json(path, "baseline file")
    check_schema(doc, path, BASELINE_SCHEMA, "baseline file")
    check_member(doc, "entries", dict, path, "the baseline file")
    return doc


def provenance(run: Dict[str, Any]) -> Dict[str, Any]:
    env = run["env"]
    return {
        "gpu": dig(env, "gpu", "name"),
        "gpu_uuid": dig(env, "gpu", "uuid"),
        "compute_capability": dig(env, "gpu", "compute_capability"),
        "driver_release": dig(env, "driver", "version"),
        "driver_version": dig(env, "cuda", "driver_version"),
        "runtime_version": dig(env, "cuda", "runtime_version"),
        "commit": dig(env, "streamcheck", "commit"),
        "dirty": dig(env, "streamcheck", "dirty"),
        "run_id": run["id"],
        "date": dig(env, "run", "started_utc"),
        "written_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "written_by": "reports/streamcheck_baseline.py",
    }


def write_baseline(run: Dict[str, Any], arch: str, against: Optional[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[str]]:
    """The new baseline document, and the conflicts left out."""
    values, conflicts = observed_values(run)
    prov = provenance(run)
    where = "%s, driver %s, runtime %s, run %s (%s), commit %s" % (
        prov["gpu"], driver_text(prov["driver_release"], prov["driver_version"]), cuda_version(prov["runtime_version"]),
        prov["run_id"],
        prov["date"], str(prov["commit"] or "unknown")[:12])
    old_entries = (against or {}).get("entries") or {}
    entries: Dict[str, Dict[str, Any]] = {}
    for (ident, key), seen in sorted(values.items()):
        old = dig(old_entries, ident, key)
        old = old if isinstance(old, dict) else {}
        entry: Dict[str, Any] = {"expected": seen["value"]}
        if old:
            entry["gating"] = old.get("gating") is True
            entry["why"] = "observed on %s (%s); policy from the %s entry" % (
                where, ", ".join(seen["tests"][:3]), against.get("arch") if against else "existing")
            entry["driver_may_flip"] = old.get("driver_may_flip") is not False
            entry["gating_reason"] = old.get("gating_reason") or NEW_ENTRY_REASON
            if old.get("finding"):
                entry["finding"] = old["finding"]
        else:
            entry.update(gating=False, why="observed on %s (%s)" % (where, ", ".join(seen["tests"][:3])),
                         driver_may_flip=True, gating_reason=NEW_ENTRY_REASON)
        entries.setdefault(ident, {})[key] = entry
    doc = {"schema": BASELINE_SCHEMA, "schema_version": SCHEMA_VERSION, "arch": arch,
           "devices": [prov["gpu"]] if prov["gpu"] else [], "first_seen": where, "provenance": prov,
           "entries": entries}
    return doc, conflicts


def baseline_diff(new: Dict[str, Any], old: Optional[Dict[str, Any]]) -> List[str]:
    """Lines: entries whose expected value or gating differs, entries only in one of the files."""
    if old is None:
        return ["no existing file to compare with: every entry is new"]
    a, b = old.get("entries") or {}, new.get("entries") or {}
    keys = sorted({(i, k) for i, rows in a.items() if isinstance(rows, dict) for k in rows} |
                  {(i, k) for i, rows in b.items() for k in rows})
    out = []
    same = 0
    for ident, key in keys:
        ea, eb = dig(a, ident, key), dig(b, ident, key)
        if not isinstance(ea, dict):
            out.append("+ %s/%s = %s (new entry, not gating)" % (ident, key, fmt_value(eb["expected"])))
        elif not isinstance(eb, dict):
            out.append("- %s/%s (expected %s; not observed in this run)" % (ident, key, fmt_value(ea.get("expected"))))
        elif not same_value(ea.get("expected"), eb.get("expected")):
            out.append("~ %s/%s: %s -> %s%s" % (ident, key, fmt_value(ea.get("expected")), fmt_value(eb["expected"]),
                                                " (gating)" if eb.get("gating") else ""))
        else:
            same += 1
    out.append("%d entr%s the same" % (same, "y" if same == 1 else "ies"))
    return out


def to_json(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def check_arch(arch: str) -> str:
    if not arch.startswith("sm_") or not arch[3:].isalnum():
        raise InputError("%s: an architecture is written sm_<cc>, e.g. sm_100" % arch)
    return arch
