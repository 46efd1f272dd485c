"""Comparison of two runs ("what changed between last night and today?"): environment differences (GPU,
driver, runtime, commit, variables), tests whose status changed, observed values and baseline statuses that
changed, tests added or removed. As data (compare_runs), as text (diff_text) and as a page (render_diff).
Both runs are read with results.load_run(). Python 3.9+ standard library only.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .common import (GENERATOR, GENERATOR_VERSION, TEST_LABEL, Markup, cuda_version, dig, flatten, fmt_shown,
                     fmt_value, plural)
from .model import same_value
from .page import embed_json
from .page_parts import environment_facts, environment_tables, facts_markup, run_fact
from .results import outcome
from .templates import EMPTY, fill, fill_page, join, template_text

# The environment facts compared first, as (label, path in env.json); then every environment variable.
# The driver comes first: a driver upgrade is the main reason to compare two runs of one runner.
ENV_FIELDS = (
    ("driver release", ("driver", "version")), ("kernel module", ("driver", "kernel_module", "version")),
    ("kernel module flavor", ("driver", "kernel_module", "flavor")),
    ("CUDA version of the driver", ("cuda", "driver_version")),
    ("GPU", ("gpu", "name")), ("GPU UUID", ("gpu", "uuid")), ("architecture", ("gpu", "arch")),
    ("SM count", ("gpu", "sm_count")),
    ("runtime", ("cuda", "runtime_version")), ("commit", ("streamcheck", "commit")),
    ("uncommitted changes", ("streamcheck", "dirty")), ("CUDA architectures built", ("build", "cuda_architectures")),
    ("tracing", ("tracing", "enabled")), ("timer tick (ns)", ("gpu", "timer_tick_ns")),
    ("priority least", ("gpu", "priority_range", "least")), ("priority greatest", ("gpu", "priority_range", "greatest")),
    ("host", ("host", "hostname")), ("mode", ("run", "mode")),
)


# How far an observed number may move between two runs before the comparison lists it: a relative change below
# this is folded away as noise (counted, and listed under a fold). Reason: repeat whole runs on one H100 differ by
# a few percent in durations and rates (copy rates about 1 %, dispatch delays and time slices about 2 %, pageable
# copies up to 4 %); a change of a behavior moves a value further, or changes a status or a baseline row, which
# are never folded.
NOISE_RELATIVE = 0.05


def relative_change(old: Any, new: Any) -> Optional[float]:
    """(new - old) / |old| for two numbers (not booleans); None for anything else. From 0, any move is whole."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (old, new)):
        return None
    if old == 0:
        return 0.0 if new == 0 else float("inf") if new > 0 else float("-inf")
    return (new - old) / abs(old)


def fmt_change(c: Dict[str, Any]) -> str:
    r = c.get("relative")
    if r is None:
        return ""
    if r in (float("inf"), float("-inf")):
        return "from 0"
    return "%+.1f %%" % (100 * r)


def env_value(env: Dict[str, Any], path: Tuple[str, ...]) -> Any:
    value = dig(env, *path)
    if path in (("cuda", "driver_version"), ("cuda", "runtime_version")) and isinstance(value, int):
        return "%s (%d)" % (cuda_version(value), value)
    return value


def first_line(test: Dict[str, Any]) -> str:
    """Why a test has its status, in one line: its first failure line, its skip reason, or a note."""
    if test["status"] == "failed" and test["failures"]:
        lines = [line for line in test["failures"][0].strip().splitlines() if line.strip()]
        return " ".join(lines[1:2] or lines[:1])[:200]
    if test["status"] == "skipped":  # a test not judged for a shared GPU too: its reason says so
        return (test["skip_reason"] or "(no reason given)")[:200]
    return test["notes"][0][:200] if test["notes"] else ""


