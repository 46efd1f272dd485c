"""The model of one run as the report shows it: the family test plans (tests/<family>/README.md), the
baseline file of the run's architecture (baselines/sm_<cc>.json), coverage per catalog ID, and totals.
It works on the run that results.load_run() read. Python 3.9+ standard library only.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .common import COVERAGE_ORDER, DASHES, SHARED_GPU_LABEL, TEST_LABEL, TEST_ORDER, InputError, dig, fmt_value
from .results import (BASELINE_SCHEMA, SHARED_GPU, check_member, check_schema, count_outcomes, new_test, outcome,
                      read_json, read_text, sharing_text)


# ------------------------------------------------------------------------------------------------
# Test plans
# ------------------------------------------------------------------------------------------------

def split_row(line: str) -> List[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", text)]


def plain(text: str) -> str:
    """A cell without markdown emphasis and code marks."""
    return re.sub(r"[*_`~]", "", text).strip()


TEST_NAME = re.compile(r"[A-Za-z_][\w/]*\.[\w/*?]+")


def planned_tests(cell: str) -> List[str]:
    """The test names of a plan's Tests cell: Suite.Test (or a pattern of them), in backticks or not. Other
    code in the cell (an entry such as `conn32`, a row key, a variable) names no test."""
    names = [n.strip() for n in re.findall(r"`([^`]+)`", cell) if n.strip()]
    if names:
        return [n for n in names if TEST_NAME.fullmatch(n)]
    if plain(cell).lower() in DASHES:
        return []
    tokens = [t.strip() for t in re.split(r"[,;]", plain(cell))]
    return [t for t in tokens if TEST_NAME.fullmatch(t)]


def parse_plan(text: str) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """Rows of the plan table (header starting with | ID |), and a note when the table is missing or
    lacks a required column."""
    lines = text.splitlines()
    header_at = None
    for number, line in enumerate(lines):
        if line.strip().startswith("|"):
            cells = split_row(line)
            if cells and plain(cells[0]).lower() == "id":
                header_at = number
                break
    if header_at is None:
        return [], "the README has no plan table (a table whose header starts with | ID |)"
    header = [plain(c).lower() for c in split_row(lines[header_at])]
    columns = {name: index for index, name in reversed(list(enumerate(header)))}
    missing = [name for name in ("id", "kind", "source", "tests") if name not in columns]
    if missing:
        return [], "the plan table lacks the column(s) %s" % ", ".join(m.capitalize() for m in missing)
    claim_column = next((columns[c] for c in ("claim", "behavior", "behaviour", "description", "what")
                         if c in columns), None)

    rows: List[Dict[str, Any]] = []
    for line in lines[header_at + 1:]:
        if not line.strip().startswith("|"):
            break
        cells = split_row(line)
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        cells += [""] * (len(header) - len(cells))
        id_cell = cells[columns["id"]]
        if not plain(id_cell):
            continue
        match = re.search(r"[A-Z][A-Z0-9]*-\d+[A-Za-z]?", id_cell)
        tests_cell = cells[columns["tests"]]
        rows.append({
            "id": match.group(0) if match else plain(id_cell),
            "id_cell": id_cell,
            "retired": "retired" in id_cell.lower(),
            "kind": plain(cells[columns["kind"]]),
            "source": cells[columns["source"]],
            "claim": cells[claim_column] if claim_column is not None else "",
            "tests_cell": tests_cell,
            "tests": planned_tests(tests_cell),
            "last_cell": cells[len(header) - 1],
        })
    return rows, None


def parse_self_test_table(text: str) -> Optional[List[str]]:
    """The tests of a plan without catalog IDs (the suite's own machinery): the first cells of a table whose
    header starts with | Test | or | Tests |; None when the README has no such table."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.strip().startswith("|"):
            continue
        cells = split_row(line)
        if not cells or plain(cells[0]).lower() not in ("test", "tests"):
            continue
        names: List[str] = []
        for row in lines[number + 1:]:
            if not row.strip().startswith("|"):
                break
            first = split_row(row)[0]
            if re.fullmatch(r":?-+:?", first):
                continue
            names.extend(n for n in planned_tests(first) if n not in names)
        return names
    return None


def load_plans(source: Path) -> Dict[str, Dict[str, Any]]:
    """family -> {path, rows, note, self_tests}; a family folder without README.md gets rows None. A plan
    without an ID table but with a table of tests (self_tests: their names) covers no catalog ID."""
    plans: Dict[str, Dict[str, Any]] = {}
    tests_dir = source / "tests"
    if not tests_dir.is_dir():
        return plans
    for folder in sorted(p for p in tests_dir.iterdir() if p.is_dir()):
        readme = folder / "README.md"
        if readme.is_file():
            text = read_text(readme, "test plan")
            rows, note = parse_plan(text)
            self_tests = parse_self_test_table(text) if note is not None else None
            plans[folder.name] = {"path": str(readme), "rows": rows if note is None else None, "note": note,
                                  "self_tests": self_tests}
        elif (folder / "CMakeLists.txt").is_file():
            plans[folder.name] = {"path": None, "rows": None, "note": "no README.md", "self_tests": None}
    return plans


# ------------------------------------------------------------------------------------------------
# Baseline file (baselines/sm_<cc>.json in the source tree): what the comparisons do not carry
# ------------------------------------------------------------------------------------------------

def baseline_arch(env: Dict[str, Any], tests: Iterable[Dict[str, Any]]) -> Optional[str]:
    """sm_<cc> of the run's GPU (env.json), else of the first test that recorded a device."""
    arch = dig(env, "gpu", "arch")
    if isinstance(arch, str) and re.fullmatch(r"sm_\w+", arch):
        return arch
    capability = dig(env, "gpu", "compute_capability")
    if isinstance(capability, str) and re.fullmatch(r"\d+\.\d+", capability):
        return "sm_" + capability.replace(".", "")
    for test in sorted(tests, key=lambda t: t["ctest_name"]):
        capability = dig(test["device"], "compute_capability")
        if isinstance(capability, int) and not isinstance(capability, bool) and capability > 0:
            return "sm_%d" % capability
    return None


def load_baseline(source: Path, arch: Optional[str]) -> Dict[str, Any]:
    """The source tree's baseline file of the architecture: {arch, path, version, entries, note}. entries is
    empty and note says why when there is no file; a file that is not a baseline is an input error."""
    found: Dict[str, Any] = {"arch": arch, "path": None, "version": None, "entries": {}, "provenance": None,
                             "note": None}
    folder = source / "baselines"
    if arch is None:
        found["note"] = "the run names no GPU architecture"
    elif not folder.is_dir():
        found["note"] = "no baselines folder in the source tree"
    elif not (folder / (arch + ".json")).is_file():
        found["note"] = "no file baselines/%s.json in the source tree" % arch
    if found["note"] is not None:
        return found
    path = folder / (arch + ".json")
    doc = read_json(path, "baseline file")
    check_schema(doc, path, BASELINE_SCHEMA, "baseline file")
    found["path"] = str(path)
    found["version"] = doc.get("schema_version")
    found["entries"] = check_member(doc, "entries", dict, path, "the baseline file") or {}
    # Baseline schema 1.2: where the file's values come from (GPU, driver, commit, date).
    found["provenance"] = check_member(doc, "provenance", dict, path, "the baseline file")
    return found


def same_value(a: Any, b: Any) -> bool:
    """JSON equality as the fixtures compare: a boolean never equals a number."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def plan_names(test: Dict[str, Any]) -> Set[str]:
    """The names a plan may give a test: its gtest name, its ctest name, its ctest name less the family."""
    family = test["family"]
    names = {test["gtest_name"], test["ctest_name"]}
    if test["ctest_name"].startswith(family + "."):
        names.add(test["ctest_name"][len(family) + 1:])
    return names


def is_pattern(name: str) -> bool:
    return any(ch in name for ch in "*?[")


def test_matches(name: str, test: Dict[str, Any]) -> bool:
    if is_pattern(name):
        return any(fnmatch.fnmatchcase(c, name) for c in plan_names(test))
    return name in plan_names(test)


def matching_tests(name: str, tests: Sequence[Dict[str, Any]],
                   index: Dict[str, List[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """The tests a plan's name matches, in their order; index: the tests by plan_names (a run of thousands of tests
    is not searched once per name)."""
    return [t for t in tests if test_matches(name, t)] if is_pattern(name) else index.get(name, [])


def names_index(tests: Sequence[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    index: Dict[str, List[Dict[str, Any]]] = {}
    for t in tests:
        for name in plan_names(t):
            index.setdefault(name, []).append(t)
    return index


def aggregate(results: Sequence[Dict[str, Any]], missing: Sequence[str], differs: Sequence[str]) -> str:
    statuses = [t["status"] for t in results]
    if "failed" in statuses:
        return "fail"
    if differs:
        return "differs"
    if missing or not results or "notrun" in statuses:
        return "no-result"
    if "skipped" in statuses:
        return "skipped"
    return "pass"


def coverage_detail(results: Sequence[Dict[str, Any]], missing: Sequence[str], differs: Sequence[str]) -> List[str]:
    notes = []
    counts: Dict[str, int] = {}
    for t in results:
        counts[outcome(t)] = counts.get(outcome(t), 0) + 1
    if len(results) > 1 or results and missing:
        notes.append(", ".join("%d %s" % (counts[s], TEST_LABEL[s]) for s in TEST_ORDER if s in counts)
                     + (" of %d planned" % (len(results) + len(missing)) if missing else ""))
    for t in results:
        if t["status"] == "failed" and t["failures"]:
            first = t["failures"][0].strip().splitlines()
            notes.append("%s: %s" % (label_of(t), " ".join(first[1:2] or first[:1])))
    # A skip of the baseline rule says "not judged: …" itself; a test not judged for a shared GPU says why.
    reasons = sorted({"%s: %s" % (SHARED_GPU_LABEL, sharing_text(t)) if outcome(t) == SHARED_GPU else
                      ("" if is_unjudged(t) else "skipped: ") + (t["skip_reason"] or "(no reason given)")
                      for t in results if t["status"] == "skipped"})
    notes.extend(reasons)
    if missing:
        notes.append("no result for %s" % ", ".join(missing))
    notes.extend(differs)
    return notes


def label_of(test: Dict[str, Any]) -> str:
    return "%s [%s]" % (test["gtest_name"], test["variant"]) if test["variant"] else test["gtest_name"]


def is_unjudged(test: Dict[str, Any]) -> bool:
    """A skip of the baseline rule: observed values not judged (no baseline file or entry, or not measured here;
    "no_baseline" in runs of an earlier version)."""
    return test["status"] == "skipped" and test["skip_kind"] in ("not_judged", "no_baseline")


UNJUDGED_REASON = "not judged (observed values without a baseline, or not measured here)"
RECORDED_REASON = "recorded values, not a verdict (a recorded claim is shown, never judged)"


def skip_group(t: Dict[str, Any], not_run: bool = False) -> Optional[str]:
    """The reason a skipped test (and with not_run, a test not run) is counted under; None for any other. The
    baseline rule's skips list their rows, so they differ from test to test: one reason for all."""
    if outcome(t) == SHARED_GPU:
        return None  # counted apart, never an ordinary skip
    if t["status"] == "skipped":
        return UNJUDGED_REASON if is_unjudged(t) else RECORDED_REASON if t["skip_kind"] == "recorded" else \
            t["skip_reason"] or "(no reason given)"
    if t["status"] == "notrun" and not_run:
        return "not run: " + ("; ".join(t["notes"]) or "(no reason recorded)")
    return None


