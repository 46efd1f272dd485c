"""The fleet's verdict shown (fleet.fleet_view): one self-contained page, a Markdown summary for a CI job, JUnit
XML with a test suite per host, and lines for a log. Lists are bounded (NAMES_SHOWN names in a cell, ROWS_SHOWN
rows in a table; the rest counted), so that a fleet of a hundred hosts stays one readable page. Python 3.9+
standard library only.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Dict, List, Sequence, Tuple
from xml.sax.saxutils import escape, quoteattr

from .common import GENERATOR, GENERATOR_VERSION, TEST_LABEL, Markup, fmt_shown, plural
from .compare import mono, section, status_badge, table
from .fleet import RULE, group_label
from .gate import PASS, UNTRUSTWORTHY, VERDICT, bounded, junit_result, md_cell, md_list, md_message
from .machine import counts_text
from .page import embed_json
from .page_parts import badge, facts_markup
from .results import count_outcomes
from .templates import EMPTY, fill, fill_page, join, template_text

NAMES_SHOWN = 8
ROWS_SHOWN = 200
CODE_STATUS = {0: "passed", 1: "failed", 2: "notrun"}


def names(labels: Sequence[str], limit: int = NAMES_SHOWN) -> str:
    """"a, b, c and 5 more"."""
    shown = ", ".join(labels[:limit])
    return shown + (" and %d more" % (len(labels) - limit) if len(labels) > limit else "")


def code_badge(code: int) -> Markup:
    return badge(CODE_STATUS[code], "exit %d" % code, VERDICT[code])


def host_counts(host: Dict[str, Any]) -> str:
    return counts_text(count_outcomes(t for j in host["runs"] for t in j["run"]["tests"].values()))


def verdict_line(fleet: Dict[str, Any]) -> str:
    behind = " \u2014 behind it: %s" % names(fleet["behind"]) if fleet["behind"] else ""
    return "Fleet: %s (exit %d), %s%s" % (fleet["verdict"], fleet["code"], plural(len(fleet["hosts"]), "host"), behind)


def code_counts(hosts: Sequence[Dict[str, Any]]) -> str:
    return ", ".join("%d exit %d" % (sum(1 for h in hosts if h["code"] == c), c) for c in sorted(VERDICT))


def shown_value(row: Dict[str, Any], value: Any) -> str:
    return fmt_shown(value) if row["kind"] == "number" else str(value)


def bounded_rows(rows: List[List[Any]], width: int) -> List[List[Any]]:
    """The first ROWS_SHOWN rows, and one that counts the rest."""
    more = len(rows) - ROWS_SHOWN
    return rows[:ROWS_SHOWN] + ([["%d more rows not shown: the hosts' run folders and reports have every one"
                                  % more] + [""] * (width - 1)] if more > 0 else [])


# ------------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------------
def verdict_section(fleet: Dict[str, Any]) -> Markup:
    hosts = [h for h in fleet["hosts"] if h["code"] != PASS]
    rows = [[mono(h["name"]), group_label(h["group"]), code_badge(h["code"]), bounded(h["why"][0]) if h["why"] else "",
             plural(len(h["why"]), "reason")] for h in sorted(hosts, key=lambda h: (-h["code"], h["name"]))]
    return section("verdict", "Hosts behind the verdict", table(["Host", "Group", "Verdict", "First reason", "All"],
                                                                bounded_rows(rows, 5), "Every host passed its gate."))


def groups_section(fleet: Dict[str, Any]) -> Markup:
    parts = []
    for key, hosts in fleet["groups"].items():
        parts.append(fill("h3", text="%s: %s (%s)" % (group_label(key), plural(len(hosts), "host"),
                                                      code_counts(hosts))))
        parts.append(table(["Host", "Runs", "Verdict", "Tests"],
                           [[mono(h["name"]), ", ".join(j["verdict"].get("label") or j["verdict"]["run"]
                                                        for j in h["runs"]) or "none",
                             code_badge(h["code"]), host_counts(h)] for h in hosts], ""))
    return section("groups", "Hosts by GPU model, driver and toolkit", join(parts))


def tests_section(rows: List[Dict[str, Any]]) -> Markup:
    body = [[mono(r["test"]), "%d: %s" % (len(r["failed"]), names(r["failed"])) if r["failed"] else "",
             "%d: %s" % (len(r["unjudged"]), names(r["unjudged"])) if r["unjudged"] else ""] for r in rows]
    return section("tests", "Tests that failed or were not judged", table(
        ["Test", "Failed on", "Not judged on (shared GPU, not run)"], bounded_rows(body, 3),
        "Every test passed or skipped with its reason on every host."))


def spread_cells(row: Dict[str, Any]) -> List[Any]:
    if row["kind"] == "number":
        return [fmt_shown(row["median"]), fmt_shown(row["mad"]), "%s \u2013 %s" % (fmt_shown(row["low"]),
                                                                              fmt_shown(row["high"]))]
    return [row["majority"] or "(no majority)", "", plural(row["distinct"], "distinct value")]


def spread_table(rows: List[Dict[str, Any]]) -> Markup:
    body = [[mono(r["test"]), mono(r["key"]), r["n"]] + spread_cells(r) +
            [names(["%s: %s" % (label, shown_value(r, v)) for label, v in r["apart"]])] for r in rows]
    return table(["Test", "Key", "Samples", "Median (or majority)", "MAD", "Range", "Apart from the group"],
                 bounded_rows(body, 7), "")


def values_section(spreads: Dict[Any, Dict[str, Any]]) -> Markup:
    parts = [fill("muted_p", text="A sample (a host, or one GPU of a host) stands apart when its value lies outside "
                                  "the group's %s; a text value, when it differs from the value most samples have. "
                                  "docs/fleet.md says why." % RULE)]
    for key, s in spreads.items():
        parts.append(fill("h3", text="%s: %s" % (group_label(key), plural(s["samples"], "sample"))))
        parts.append(spread_table(s["apart"]) if s["apart"] else
                     fill("muted_p", text="No sample stands apart from the group."))
        if s["varying"]:
            parts.append(fill("folded", summary="Values that vary within the rule (%d), folded" % len(s["varying"]),
                              body=spread_table(s["varying"])))
        parts.append(fill("muted_p", text="%s the same on every sample." % plural(s["constant"], "value")))
    return section("values", "Observed values: spread within each group", join(parts))


def change_text(row: Dict[str, Any], c: Dict[str, Any]) -> str:
    size = "" if row["kind"] != "number" else " (%s)" % ("from a value that never varied" if math.isinf(c["score"])
                                                          else "%.1f \u00d7 its noise" % c["score"])
    return "%s: %s \u2192 %s%s" % (c["host"], shown_value(row, c["old"]), shown_value(row, c["new"]), size)


def changes_section(changes: Dict[str, Any]) -> Markup:
    verdicts = changes["verdicts"]
    env_rows = [[e["what"], mono(e["old"]), mono(e["new"]), "%d: %s" % (len(e["hosts"]), names(e["hosts"]))]
                for e in changes["environment"]]
    host_rows = [[mono(h["host"]), code_badge(h["old"]), code_badge(h["new"]), " ".join(h["why"])]
                 for h in verdicts["hosts"]]
    test_rows = [[mono(t["test"]), status_badge(t["old"]), status_badge(t["new"]),
                  "%d: %s" % (len(t["hosts"]), names(t["hosts"]))] for t in verdicts["tests"]]
    value_rows = [[mono(v["test"]), mono(v["key"]), names([change_text(v, c) for c in v["changes"]], 4)]
                  for v in changes["values"]]
    fleet_rows = [["added", names(verdicts["added"])]] * bool(verdicts["added"]) + \
        [["removed", names(verdicts["removed"])]] * bool(verdicts["removed"])
    return section("changes", "Since the previous fleet run", join([
        fill("muted_p", text="Previous: %s (exit %d)." % (changes["previous"], changes["previous_code"])),
        fill("h3", text="Driver and toolkit"),
        table(["What", "Before", "Now", "Hosts"], env_rows, "No host changed its GPU, driver or toolkit."),
        table(["Hosts", ""], fleet_rows, "") if fleet_rows else EMPTY,
        fill("h3", text="Verdicts"),
        table(["Host", "Before", "Now", "Why"], host_rows, "No host changed its verdict."),
        table(["Test", "Before", "Now", "On"], bounded_rows(test_rows, 4), "No test changed its outcome."),
        fill("h3", text="Observed values beyond their noise: numbers first, the largest change first"),
        table(["Test", "Key", "Changes"], bounded_rows(value_rows, 3), "No observed value changed beyond its noise."),
        fill("muted_p", text="%s within noise (the value's own spread in its group, %s) not listed." % (
            plural(changes["noise"], "change"), RULE))]))


def fleet_data(view: Dict[str, Any]) -> Dict[str, Any]:
    """The page's data block: verdicts and groups, for machines (the values stay in the hosts' run folders)."""
    fleet = view["fleet"]
    return {"generator": {"name": GENERATOR, "version": GENERATOR_VERSION}, "code": fleet["code"],
            "verdict": fleet["verdict"], "behind": fleet["behind"], "rule": RULE,
            "hosts": [{"name": h["name"], "code": h["code"], "group": list(h["group"]), "why": h["why"][:5]}
                      for h in fleet["hosts"]]}


def render_fleet(view: Dict[str, Any]) -> str:
    fleet = view["fleet"]
    kind = {0: "ok", 1: "fail", 2: "warn"}[fleet["code"]]
    facts = facts_markup([("Fleet", mono(fleet["dir"])), ("Hosts", "%d (%s)" % (len(fleet["hosts"]),
                                                                               code_counts(fleet["hosts"]))),
                          ("Groups", str(len(fleet["groups"])))])
    sections = [verdict_section(fleet), groups_section(fleet), tests_section(view["tests"]),
                values_section(view["spreads"])]
    nav = [("verdict", "Verdict"), ("groups", "Groups"), ("tests", "Tests"), ("values", "Values")]
    if view["changes"]:
        sections.append(changes_section(view["changes"]))
        nav.append(("changes", "Changes"))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return fill_page("page.html", title="streamcheck fleet \u2014 %s" % fleet["verdict"],
                     css=Markup(template_text("report.css")), heading="streamcheck fleet", facts=facts,
                     banners=fill("banner", kind=kind, text=verdict_line(fleet)),
                     nav=join(fill("nav_link", anchor=a, label=label) for a, label in nav),
                     sections=join(sections, "\n"), script=EMPTY,
                     footer="Generated by %s %s at %s from %s." % (GENERATOR, GENERATOR_VERSION, now, fleet["dir"]),
                     data=Markup(embed_json(fleet_data(view))))


# ------------------------------------------------------------------------------------------------
# Markdown, JUnit, log lines
# ------------------------------------------------------------------------------------------------
def md_changes(changes: Dict[str, Any], limit: int) -> List[str]:
    env = ["%s %s \u2192 %s on %s" % (e["what"], md_cell(e["old"]), md_cell(e["new"]), md_cell(names(e["hosts"])))
           for e in changes["environment"]]
    hosts = ["%s: exit %d \u2192 exit %d" % (md_cell(h["host"]), h["old"], h["new"])
             for h in changes["verdicts"]["hosts"]]
    tests = ["%s: %s \u2192 %s on %s" % (md_cell(t["test"]), TEST_LABEL.get(t["old"], t["old"]),
                                         TEST_LABEL.get(t["new"], t["new"]), md_cell(names(t["hosts"])))
             for t in changes["verdicts"]["tests"]]
    values = ["%s %s: %s" % (md_cell(v["test"]), md_cell(v["key"]), md_message(names([change_text(v, c)
                                                                                     for c in v["changes"]], 3)))
              for v in changes["values"]]
    gone = ["%s: in the previous fleet run, absent from this one" % md_cell(n) for n in changes["verdicts"]["removed"]]
    new = ["%s: absent from the previous fleet run" % md_cell(n) for n in changes["verdicts"]["added"]]
    return (["### Since the previous fleet run (exit %d before)" % changes["previous_code"], ""] +
            md_list("Hosts", gone + new, limit) +
            md_list("Driver and toolkit", env, limit) + md_list("Host verdicts", hosts, limit) +
            md_list("Test outcomes", tests, limit) +
            md_list("Values changed beyond their noise", values, limit) +
            ["%s within noise (each value's own spread in its group) not listed." % plural(changes["noise"], "change"),
             ""])


def fleet_markdown(view: Dict[str, Any], limit: int = 30) -> str:
    """The job summary: the verdict and the hosts behind it, the groups, the tests that failed or were not judged,
    the values apart from their group, and the changes."""
    fleet = view["fleet"]
    out = ["## streamcheck %s" % md_cell(verdict_line(fleet)), "", "| group | hosts | exit 0 | exit 1 | exit 2 |",
           "|---|---:|---:|---:|---:|"]
    for key, hosts in fleet["groups"].items():
        out.append("| %s | %d | %s |" % (md_cell(group_label(key)), len(hosts), " | ".join(
            str(sum(1 for h in hosts if h["code"] == c)) for c in sorted(VERDICT))))
    out.append("")
    bad = sorted((h for h in fleet["hosts"] if h["code"] != PASS), key=lambda h: (-h["code"], h["name"]))
    out.extend(md_list("### Hosts behind the verdict", ["**%s** (exit %d): %s" % (
        md_cell(h["name"]), h["code"], md_message(h["why"][0] if h["why"] else "")) for h in bad], limit))
    out.extend(md_list("### Tests that failed or were not judged", ["%s: %s" % (md_cell(r["test"]), "; ".join(
        "%s on %s" % (what, md_cell(names(r[key]))) for key, what in (("failed", "failed"), ("unjudged", "not judged"))
        if r[key])) for r in view["tests"]], limit))
    apart = [(key, r) for key, s in view["spreads"].items() for r in s["apart"]]
    out.extend(md_list("### Values apart from their group (%s)" % RULE, ["%s %s %s: %s" % (
        md_cell(key[0]), md_cell(r["test"]), md_cell(r["key"]), md_message(names(
            ["%s %s" % (label, shown_value(r, v)) for label, v in r["apart"]], 4))) for key, r in apart], limit))
    if view["changes"]:
        out.extend(md_changes(view["changes"], limit))
    return "\n".join(out) + "\n"


def host_suite(host: Dict[str, Any]) -> Tuple[str, int, int]:
    """One test suite for a host: every test of its runs (the run's label before its class), and a case per run
    and for the host's recorded exit saying whether it is trustworthy."""
    cases, failures, skipped = [], 0, 0
    for judged in host["runs"]:
        label = judged["verdict"].get("label") or judged["verdict"]["run"]
        for name, t in sorted(judged["run"]["tests"].items()):
            classname, _, short = name.rpartition(".")
            result = junit_result(t)
            failures += result.startswith("<failure")
            skipped += result.startswith("<skipped")
            cases.append('<testcase classname=%s name=%s time="%.3f">%s</testcase>' % (
                quoteattr("%s.%s.%s" % (host["name"], label, classname or t["family"])), quoteattr(short or name),
                (t["duration_ms"] or 0.0) / 1000.0, result))
    untrusted = host["code"] == UNTRUSTWORTHY
    failures += untrusted
    cases.append('<testcase classname=%s name="HostIsTrustworthy" time="0">%s</testcase>' % (
        quoteattr("%s.streamcheck.fleet" % host["name"]),
        "<failure message=%s>%s</failure>" % (quoteattr(bounded(host["untrustworthy"][0])),
                                               escape("\n".join(host["untrustworthy"]))) if untrusted else ""))
    return ('<testsuite name=%s tests="%d" failures="%d" skipped="%d">\n%s\n</testsuite>\n' % (
        quoteattr(host["name"]), len(cases), failures, skipped, "\n".join(cases)), len(cases), failures)


def fleet_junit(fleet: Dict[str, Any]) -> str:
    suites = [host_suite(h) for h in fleet["hosts"]]
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="streamcheck fleet" tests="%d" failures="%d">\n'
            '%s</testsuites>\n' % (sum(s[1] for s in suites), sum(s[2] for s in suites), "".join(s[0] for s in suites)))


