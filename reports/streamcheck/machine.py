"""One page for a machine gated GPU by GPU (ci/run_suite.sh --every-gpu): what differs between its GPUs first
(environment, test statuses, observed values, baseline rows), then GPU x family, then the runs of the tests
that need two GPUs, each over a pair of the machine's GPUs. Runs are read with results.load_run(); a run whose
CUDA_VISIBLE_DEVICES lists two or more GPUs is a pair's. Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .common import COUNT_LABEL, GENERATOR, GENERATOR_VERSION, Markup, dig, fmt_value, plural
from .compare import ENV_FIELDS, env_value, first_line, mono, section, status_badge, table
from .model import same_value
from .page import embed_json
from .page_parts import environment_facts, environment_tables, facts_markup
from .results import count_outcomes, nothing_tested_on_gpu, outcome
from .templates import EMPTY, fill, fill_page, join, template_text

# Facts that differ between any two GPUs by nature, or that say nothing about the GPU.
NOT_COMPARED = ("GPU UUID", "host", "mode", "commit", "uncommitted changes")


def visible_devices(run: Dict[str, Any]) -> str:
    value = dig(run["env"], "environment", "CUDA_VISIBLE_DEVICES")
    return value if isinstance(value, str) else ""


def is_pair_run(run: Dict[str, Any]) -> bool:
    return "," in visible_devices(run)


def gpu_label(run: Dict[str, Any]) -> str:
    """"GPU 1 (NVIDIA H100 80GB HBM3, GPU-1a2b3c4d)": the index it was run as, its name, its UUID's start."""
    name = dig(run["env"], "gpu", "name") or "no GPU"
    uuid = dig(run["env"], "gpu", "uuid")
    return "GPU %s (%s%s)" % (visible_devices(run) or "?", name, ", " + str(uuid)[:12] if uuid else "")