def skip_groups(tests: Iterable[Dict[str, Any]], not_run: bool = False) -> List[Tuple[str, int]]:
    """(reason, count) of the skipped tests (and with not_run, the tests not run), the most frequent first."""
    groups: Dict[str, int] = {}
    for t in tests:
        key = skip_group(t, not_run)
        if key is not None:
            groups[key] = groups.get(key, 0) + 1
    return sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))


def baseline_differences(tests: Iterable[Dict[str, Any]]) -> Dict[str, List[str]]:
    """catalog ID -> descriptions of baseline entries whose value differs."""
    found: Dict[str, List[str]] = {}
    for t in tests:
        if outcome(t) == SHARED_GPU:
            continue  # its rows are not judged, whatever they say
        for entry in t["baseline"]:
            status = entry.get("status")
            if status in ("differs", "differs-gating"):
                text = "%s/%s observed %s, baseline %s%s (%s)" % (
                    fmt_value(entry.get("id")), fmt_value(entry.get("key")), fmt_value(entry.get("observed")),
                    fmt_value(entry.get("expected")), ", gating" if status == "differs-gating" else "", label_of(t))
                found.setdefault(str(entry.get("id")), []).append(text)
    return found


# Baseline row statuses of a value that no baseline judged here: no file, no entry, not measurable.
UNJUDGED_ROWS = ("no-baseline", "no-entry", "not-measured")