def fleet_lines(view: Dict[str, Any]) -> List[str]:
    fleet = view["fleet"]
    out = ["fleet: %s: %s (%s)" % (group_label(k), plural(len(h), "host"), code_counts(h))
           for k, h in fleet["groups"].items()]
    out.extend("fleet: %s: exit %d: %s" % (h["name"], h["code"], h["why"][0] if h["why"] else "")
               for h in fleet["hosts"] if h["code"] != PASS)
    apart = sum(len(s["apart"]) for s in view["spreads"].values())
    out.append("fleet: %s with samples apart from their group; %s failed or not judged on some host" % (
        plural(apart, "value"), plural(len(view["tests"]), "test")))
    if view["changes"]:
        c = view["changes"]
        gone = c["verdicts"]["removed"]
        out.append("fleet: since %s: %s%s, %s, %s, %s beyond noise" % (
            c["previous"], "%s gone (%s), " % (plural(len(gone), "host"), ", ".join(gone)) if gone else "",
            plural(len(c["environment"]), "driver or toolkit change"),
            plural(len(c["verdicts"]["hosts"]), "verdict change"), plural(len(c["verdicts"]["tests"]), "test change"),
            plural(len(c["values"]), "value")))
    out.append("fleet: %s" % verdict_line(fleet))
    return out