def family_counts(run: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    families = sorted({t["family"] for t in run["tests"].values()})
    return {f: count_outcomes(t for t in run["tests"].values() if t["family"] == f) for f in families}


def differing(values: List[Any]) -> bool:
    return any(not same_value(values[0], v) for v in values[1:])


def machine_view(runs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """What the page shows, as data: the GPUs' runs and the pairs' runs, what differs between the GPUs, and
    GPU x family."""
    gpus = [r for r in runs if not is_pair_run(r)]
    pairs = [r for r in runs if is_pair_run(r)]
    environment = []
    for label, path in ENV_FIELDS:
        if label in NOT_COMPARED:
            continue
        values = [env_value(r["env"], path) for r in gpus]
        if differing([fmt_value(v) for v in values]):
            environment.append({"what": label, "values": values})
    status, values, baselines = [], [], []
    measured = 0  # differing values no baseline compares: timings and placements, which differ run to run
    names = sorted(set().union(*(set(r["tests"]) for r in gpus))) if gpus else []
    for name in names:
        tests = [r["tests"].get(name) for r in gpus]
        statuses = [outcome(t) if t else None for t in tests]
        if differing(statuses):
            why = next((first_line(t) for t in tests if t and t["status"] == "failed"), "") or \
                next((first_line(t) for t in tests if t and first_line(t)), "")
            status.append({"test": name, "statuses": statuses, "why": why})
        keys = sorted(set().union(*(set(t["observations"]) for t in tests if t)), key=str)
        compared = {str(r.get("key")) for t in tests if t for r in t["baseline"]}
        for key in keys:
            seen = [t["observations"].get(key) if t else None for t in tests]
            if differing(seen):
                if str(key) in compared:
                    values.append({"test": name, "key": key, "values": seen})
                else:
                    measured += 1
        rows = [{(str(r.get("id")), str(r.get("key"))): r for r in t["baseline"]} if t else {} for t in tests]
        for ident, key in sorted(set().union(*(set(r) for r in rows))):
            found = [r.get((ident, key), {}) for r in rows]
            if differing([f.get("status") for f in found]):
                baselines.append({"test": name, "id": ident, "key": key,
                                  "rows": [(f.get("status"), f.get("observed")) for f in found]})
    counts = [family_counts(r) for r in gpus]
    families = sorted(set().union(*(set(c) for c in counts))) if counts else []
    grid = [{"family": f, "cells": [c.get(f) for c in counts]} for f in families]
    problems = ["%s (%s)" % (p, r["id"]) for r in runs for p in r["problems"]]
    nothing = [(r, nothing_tested_on_gpu(r["env"], r["tests"])) for r in gpus]
    return {"gpus": gpus, "pairs": pairs, "environment": environment, "status": status, "values": values,
            "measured": measured,
            "baselines": baselines, "grid": grid, "problems": problems,
            "nothing_on_gpu": [(gpu_label(r), why) for r, why in nothing if why],
            "failed": sum(1 for r in runs for t in r["tests"].values() if t["status"] == "failed")}


def counts_text(counts: Optional[Dict[str, int]]) -> str:
    if not counts:
        return "\u2014"
    parts = ["%d passed" % counts["passed"]]
    parts += ["%d %s" % (counts[k], "FAILED" if k == "failed" else label) for k, label in COUNT_LABEL.items()
              if k != "passed" and counts.get(k)]
    return ", ".join(parts)


def report_link(run: Dict[str, Any], page: Path) -> Markup:
    report = Path(run["dir"]) / "report.html"
    if not report.is_file():
        return mono(run["id"])
    return fill("file_link", href=os.path.relpath(report.resolve(), page.resolve().parent), text=run["id"])


def machine_text(view: Dict[str, Any]) -> str:
    """The page's first part as lines for a log."""
    out = ["machine: %s, %s; differences between the GPUs: %s, %s, %s, %s" % (
        plural(len(view["gpus"]), "GPU"), plural(len(view["pairs"]), "two-GPU run"),
        plural(len(view["status"]), "test status", "test statuses"),
        plural(len(view["values"]), "observed value") + " a baseline compares",
        plural(len(view["baselines"]), "baseline row"), plural(len(view["environment"]), "environment fact"))]
    out.extend("machine: %s: %s" % (label, why) for label, why in view["nothing_on_gpu"])
    out.extend("machine: %s differs: %s" % (e["what"], " / ".join(fmt_value(v) for v in e["values"]))
               for e in view["environment"])
    out.extend("machine: %s: %s" % (c["test"], " / ".join(str(s) for s in c["statuses"])) for c in view["status"])
    return "\n".join(out) + "\n"


def render_machine(view: Dict[str, Any], source: Path, page: Path) -> str:
    gpus, pairs = view["gpus"], view["pairs"]
    head = [gpu_label(r) for r in gpus]
    banners = []
    if view["problems"]:
        banners.append(fill("problems", count=plural(len(view["problems"]), "file"),
                            items=join(fill("li", text=p) for p in view["problems"][:20])))
    for label, why in view["nothing_on_gpu"]:
        banners.append(fill("banner", kind="fail", text="%s: %s." % (label, why[0].upper() + why[1:])))
    if view["failed"]:
        banners.append(fill("banner", kind="fail", text="%s failed on this machine" % plural(view["failed"], "test")))
    differences = len(view["environment"]) + len(view["status"]) + len(view["values"]) + len(view["baselines"])
    banners.append(fill("banner", kind="warn" if differences else "ok", text=(
        "The GPUs differ in %s: see below." % plural(differences, "place") if differences else
        "\u2713 The GPUs agree: same statuses, observed values and baseline rows.")))
    sections = [
        section("differences", "What differs between the GPUs",
                table(["What"] + head, [[e["what"]] + [mono(fmt_value(v)) for v in e["values"]]
                                        for e in view["environment"]], "The GPUs' environments do not differ.") +
                fill("h3", text="Test statuses") +
                table(["Test"] + head + ["Why"], [[mono(c["test"])] + [status_badge(s) for s in c["statuses"]] +
                                                  [c["why"]] for c in view["status"]],
                      "Every test has the same status on every GPU.") +
                fill("h3", text="Baseline rows") +
                table(["Test", "ID/key"] + head, [[mono(c["test"]), mono("%s/%s" % (c["id"], c["key"]))] +
                                                  [join([s or "\u2014", mono(fmt_value(v))], " ") for s, v in c["rows"]]
                                                  for c in view["baselines"]],
                      "Every baseline row has the same status on every GPU.") +
                fill("h3", text="Observed values a baseline compares") +
                table(["Test", "Key"] + head, [[mono(c["test"]), mono(c["key"])] + [mono(fmt_value(v))
                                                                                   for v in c["values"]]
                                               for c in view["values"]],
                      "Every observed value a baseline compares is the same on every GPU.") +
                fill("muted_p", text="%s that no baseline compares (timings, SM placements) differ too, as they do "
                                     "from run to run; the GPUs' reports have them." % plural(view["measured"],
                                                                                              "other value"))),
        section("grid", "GPU \u00d7 family", table(
            ["Family"] + head, [[mono(row["family"])] + [counts_text(c) for c in row["cells"]] for row in view["grid"]],
            "No run of a single GPU.") +
            table(["Run"] + head, [["report"] + [report_link(r, page) for r in gpus]], "")),
        section("pairs", "Tests that need two GPUs", table(
            ["GPUs", "Run", "Result", "Failed"],
            [[mono(visible_devices(r)), report_link(r, page),
              counts_text(count_outcomes(r["tests"].values())),
              join([mono(n) for n, t in sorted(r["tests"].items()) if t["status"] == "failed"], ", ")]
             for r in pairs], "No run over a pair of GPUs (a machine of one GPU).")),
        section("environment", "Environments", fill("both_environments", tables=environment_tables(gpus))),
    ]
    facts = facts_markup([("GPUs", join([plural(len(gpus), "GPU"), " \u00b7 ", plural(len(pairs), "pair run")]))] +
                         environment_facts(gpus[0]["env"] if gpus else {})[1:3])
    data = {"generator": {"name": GENERATOR, "version": GENERATOR_VERSION},
            "gpus": [{"run": r["id"], "label": gpu_label(r)} for r in gpus],
            "pairs": [{"run": r["id"], "visible_devices": visible_devices(r)} for r in pairs],
            "environment": view["environment"], "status": view["status"], "values": view["values"],
            "baselines": view["baselines"], "problems": view["problems"]}
    nav = join(fill("nav_link", anchor=anchor, label=label) for anchor, label in (
        ("differences", "Differences"), ("grid", "GPU \u00d7 family"), ("pairs", "Two GPUs"),
        ("environment", "Environments")))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return fill_page("page.html", title="streamcheck machine \u2014 %s" % plural(len(gpus), "GPU"),
                     css=Markup(template_text("report.css")), heading="streamcheck machine", facts=facts,
                     banners=join(banners, "\n"), nav=nav, sections=join(sections, "\n"), script=EMPTY,
                     footer="Generated by %s %s at %s from %s (plans: %s)." % (
                         GENERATOR, GENERATOR_VERSION, now, ", ".join(r["dir"] for r in gpus + pairs),
                         source / "tests"),
                     data=Markup(embed_json(data)))