def unjudged_notes(test: Dict[str, Any], ident: str) -> List[str]:
    """Why rows of the claim were not judged in a test, one line: the fixture's record of its observed claims
    (unjudged_claims), else, for a test that kept its verdict, the rows themselves (a documented claim's rows
    have no other record)."""
    reasons = [u["reason"] for u in test["unjudged_claims"] if u["id"] == ident]
    rows = [r for r in test["baseline"] if str(r.get("id")) == ident and r.get("status") in UNJUDGED_ROWS]
    if not reasons and rows and test["status"] in ("passed", "failed"):
        first = rows[0]
        reasons = ["%s/%s (%s)%s" % (ident, fmt_value(first.get("key")), first.get("detail") or first.get("status"),
                                     " and %d more row(s)" % (len(rows) - 1) if len(rows) > 1 else "")]
    return ["not judged in %s: %s" % (label_of(test), reason) for reason in reasons]


def unjudged_rows_line(tests: Iterable[Dict[str, Any]], arch: Optional[str]) -> Optional[str]:
    """"12 observed row(s) not judged: no baseline for sm_100": the baseline rows of the run (a documented
    claim's included) that no baseline file or entry judged, and why; None when there is none. What the run
    proves is then its documented claims."""
    reasons: Dict[str, int] = {}
    for t in tests:
        for row in t["baseline"]:
            if row.get("status") in ("no-baseline", "no-entry"):
                found = re.search(r"(sm_\w+)\.json", str(row.get("detail") or ""))
                name = found.group(1) if found else arch or "this GPU"
                why = ("no baseline for %s" if row["status"] == "no-baseline" else
                       "no entry in the baseline for %s") % name
                reasons[why] = reasons.get(why, 0) + 1
    if not reasons:
        return None
    why = next(iter(reasons)) if len(reasons) == 1 else ", ".join("%d %s" % (n, r) for r, n in sorted(reasons.items()))
    return "%d observed row(s) not judged: %s" % (sum(reasons.values()), why)