def compare_runs(old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """What changed from the old run to the new one."""
    environment = []
    for label, path in ENV_FIELDS:
        a, b = env_value(old["env"], path), env_value(new["env"], path)
        if fmt_value(a) != fmt_value(b):
            environment.append({"what": label, "old": a, "new": b})
    old_vars = dict(flatten(old["env"].get("environment") if isinstance(old["env"].get("environment"), dict) else {}))
    new_vars = dict(flatten(new["env"].get("environment") if isinstance(new["env"].get("environment"), dict) else {}))
    for name in sorted(set(old_vars) | set(new_vars)):
        a, b = old_vars.get(name), new_vars.get(name)
        if fmt_value(a) != fmt_value(b):
            environment.append({"what": "$" + name, "old": a, "new": b})

    status, values, baselines = [], [], []
    for name in sorted(set(old["tests"]) & set(new["tests"])):
        a, b = old["tests"][name], new["tests"][name]
        if outcome(a) != outcome(b):
            status.append({"test": name, "old": outcome(a), "new": outcome(b), "why": first_line(b)})
        for key in sorted(set(a["observations"]) | set(b["observations"]), key=str):
            va, vb = a["observations"].get(key), b["observations"].get(key)
            if not same_value(va, vb):
                values.append({"test": name, "key": key, "old": va, "new": vb, "relative": relative_change(va, vb)})
        rows_a = {(str(r.get("id")), str(r.get("key"))): r for r in a["baseline"]}
        rows_b = {(str(r.get("id")), str(r.get("key"))): r for r in b["baseline"]}
        for ident, key in sorted(set(rows_a) | set(rows_b)):
            ra, rb = rows_a.get((ident, key), {}), rows_b.get((ident, key), {})
            if ra.get("status") != rb.get("status") or not same_value(ra.get("observed"), rb.get("observed")):
                baselines.append({"test": name, "id": ident, "key": key, "old_status": ra.get("status"),
                                  "new_status": rb.get("status"), "old": ra.get("observed"), "new": rb.get("observed"),
                                  "expected": rb.get("expected", ra.get("expected")), "gating": rb.get("gating")})
    # Values that moved beyond the noise first, the largest move first (a value that is not a number, or that
    # appeared or went, always counts as moved); the rest folded.
    moved = [c for c in values if c["relative"] is None or abs(c["relative"]) >= NOISE_RELATIVE]
    jitter = [c for c in values if c["relative"] is not None and abs(c["relative"]) < NOISE_RELATIVE]
    moved.sort(key=lambda c: (c["relative"] is not None, -abs(c["relative"] or 0)))
    added = [{"test": n, "status": outcome(new["tests"][n])} for n in sorted(set(new["tests"]) - set(old["tests"]))]
    removed = [{"test": n, "status": outcome(old["tests"][n])} for n in sorted(set(old["tests"]) - set(new["tests"]))]
    problems = ["%s (old run)" % p for p in old["problems"]] + ["%s (new run)" % p for p in new["problems"]]
    return {"old": old, "new": new, "environment": environment, "status": status, "values": moved, "jitter": jitter,
            "baselines": baselines, "added": added, "removed": removed, "problems": problems,
            "same_gpu": dig(old["env"], "gpu", "uuid") == dig(new["env"], "gpu", "uuid")}


def diff_text(diff: Dict[str, Any]) -> str:
    """The comparison as plain text, environment first."""
    old, new = diff["old"], diff["new"]
    out = ["streamcheck comparison: %s -> %s" % (old["id"], new["id"])]
    if diff["problems"]:
        out.append("files that could not be read (%d):" % len(diff["problems"]))
        out.extend("  " + p for p in diff["problems"])
    out.append("environment: %s" % ("the same" if not diff["environment"] else plural(len(diff["environment"]),
                                                                                    "difference")))
    out.extend("  %s: %s -> %s" % (e["what"], fmt_value(e["old"]), fmt_value(e["new"])) for e in diff["environment"])
    out.append("status changes: %d" % len(diff["status"]))
    out.extend("  %s: %s -> %s%s" % (c["test"], TEST_LABEL.get(c["old"], c["old"]), TEST_LABEL.get(c["new"], c["new"]),
                                     " (%s)" % c["why"] if c["why"] else "") for c in diff["status"])
    out.append("baseline rows changed: %d" % len(diff["baselines"]))
    out.extend("  %s %s/%s: %s %s -> %s %s" % (c["test"], c["id"], c["key"], fmt_value(c["old_status"]),
                                               fmt_value(c["old"]), fmt_value(c["new_status"]), fmt_value(c["new"]))
               for c in diff["baselines"])
    out.append("observed values changed beyond noise (%d %%): %d" % (round(100 * NOISE_RELATIVE), len(diff["values"])))
    out.extend("  %s %s: %s -> %s%s" % (c["test"], c["key"], fmt_shown(c["old"]), fmt_shown(c["new"]),
                                        " (%s)" % fmt_change(c) if fmt_change(c) else "") for c in diff["values"])
    out.append("observed values within noise, folded: %d" % len(diff["jitter"]))
    out.append("tests added: %d" % len(diff["added"]))
    out.extend("  + %s (%s)" % (c["test"], TEST_LABEL.get(c["status"], c["status"])) for c in diff["added"])
    out.append("tests removed: %d" % len(diff["removed"]))
    out.extend("  - %s (%s)" % (c["test"], TEST_LABEL.get(c["status"], c["status"])) for c in diff["removed"])
    return "\n".join(out) + "\n"


def table(head: List[str], rows: List[List[Any]], empty: str) -> Markup:
    """A plain table (each cell escaped unless it is markup), or a line saying why it would be empty."""
    if not rows:
        return fill("muted_p", text=empty)
    return fill("table", head=join(fill("th", text=c) for c in head),
                rows=join(fill("tr", cells=join(fill("td", text=c) for c in row)) for row in rows))


def mono(value: Any) -> Markup:
    return fill("mono", text=value)


def status_badge(status: Optional[str]) -> Markup:
    if status is None:
        return fill("dash")
    return fill("badge", status=status, attrs=EMPTY, text=TEST_LABEL.get(status, status))


def section(anchor: str, title: str, body: Markup) -> Markup:
    return fill("section", anchor=anchor, title=title, body=body)


def render_diff(diff: Dict[str, Any], source: Path) -> str:
    """The comparison page: environment differences at the top, then status changes, baseline rows and observed
    values, tests added and removed, and both environments side by side."""
    old, new = diff["old"], diff["new"]
    facts = facts_markup([("Old run", run_fact(old)), ("New run", run_fact(new))] +
                         [("New: " + term, value) for term, value in environment_facts(new["env"])[:3]])
    banners = []
    if diff["problems"]:
        banners.append(fill("problems", count=plural(len(diff["problems"]), "file"),
                            items=join(fill("li", text=p) for p in diff["problems"][:20])))
    if not diff["same_gpu"]:
        banners.append(fill("banner", kind="warn", text="The runs are on different GPUs: differences may come from "
                                                        "the hardware, not from a change."))
    worse = [c for c in diff["status"] if c["new"] == "failed"]
    if worse:
        banners.append(fill("banner", kind="fail", text="%s now failing" % plural(len(worse), "test")))
    sections = [
        section("environment", "Environment differences", table(
            ["What", "Old", "New"], [[e["what"], mono(fmt_value(e["old"])), mono(fmt_value(e["new"]))]
                                     for e in diff["environment"]], "The environments do not differ.") +
            fill("both_environments", tables=environment_tables([old, new]))),
        section("status", "Status changes", table(
            ["Test", "Old", "New", "Why (new run)"],
            [[mono(c["test"]), status_badge(c["old"]), status_badge(c["new"]), c["why"]] for c in diff["status"]],
            "No test changed its status.")),
        section("baseline", "Observed values and baselines", table(
            ["Test", "ID/key", "Old", "New", "Expected"],
            [[mono(c["test"]), mono("%s/%s" % (c["id"], c["key"])),
              join([c["old_status"] or "\u2014", mono(fmt_value(c["old"]))], " "),
              join([c["new_status"] or "\u2014", mono(fmt_value(c["new"]))], " "),
              join([mono(fmt_value(c["expected"])), " gating" if c["gating"] is True else ""])]
             for c in diff["baselines"]],
            "No baseline row changed.") +
            fill("h3", text="Observed values that moved beyond noise (%d %% or more), the largest first"
                 % round(100 * NOISE_RELATIVE)) + table(
            ["Test", "Key", "Old", "New", "Change"],
            [[mono(c["test"]), mono(c["key"]), mono(fmt_shown(c["old"])), mono(fmt_shown(c["new"])), fmt_change(c)]
             for c in diff["values"]], "No observed value moved beyond noise.") +
            (fill("folded", summary="%s within noise (less than %d %%), folded"
                  % (plural(len(diff["jitter"]), "observed value"), round(100 * NOISE_RELATIVE)), body=table(
                      ["Test", "Key", "Old", "New", "Change"],
                      [[mono(c["test"]), mono(c["key"]), mono(fmt_shown(c["old"])), mono(fmt_shown(c["new"])),
                        fmt_change(c)] for c in diff["jitter"]], "")) if diff["jitter"] else EMPTY)),
        section("added-removed", "Tests added and removed", table(
            ["", "Test", "Status"], [["added", mono(c["test"]), status_badge(c["status"])] for c in diff["added"]] +
            [["removed", mono(c["test"]), status_badge(c["status"])] for c in diff["removed"]],
            "The same tests ran in both.")),
    ]
    data = {"generator": {"name": GENERATOR, "version": GENERATOR_VERSION}, "old": old["id"], "new": new["id"],
            "environment": diff["environment"], "status": diff["status"], "baselines": diff["baselines"],
            "values": diff["values"], "jitter": diff["jitter"], "noise_relative": NOISE_RELATIVE, "added": diff["added"], "removed": diff["removed"], "problems": diff["problems"]}
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The style sheet is a file of the installation and the data block JSON made safe to embed (embed_json):
    # markup as they are, where anything else is escaped.
    nav = join(fill("nav_link", anchor=anchor, label=label) for anchor, label in (
        ("environment", "Environment"), ("status", "Status changes"), ("baseline", "Observed values and baselines"),
        ("added-removed", "Added and removed")))
    # The same skeleton as the report (one Content-Security-Policy); the comparison has no script of its own.
    return fill_page("page.html", title="streamcheck comparison \u2014 %s \u2192 %s" % (old["id"], new["id"]),
                     css=Markup(template_text("report.css")), heading="streamcheck comparison", facts=facts,
                     banners=join(banners, "\n"), nav=nav, sections=join(sections, "\n"), script=EMPTY,
                     footer="Generated by %s %s at %s from %s and %s (plans: %s)." % (
                         GENERATOR, GENERATOR_VERSION, now, old["dir"], new["dir"], source / "tests"),
                     data=Markup(embed_json(data)))