def tree_head(source: Path) -> Optional[str]:
    """git HEAD of the source tree where it is a checkout of its own (not a folder of another one); None where
    git cannot say."""
    try:
        done = subprocess.run(["git", "-C", str(source), "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != Path(source).resolve():
        return None
    return lines[1].strip()


def source_mismatch(env: Dict[str, Any], source: Path) -> Optional[str]:
    """A line when the source tree that the plans (tests/*/README.md) and the baseline files are read from is
    at another commit than the run: they may name tests and values the run did not have. None when both are at
    one commit, or either is unknown."""
    commit = dig(env, "streamcheck", "commit")
    head = tree_head(source) if isinstance(commit, str) and commit else None
    if head is None or head == commit:
        return None
    return ("the plans and baselines are read from %s at commit %s, but the run was made at commit %s: they may "
            "name tests and values the run did not have" % (source, head[:12], commit[:12]))


def build_coverage(plans: Dict[str, Dict[str, Any]], tests: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    by_family: Dict[str, List[Dict[str, Any]]] = {}
    for t in tests.values():
        by_family.setdefault(t["family"], []).append(t)
    differs = baseline_differences(tests.values())

    rows: List[Dict[str, Any]] = []
    planned_ids = set()
    for family in sorted(plans):
        plan = plans[family]
        if plan["rows"] is None:
            continue
        family_tests = sorted(by_family.get(family, []), key=lambda t: t["ctest_name"])
        index = names_index(family_tests)
        for row in plan["rows"]:
            planned_ids.add(row["id"])
            entry = {"family": family, "id": row["id"], "kind": row["kind"], "source": row["source"],
                     "claim": row["claim"], "planned": row["tests"], "tests_cell": row["tests_cell"],
                     "results": {}, "missing": [], "detail": []}
            if row["retired"]:
                entry["status"] = "retired"
                entry["detail"] = ["marked retired in the plan"]
                rows.append(entry)
                continue
            if not row["tests"]:
                entry["status"] = "uncovered"
                if plain(row["tests_cell"]).lower() not in DASHES:
                    entry["detail"] = ["no test name in the Tests cell: %s" % plain(row["tests_cell"])]
                rows.append(entry)
                continue
            results: List[Dict[str, Any]] = []
            for name in row["tests"]:
                found = matching_tests(name, family_tests, index)
                entry["results"][name] = [t["ctest_name"] for t in found]
                for t in found:
                    if row["id"] not in t["plan_ids"]:
                        t["plan_ids"].append(row["id"])
                        t["plan_rows"].append({"id": row["id"], "kind": row["kind"], "source": row["source"]})
                    if t not in results:
                        results.append(t)
                if not found:
                    entry["missing"].append(name)
            diff = differs.get(row["id"], [])
            entry["status"] = aggregate(results, entry["missing"], diff)
            entry["detail"] = coverage_detail(results, entry["missing"], diff)
            # Row by row: a test that kept its verdict (it has a documented claim) left rows of this claim not
            # judged. An observed claim is then not a pass; a documented one was asserted, and still is.
            unjudged = [note for t in results for note in unjudged_notes(t, row["id"])]
            if unjudged and entry["status"] == "pass" and row["kind"] != "documented":
                entry["status"] = "skipped"
            entry["detail"].extend(unjudged)
            # A recorded claim is shown with its values, apart from verdicts: never a pass.
            recorded = ["%s = %s (%s)" % (b.get("key"), fmt_value(b.get("observed")), label_of(t)) for t in results
                        for b in t["baseline"] if b.get("id") == row["id"] and b.get("status") == "recorded"]
            if row["kind"] == "recorded" and recorded and entry["status"] in ("pass", "skipped"):
                entry["status"] = "recorded"
                entry["detail"] = [d for d in entry["detail"]
                                   if not d.startswith(("not judged", "skipped: recorded values"))] + recorded
            rows.append(entry)

    # IDs that tests claim but no plan lists (families without a plan, or a plan that forgot one).
    claimed: Dict[str, List[Dict[str, Any]]] = {}
    for t in sorted(tests.values(), key=lambda t: t["ctest_name"]):
        for claim in t["claims"]:
            ident = claim.get("id")
            if ident and str(ident) not in planned_ids:
                claimed.setdefault(str(ident), []).append(t)
    unplanned = []
    for ident in sorted(claimed):
        results = claimed[ident]
        diff = differs.get(ident, [])
        unplanned.append({"id": ident, "family": ", ".join(sorted({t["family"] for t in results})),
                          "kind": ", ".join(sorted({str(c.get("kind")) for t in results for c in t["claims"]
                                                    if c.get("id") == ident and c.get("kind")})),
                          "tests": [t["ctest_name"] for t in results],
                          "status": aggregate(results, [], diff),
                          "detail": coverage_detail(results, [], diff)})

    families = sorted(set(by_family) | set(plans))
    no_plan = []
    self_tested = []
    for family in families:
        plan = plans.get(family)
        if plan is not None and plan["rows"] is None and plan.get("self_tests") is not None:
            family_tests = by_family.get(family, [])
            missing = [n for n in plan["self_tests"] if not any(test_matches(n, t) for t in family_tests)]
            unlisted = [t["ctest_name"] for t in sorted(family_tests, key=lambda t: t["ctest_name"])
                        if not any(test_matches(n, t) for n in plan["self_tests"])]
            self_tested.append({"family": family, "planned": len(plan["self_tests"]), "tests": len(family_tests),
                                "missing": missing, "unlisted": unlisted,
                                "failed": sum(1 for t in family_tests if t["status"] == "failed")})
            continue
        if plan is None or plan["rows"] is None:
            no_plan.append({"family": family, "tests": len(by_family.get(family, [])),
                            "note": plan["note"] if plan else "no folder tests/%s in the source tree" % family})
    counts = {status: 0 for status in COVERAGE_ORDER}
    for row in rows:
        counts[row["status"]] += 1
    return {"rows": rows, "unplanned": unplanned, "no_plan": no_plan, "self_tested": self_tested, "counts": counts}


def add_planned_placeholders(coverage: Dict[str, Any], plans: Dict[str, Dict[str, Any]],
                             tests: Dict[str, Dict[str, Any]]) -> None:
    """A test that a plan names but no run produced counts as "not run" and gets its own row, so a
    filtered or interrupted run shows what it left out."""
    for row in coverage["rows"]:
        for name in row["missing"]:
            if any(ch in name for ch in "*?["):
                continue
            ctest = "%s.%s" % (row["family"], name)
            test = tests.get(ctest)
            if test is None:
                test = new_test(ctest, name)
                test["planned_only"] = True
                tests[ctest] = test
                test["notes"].append("planned in %s but no run produced a result for it"
                                     % (plans[row["family"]].get("path") or "the plan"))
            if test.get("planned_only") and row["id"] not in test["plan_ids"]:
                test["plan_ids"].append(row["id"])
                test["plan_rows"].append({"id": row["id"], "kind": row["kind"], "source": row["source"]})
            row["results"][name] = [ctest]


def totals_of(tests: Dict[str, Dict[str, Any]]) -> Dict[str, int]:
    """The run's tests by outcome, as the gate and JUnit count them, and apart, the plans' tests the run never
    listed ("planned")."""
    planned = sum(1 for t in tests.values() if outcome(t) == "planned")
    return dict(count_outcomes(tests.values()), tests=len(tests) - planned, planned=planned)


def build_model(run_dir: Path, source: Path) -> Dict[str, Any]:
    """Everything the report shows of one run: {run, tests, instruments, plans, coverage, totals, baseline,
    problems}. problems lists the files that could not be read (result files, the baseline file); an
    InputError only when run_dir is not a usable run folder or a plan cannot be read."""
    from .results import load_run, nothing_tested_on_gpu  # here, so that importing the model reads nothing
    run = load_run(run_dir)
    tests = run["tests"]
    nothing_on_gpu = nothing_tested_on_gpu(run["env"], tests)
    plans = load_plans(source)
    coverage = build_coverage(plans, tests)
    add_planned_placeholders(coverage, plans, tests)
    problems = list(run["problems"])
    try:
        baseline = load_baseline(source, baseline_arch(run["env"], tests.values()))
    except InputError as e:
        problems.append(str(e))
        baseline = {"arch": None, "path": None, "version": None, "entries": {}, "provenance": None,
                    "note": "the baseline file could not be read: %s" % e}
    return {"run": run, "tests": tests, "instruments": run["instruments"], "plans": plans, "coverage": coverage,
            "totals": totals_of(tests), "baseline": baseline, "problems": problems, "nothing_on_gpu": nothing_on_gpu,
            "unjudged_rows": unjudged_rows_line(tests.values(), baseline_arch(run["env"], tests.values())),
            "source_mismatch": source_mismatch(run["env"], source)}
