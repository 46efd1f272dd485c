#!/usr/bin/env python3
"""streamcheck report generator: one self-contained HTML page from one or more run folders.

    python3 reports/streamcheck_report.py RUN_DIR [RUN_DIR ...] [--source SRC_DIR] [-o OUT.html]

A run folder (build/results/latest, or build/results/runs/<id>) holds env.json, gtest/*.xml,
observations/*.json and instruments/*.json. The test plans are read from SRC_DIR/tests/<family>/README.md,
and from SRC_DIR/baselines/sm_<cc>.json what a baseline comparison does not carry (where the value comes
from, why it is gating, whether a driver may flip it, a finding).
Several run folders are merged only when they come from one environment (GPU, driver, runtime, commit).

The page needs no network and no JavaScript: CSS is inline, the merged data is embedded as
<script type="application/json" id="data">, and a small optional script adds filtering.

Exit status: 0 when the report was written (failed tests do not change it), 2 on bad input.
Python 3.9+ standard library only; reads result files only (no CUDA, no GoogleTest).
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import fnmatch
import html
import json
import math
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

GENERATOR = "streamcheck_report"
GENERATOR_VERSION = "1.1.0"
ENV_SCHEMA = "streamcheck.env"
OBSERVATION_SCHEMA = "streamcheck.observation"
BASELINE_SCHEMA = "streamcheck.baseline"
SUPPORTED_SCHEMA_MAJOR = "1"

# Test outcomes, in the order a family table lists them (failed first).
TEST_ORDER = {"failed": 0, "notrun": 1, "skipped": 2, "passed": 3}
TEST_LABEL = {"failed": "FAIL", "notrun": "not run", "skipped": "skipped", "passed": "pass"}

# Coverage statuses of a catalog ID.
COVERAGE_LABEL = {
    "fail": "FAIL",
    "differs": "observed-differs",
    "no-result": "no-result",
    "uncovered": "uncovered",
    "skipped": "skipped",
    "pass": "pass",
    "retired": "retired",
}
COVERAGE_ORDER = ["fail", "differs", "no-result", "uncovered", "skipped", "pass", "retired"]

BASELINE_LABEL = {"match": "match", "differs": "differs", "differs-gating": "differs (gating)",
                  "no-baseline": "no baseline", "no-entry": "no entry", "no-baseline-dir": "no baselines folder"}

# A test whose claims are all observed and which met a row without a baseline ends skipped with a message
# starting so (observation schema 1.3): its values were recorded but not judged.
UNJUDGED_PREFIX = "no baseline:"

MUTATION_KIND_TITLE = {
    "arrangement": "the mutation changed what the test sets up, so the observation itself must tell the difference",
    "expectation": "the mutation changed only the expected value: it proves the assertion can fire, not that the "
                   "observation can tell; the family plan says why no arrangement change exists",
}

# Evidence lists shown per test at most; the rest is counted.
MAX_EVIDENCE_LINES = 20

# Properties that the fixtures record for every claim; everything else is an observed value.
CLAIM_PROPERTIES = ("catalog_id", "verdict_kind", "doc_source")
# Properties of the test's evidence (observation schema 1.3), not observed values.
EVIDENCE_PROPERTIES = ("mutation", "mutation_kind", "watchdog", "invalid_check")
# Attributes GoogleTest itself writes on <testcase>; any other attribute is a recorded property.
TESTCASE_ATTRIBUTES = {"name", "file", "line", "status", "result", "time", "timestamp", "classname",
                       "type_param", "value_param"}

# The fields that must agree before run folders are merged.
MERGE_FIELDS = ("gpu.uuid", "cuda.driver_version", "cuda.runtime_version", "streamcheck.commit")

DASHES = {"", "\u2014", "\u2013", "-", "--", "n/a", "none", "tbd"}


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


# ------------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------------

def dig(doc: Any, *keys: str) -> Any:
    """doc[k1][k2]... or None where any level is missing or not an object."""
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def fmt_value(value: Any) -> str:
    """Compact text for any JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def h(value: Any) -> str:
    """HTML-escaped text of any value (strings as they are, other values as compact JSON)."""
    return html.escape(value if isinstance(value, str) else fmt_value(value), quote=True)


def inline_md(text: str) -> str:
    """Escape a plan cell, then show `code` spans as <code>; nothing else of markdown is interpreted."""
    out = []
    position = 0
    for match in re.finditer(r"`([^`]+)`", text):
        out.append(html.escape(text[position:match.start()], quote=True))
        out.append("<code>%s</code>" % breakable(match.group(1)))
        position = match.end()
    out.append(html.escape(text[position:], quote=True))
    return "".join(out)


def cuda_version(value: Any) -> str:
    """CUDA's integer versions: 13000 -> 13.0, 12080 -> 12.8; 0 means no driver."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "unknown" if value is None else fmt_value(value)
    if value <= 0:
        return "none (%d)" % value
    major, rest = divmod(value, 1000)
    minor, patch = divmod(rest, 10)
    return "%d.%d.%d" % (major, minor, patch) if patch else "%d.%d" % (major, minor)


def fmt_duration(ms: Any) -> str:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return "\u2014"
    if ms < 1:
        return "%.3f ms" % ms
    if ms < 1000:
        return "%.1f ms" % ms
    return "%.2f s" % (ms / 1000.0)


def breakable(text: str) -> str:
    """Escaped text with optional line breaks (<wbr>) after dots, slashes and underscores and inside CamelCase,
    so long test and API names wrap at word joints in narrow columns."""
    pieces = re.split(r"(?<=[./_,])|(?<=[a-z0-9])(?=[A-Z])", text)
    return "<wbr>".join(html.escape(p, quote=True) for p in pieces)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    return "%d %s" % (n, word if n == 1 else (many or word + "s"))


def flatten(doc: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """Nested objects as dotted keys; arrays and scalars stay values."""
    if not isinstance(doc, dict):
        return [(prefix, doc)] if prefix else []
    rows: List[Tuple[str, Any]] = []
    for key in sorted(doc):
        name = "%s.%s" % (prefix, key) if prefix else str(key)
        value = doc[key]
        if isinstance(value, dict) and value:
            rows.extend(flatten(value, name))
        else:
            rows.append((name, value))
    return rows


# ------------------------------------------------------------------------------------------------
# Reading input files
# ------------------------------------------------------------------------------------------------

def read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError("%s: cannot read %s: %s" % (path, what, e.strerror or e))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("%s: %s is not UTF-8 text (byte %d: %s)" % (path, what, e.start, e.reason))


def read_json(path: Path, what: str) -> Any:
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError("%s: invalid JSON in %s: %s (line %d, column %d)" % (path, what, e.msg, e.lineno, e.colno))
    except (ValueError, RecursionError) as e:
        raise InputError("%s: invalid JSON in %s: %s" % (path, what, e))


def check_schema(doc: Any, path: Path, schema: str, what: str) -> None:
    if not isinstance(doc, dict):
        raise InputError("%s: %s must be a JSON object, found %s" % (path, what, type_name(doc)))
    found = doc.get("schema")
    if found is not None and found != schema:
        raise InputError("%s: %s has schema %r, expected %r" % (path, what, found, schema))
    version = doc.get("schema_version")
    if version is not None and str(version).split(".")[0] != SUPPORTED_SCHEMA_MAJOR:
        raise InputError("%s: %s schema version %s is not supported (this generator reads %s %s.x)"
                         % (path, what, version, schema, SUPPORTED_SCHEMA_MAJOR))


def check_member(doc: Dict[str, Any], key: str, kind: type, path: Path, what: str) -> Any:
    """doc[key] when it is missing, null or of the given JSON type; otherwise an input error."""
    value = doc.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) and kind is not bool):
        want = {dict: "an object", list: "an array", str: "a string"}.get(kind, kind.__name__)
        raise InputError("%s: \"%s\" in %s must be %s or null, found %s" % (path, key, what, want, type_name(value)))
    return value


def new_test(ctest_name: str, gtest_name: Optional[str]) -> Dict[str, Any]:
    family, variant, gname = split_ctest_name(ctest_name, gtest_name)
    return {
        "ctest_name": ctest_name,
        "family": family,
        "variant": variant,
        "gtest_name": gname,
        "run": None,
        "status": "notrun",
        "skip_reason": None,
        "skip_location": None,
        "failures": [],
        "claims": [],
        "observations": {},
        "baseline": [],
        "mutation": None,
        "mutation_kind": None,
        "watchdog": [],
        "watchdog_summary": None,
        "invalid_checks": [],
        "invalid_checks_from_xml": False,
        "duration_ms": None,
        "setup_ms": None,
        "instrument": None,
        "device": None,
        "timeline": None,
        "block_chart": None,
        "source_file": None,
        "source_line": None,
        "xml_file": None,
        "observation_file": None,
        "plan_ids": [],
        "plan_rows": [],
        "planned_only": False,
        "notes": [],
    }


def split_ctest_name(ctest: str, gtest: Optional[str]) -> Tuple[str, str, str]:
    """(family, variant, gtest name). family is the first dotted component of the ctest name; the
    variant is what stands between it and Suite.Test (ptds, an ENV_VARIANT name, or both)."""
    family = ctest.split(".", 1)[0]
    if gtest and ctest.endswith("." + gtest) and len(ctest) > len(gtest) + 1:
        prefix = ctest[: -len(gtest) - 1]
    elif gtest and ctest == gtest:
        return family, "", gtest
    else:
        parts = ctest.split(".")
        if len(parts) >= 3:
            prefix, gtest = ".".join(parts[:-2]), ".".join(parts[-2:])
        else:
            return family, "", gtest or ctest
    variant = prefix.split(".", 1)[1] if "." in prefix else ""
    return family, variant, gtest


def split_skip_message(message: str) -> Tuple[Optional[str], str]:
    """GoogleTest 1.12 writes "file:line\\nreason"; returns (location, reason)."""
    text = message.strip("\n")
    first, _, rest = text.partition("\n")
    if re.fullmatch(r"\S.*:\d+", first.strip()):
        return first.strip(), rest.strip()
    return None, text.strip()


def parse_gtest_xml(path: Path, stem: str) -> List[Dict[str, Any]]:
    try:
        root = ET.parse(str(path)).getroot()
    except ET.ParseError as e:
        raise InputError("%s: invalid XML: %s" % (path, e))
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror or e))
    if root.tag not in ("testsuites", "testsuite"):
        raise InputError("%s: not a GoogleTest XML file (root element <%s>)" % (path, root.tag))
    cases = list(root.iter("testcase"))
    if not cases:
        test = new_test(stem, None)
        test["xml_file"] = str(path)
        test["notes"].append("the XML file holds no <testcase> (the filter matched no test?)")
        return [test]
    tests = []
    for case in cases:
        classname = case.get("classname") or ""
        name = case.get("name") or ""
        gname = "%s.%s" % (classname, name) if classname else name
        ctest = stem if len(cases) == 1 else "%s.%s" % (stem.split(".", 1)[0], gname)
        test = new_test(ctest, gname)
        test["xml_file"] = str(path)
        test["source_file"] = case.get("file")
        test["source_line"] = case.get("line")

        failures = []
        for child in case:
            if child.tag in ("failure", "error"):
                message = child.get("message") or ""
                body = child.text or ""
                text = body if len(body.strip()) >= len(message.strip()) else message
                failures.append(text.strip("\n") or "(%s without a message)" % child.tag)
        skipped = case.find("skipped")
        if failures:
            test["status"] = "failed"
        elif skipped is not None or case.get("result") == "skipped":
            test["status"] = "skipped"
        elif case.get("status") == "notrun" or case.get("result") == "suppressed":
            test["status"] = "notrun"
            test["notes"].append("GoogleTest did not run it (disabled)")
        else:
            test["status"] = "passed"
        test["failures"] = failures
        if test["status"] == "skipped":
            message = ""
            if skipped is not None:
                message = skipped.get("message") or skipped.text or ""
            location, reason = split_skip_message(message)
            test["skip_location"] = location
            test["skip_reason"] = reason or None

        try:
            test["duration_ms"] = float(case.get("time") or "") * 1000.0
        except ValueError:
            pass

        properties: Dict[str, str] = {}
        for key, value in case.attrib.items():
            if key not in TESTCASE_ATTRIBUTES:
                properties[key] = value
        for element in case.iter("property"):
            key = element.get("name")
            if key:
                properties[key] = element.get("value") or ""
        apply_properties(test, properties)
        tests.append(test)
    return tests


def apply_properties(test: Dict[str, Any], properties: Dict[str, str]) -> None:
    """RecordProperty values: claim, observed values, baseline verdicts, mutation, and the evidence of gates
    (the watchdog summary, the last invalid check; the observation file holds all of it)."""
    if properties.get("catalog_id"):
        test["claims"] = [{"id": properties.get("catalog_id"), "kind": properties.get("verdict_kind"),
                           "source": properties.get("doc_source")}]
    if properties.get("mutation"):
        test["mutation"] = properties["mutation"]
    if properties.get("mutation_kind"):
        test["mutation_kind"] = properties["mutation_kind"]
    if properties.get("watchdog"):
        test["watchdog_summary"] = properties["watchdog"]
    if properties.get("invalid_check"):
        test["invalid_checks"] = [properties["invalid_check"]]
        test["invalid_checks_from_xml"] = True
    for key, value in properties.items():
        if key in CLAIM_PROPERTIES or key in EVIDENCE_PROPERTIES:
            continue
        if key.startswith("baseline."):
            rest = key[len("baseline."):]
            ident, _, bkey = rest.partition(".")
            test["baseline"].append({"id": ident, "key": bkey, "status": value})
            continue
        test["observations"][key] = value


def checked_list(doc: Dict[str, Any], key: str, item_type: type, item_name: str, path: Path) -> List[Any]:
    """The list doc[key] (empty when absent), every entry of it of item_type, else an InputError."""
    items = check_member(doc, key, list, path, "the observation") or []
    for entry in items:
        if not isinstance(entry, item_type):
            raise InputError("%s: every entry of \"%s\" must be %s" % (path, key, item_name))
    return items


def merge_observation(test: Dict[str, Any], doc: Dict[str, Any], path: Path) -> None:
    """The observation file's typed values replace the XML's string properties."""
    test["observation_file"] = str(path)
    claims = check_member(doc, "claims", list, path, "the observation")
    if claims:
        normalized = []
        for claim in claims:
            if not isinstance(claim, dict):
                raise InputError("%s: every entry of \"claims\" must be an object" % path)
            normalized.append({"id": claim.get("id"), "kind": claim.get("kind"), "source": claim.get("source")})
        test["claims"] = normalized
    observations = check_member(doc, "observations", dict, path, "the observation")
    if observations:
        test["observations"] = observations
    baseline = checked_list(doc, "baseline", dict, "an object", path)
    if baseline:
        test["baseline"] = baseline
    if doc.get("mutation"):
        test["mutation"] = doc.get("mutation")
    if doc.get("mutation_kind"):
        test["mutation_kind"] = check_member(doc, "mutation_kind", str, path, "the observation")
    # Schema 1.3: gates whose watchdog fired, and gate checks that proved nothing. Older files have neither.
    watchdog = checked_list(doc, "watchdog", dict, "an object", path)
    if watchdog:
        test["watchdog"] = watchdog
    invalid = checked_list(doc, "invalid_checks", str, "a string", path)
    if invalid:
        test["invalid_checks"] = invalid
        test["invalid_checks_from_xml"] = False
    duration = doc.get("duration_ms")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        test["duration_ms"] = float(duration)
    setup = doc.get("setup_ms")
    if isinstance(setup, (int, float)) and not isinstance(setup, bool):
        test["setup_ms"] = float(setup)
    test["instrument"] = check_member(doc, "instrument", dict, path, "the observation")
    test["device"] = check_member(doc, "device", dict, path, "the observation")
    test["timeline"] = check_member(doc, "timeline", dict, path, "the observation")
    # Schema 1.5: per-block records of the scheduling tests, drawn as SM x time.
    test["block_chart"] = check_member(doc, "block_chart", dict, path, "the observation")
    outcome = doc.get("outcome")
    if test["xml_file"] is None:
        # The fixture wrote its record, then the process ended before GoogleTest wrote the XML.
        test["status"] = "failed" if outcome == "failed" else "notrun"
        test["notes"].append("no GoogleTest XML (the test process ended before writing it?); the observation "
                             "file says %s" % fmt_value(outcome))
    elif isinstance(outcome, str) and outcome != test["status"] and test["status"] != "notrun":
        test["notes"].append("the observation file says %s, the XML says %s" % (outcome, test["status"]))


def load_run(run_dir: Path) -> Dict[str, Any]:
    if not run_dir.exists():
        raise InputError("%s: no such run folder" % run_dir)
    if not run_dir.is_dir():
        raise InputError("%s: not a directory (give a run folder such as build/results/latest)" % run_dir)
    env_path = run_dir / "env.json"
    if not env_path.is_file():
        raise InputError("%s: no env.json in this folder; is it a streamcheck run folder "
                         "(e.g. build/results/latest)?" % run_dir)
    env = read_json(env_path, "env.json")
    check_schema(env, env_path, ENV_SCHEMA, "env.json")
    for key in ("run", "streamcheck", "build", "host", "cuda", "environment", "gpu", "tracing", "instruments"):
        check_member(env, key, dict, env_path, "env.json")
    check_member(env, "gpu_unavailable_reason", str, env_path, "env.json")

    run_id = dig(env, "run", "id")
    run_id = str(run_id) if run_id else run_dir.resolve().name
    run = {"dir": str(run_dir), "id": run_id, "env": env, "tests": {}, "instruments": {}, "notes": []}

    tests: Dict[str, Dict[str, Any]] = run["tests"]
    gtest_dir = run_dir / "gtest"
    xml_count = 0
    if gtest_dir.is_dir():
        for path in sorted(p for p in gtest_dir.rglob("*.xml") if p.is_file()):
            xml_count += 1
            stem = path.relative_to(gtest_dir).as_posix()[: -len(".xml")]
            for test in parse_gtest_xml(path, stem):
                test["run"] = run_id
                tests[test["ctest_name"]] = test

    obs_dir = run_dir / "observations"
    if obs_dir.is_dir():
        for path in sorted(p for p in obs_dir.glob("*.json") if p.is_file()):
            doc = read_json(path, "observation")
            check_schema(doc, path, OBSERVATION_SCHEMA, "observation")
            ctest = doc.get("ctest_name")
            ctest = ctest if isinstance(ctest, str) and ctest else path.stem
            test = tests.get(ctest)
            if test is None:
                gname = doc.get("test") if isinstance(doc.get("test"), str) else None
                test = new_test(ctest, gname)
                test["run"] = run_id
                tests[ctest] = test
            merge_observation(test, doc, path)

    instruments: Dict[str, Any] = run["instruments"]
    for ident, record in sorted((env.get("instruments") or {}).items()):
        if not isinstance(record, dict):
            raise InputError("%s: instruments.%s in env.json must be an object" % (env_path, ident))
        instruments[str(ident)] = dict(record)
    inst_dir = run_dir / "instruments"
    if inst_dir.is_dir():
        for path in sorted(p for p in inst_dir.glob("*.json") if p.is_file()):
            doc = read_json(path, "instrument record")
            if not isinstance(doc, dict):
                raise InputError("%s: an instrument record must be a JSON object" % path)
            check_member(doc, "figures", dict, path, "the instrument record")
            ident = doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else path.stem
            instruments[ident] = doc

    counted = dig(env, "run", "gtest_xml_files")
    if isinstance(counted, int) and not isinstance(counted, bool) and counted != xml_count:
        run["notes"].append("env.json counts %d GoogleTest XML file(s); %d found" % (counted, xml_count))
    if dig(env, "run", "finished_utc") is None:
        run["notes"].append("run %s has no finish time: its finish step (streamcheck.run.finish) did not run; "
                            "the run was interrupted or is still running" % run_id)
    return run


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


def planned_tests(cell: str) -> List[str]:
    names = [n.strip() for n in re.findall(r"`([^`]+)`", cell) if n.strip()]
    if names:
        return names
    if plain(cell).lower() in DASHES:
        return []
    tokens = [t.strip() for t in re.split(r"[,;]", plain(cell))]
    return [t for t in tokens if re.fullmatch(r"[A-Za-z_][\w/]*\.[\w/*?]+", t)]


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
    found: Dict[str, Any] = {"arch": arch, "path": None, "version": None, "entries": {}, "note": None}
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
    return found


def same_value(a: Any, b: Any) -> bool:
    """JSON equality as the fixtures compare: a boolean never equals a number."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def test_matches(name: str, test: Dict[str, Any]) -> bool:
    family = test["family"]
    candidates = {test["gtest_name"], test["ctest_name"]}
    if test["ctest_name"].startswith(family + "."):
        candidates.add(test["ctest_name"][len(family) + 1:])
    if any(ch in name for ch in "*?["):
        return any(fnmatch.fnmatchcase(c, name) for c in candidates)
    return name in candidates


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
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    if len(results) > 1 or results and missing:
        notes.append(", ".join("%d %s" % (counts[s], TEST_LABEL[s]) for s in TEST_ORDER if s in counts)
                     + (" of %d planned" % (len(results) + len(missing)) if missing else ""))
    for t in results:
        if t["status"] == "failed" and t["failures"]:
            first = t["failures"][0].strip().splitlines()
            notes.append("%s: %s" % (label_of(t), " ".join(first[1:2] or first[:1])))
    reasons = sorted({("not judged: " if is_unjudged(t) else "skipped: ") + (t["skip_reason"] or "(no reason given)")
                      for t in results if t["status"] == "skipped"})
    notes.extend(reasons)
    if missing:
        notes.append("no result for %s" % ", ".join(missing))
    notes.extend(differs)
    return notes


def label_of(test: Dict[str, Any]) -> str:
    return "%s [%s]" % (test["gtest_name"], test["variant"]) if test["variant"] else test["gtest_name"]


def is_unjudged(test: Dict[str, Any]) -> bool:
    """A skip of the baseline rule: observed values recorded but not judged (no baseline file or entry)."""
    return test["status"] == "skipped" and (test["skip_reason"] or "").startswith(UNJUDGED_PREFIX)


def baseline_differences(tests: Iterable[Dict[str, Any]]) -> Dict[str, List[str]]:
    """catalog ID -> descriptions of baseline entries whose value differs."""
    found: Dict[str, List[str]] = {}
    for t in tests:
        for entry in t["baseline"]:
            status = entry.get("status")
            if status in ("differs", "differs-gating"):
                text = "%s/%s observed %s, baseline %s%s (%s)" % (
                    fmt_value(entry.get("id")), fmt_value(entry.get("key")), fmt_value(entry.get("observed")),
                    fmt_value(entry.get("expected")), ", gating" if status == "differs-gating" else "", label_of(t))
                found.setdefault(str(entry.get("id")), []).append(text)
    return found


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
                found = [t for t in family_tests if test_matches(name, t)]
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


# ------------------------------------------------------------------------------------------------
# Merging runs
# ------------------------------------------------------------------------------------------------

def merge_key(env: Dict[str, Any], field: str) -> Any:
    if field == "gpu.uuid":
        return dig(env, "gpu", "uuid")
    return dig(env, *field.split("."))


def check_same_environment(runs: Sequence[Dict[str, Any]]) -> None:
    first = runs[0]
    problems = []
    for other in runs[1:]:
        differing = []
        for field in MERGE_FIELDS:
            a, b = merge_key(first["env"], field), merge_key(other["env"], field)
            if a != b:
                differing.append("%s (%s vs %s)" % (field, json.dumps(a), json.dumps(b)))
        if differing:
            problems.append("%s and %s differ in %s" % (first["dir"], other["dir"], ", ".join(differing)))
    if problems:
        raise InputError("refusing to mix environments: " + "; ".join(problems))


def merge_runs(runs: Sequence[Dict[str, Any]]) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    tests: Dict[str, Dict[str, Any]] = {}
    instruments: Dict[str, Any] = {}
    for run in runs:
        for name, test in run["tests"].items():
            older = tests.get(name)
            if older is not None:
                test["notes"].append("also in run %s (%s); the later run is shown" % (older["run"], older["status"]))
            tests[name] = test
        for ident, record in run["instruments"].items():
            instruments[ident] = dict(record, run=run["id"])
    return tests, instruments


def totals_of(tests: Dict[str, Dict[str, Any]]) -> Dict[str, int]:
    totals = {"tests": len(tests), "passed": 0, "failed": 0, "skipped": 0, "notrun": 0}
    for t in tests.values():
        totals[t["status"]] += 1
    return totals


# ------------------------------------------------------------------------------------------------
# Timelines (observation schema 1.1 "timeline"): one inline SVG per test, computed here
# ------------------------------------------------------------------------------------------------

TL_WIDTH = 900             # the drawing's width in px, labels included
TL_LABEL_W = 112           # lane labels on the left
TL_RIGHT = 16              # room for the last tick label
TL_PLOT_W = TL_WIDTH - TL_LABEL_W - TL_RIGHT
TL_AXIS_H = 22
TL_ROW_H = 16              # one row of items or NVTX ranges
TL_BLOCK_H = 3             # one row of per-block bars (plus 1 px gap)
TL_HOST_H = 20
TL_MAX_ITEMS = 200         # items drawn per test
TL_MAX_LANES = 48          # stream lanes drawn per test
TL_MAX_BLOCK_ROWS = 32     # block rows under the kernels of one lane
TL_MAX_BLOCKS = 2000       # block bars drawn per test
TL_MAX_RANGES = 200
TL_MAX_RANGE_ROWS = 10
TL_MAX_HOST = 200
TL_ZOOM_BELOW = 0.25       # a second, zoomed drawing when the items fill less than this share of the span
TL_CHAR_W = 6.1            # width of one character at the drawing's 10 px monospace font

TL_KIND_STYLE = {          # fill, stroke
    "kernel": ("#8cb8f2", "#1f5fae"),
    "memcpy": ("#8fd6a8", "#1a7f4e"),
    "memset": ("#f5c27a", "#a2630f"),
}
TL_OTHER_STYLE = ("#d0d7de", "#57606a")
TL_BLOCK_FILL = "#0b3d91"
TL_RANGE_STYLE = ("#e4d8fb", "#6639ba")
TL_HOST_COLOR = "#cf222e"
TL_LANE_CHARS = 17         # characters of a lane's title shown left of the plot (the tooltip has all of it)

# Copies and memsets are drawn on lanes of their own, after every kernel lane: one per (stream, direction).
TL_COPY_KINDS = ("memcpy", "memset")
TL_LANE_SEP = " \u00b7 "
TL_DIRECTION_ORDER = {"HtoD": 0, "DtoH": 1, "DtoD": 2}   # then any other copy kind, then memset


def as_ns(value: Any) -> Optional[int]:
    """A timestamp or duration in ns as an int; None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return int(round(value))
    return value


def fmt_ns(ns: float, signed: bool = False, exact: bool = False) -> str:
    """A duration (or an offset, with signed=True) in the unit that suits it: 850 ns, 12.3 µs, 228.074 ms;
    exact=True keeps every nanosecond (+228.074315 ms)."""
    sign = ("+" if ns >= 0 else "\u2212") if signed else ("\u2212" if ns < 0 else "")
    value = abs(ns)
    for limit, divisor, unit in ((1e3, 1.0, "ns"), (1e6, 1e3, "\u00b5s"), (1e9, 1e6, "ms")):
        if value < limit:
            break
    else:
        divisor, unit = 1e9, "s"
    scaled = value / divisor
    if unit == "ns":
        return "%s%d ns" % (sign, round(scaled))
    if exact:
        digits = {"\u00b5s": 3, "ms": 6, "s": 9}[unit]
    else:
        digits = 3 if signed or scaled < 10 else 2 if scaled < 100 else 1
    return "%s%.*f %s" % (sign, digits, scaled, unit)


def fmt_bytes(n: Any) -> str:
    """8388608 -> "8,388,608 B (8 MiB)"."""
    if isinstance(n, bool) or not isinstance(n, int):
        return fmt_value(n)
    for size, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= size:
            return "%s B (%.4g %s)" % (format(n, ","), n / size, unit)
    return "%s B" % format(n, ",")


def fmt_pct(part: float, whole: float) -> str:
    """part / whole as a percentage with at most one decimal, "50 %", "33.3 %"; never rounded to 0 or 100
    when it is not."""
    value = 100.0 * part / whole
    if 0 < value < 0.05:
        return "<0.1 %"
    if 99.95 <= value < 100:
        return ">99.9 %"
    text = "%.1f" % value
    return "%s %%" % (text[:-2] if text.endswith(".0") else text)


def fmt_rate(n_bytes: int, ns: int) -> str:
    """Bytes over nanoseconds in GB/s (10^9 bytes per second, which is bytes per ns)."""
    rate = n_bytes / float(ns)
    if rate >= 100:
        return "%.0f GB/s" % rate
    if rate >= 10:
        return "%.1f GB/s" % rate
    return "%.3g GB/s" % rate


def timeline_state(test: Dict[str, Any]) -> str:
    """'none' (no timeline object), 'off' (tracing off), 'empty' (on, nothing recorded) or 'drawn'."""
    tl = test.get("timeline")
    if not isinstance(tl, dict):
        return "none"
    if dig(tl, "tracing", "enabled") is not True:
        return "off"
    model = timeline_model(tl)
    return "drawn" if model["items"] or model["ranges"] else "empty"


def entries_of(tl: Dict[str, Any], key: str) -> Tuple[List[Dict[str, Any]], int]:
    """The well-formed entries of tl[key] (objects with a numeric start_ns), and how many were not."""
    raw = tl.get(key)
    if not isinstance(raw, list):
        return [], 0 if raw is None else 1
    good, bad = [], 0
    for entry in raw:
        if isinstance(entry, dict) and as_ns(entry.get("start_ns")) is not None:
            good.append(entry)
        else:
            bad += 1
    return good, bad


def copy_direction(item: Dict[str, Any]) -> str:
    """The copy lane's word for a memcpy or memset item: its copy kind (HtoD, DtoH, DtoD, ...), "memset",
    or "memcpy" where the file names no copy kind."""
    if item["kind"] == "memset":
        return "memset"
    kind = item["raw"].get("copy_kind")
    if kind is None or kind == "":
        return "memcpy"
    return kind if isinstance(kind, str) else fmt_value(kind)


def merge_intervals(spans: Iterable[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The union of [start, end) intervals as sorted, disjoint intervals; empty intervals are dropped."""
    merged: List[Tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def covered_ns(start: int, end: int, union: Sequence[Tuple[int, int]], union_starts: Sequence[int]) -> int:
    """How much of [start, end) the disjoint, sorted intervals of union cover."""
    total = 0
    index = max(bisect.bisect_right(union_starts, start) - 1, 0)
    while index < len(union) and union[index][0] < end:
        a, b = union[index]
        total += max(0, min(b, end) - max(a, start))
        index += 1
    return total


def timeline_model(tl: Dict[str, Any]) -> Dict[str, Any]:
    """Items, ranges and host events with integer times, the span, and what is drawn of them.
    Times stay integers (CUPTI's are ~1.8e18 ns, beyond a double's exact range) until t0 is subtracted.
    Lanes: one per stream for its kernels (and items of any other kind), then one per (stream, copy direction)
    for its memcpy and memset items (observation schema 1.4 adds their channel), so that a copy is drawn under
    the kernels it overlaps. Each copy and memset also gets the time a kernel of the test overlapped it."""
    raw_items, bad_items = entries_of(tl, "items")
    raw_ranges, bad_ranges = entries_of(tl, "ranges")
    raw_host, bad_host = entries_of(tl, "host_events")

    items = []
    for entry in raw_items:
        start = as_ns(entry["start_ns"])
        end = as_ns(entry.get("end_ns"))
        items.append({"raw": entry, "s": start, "e": end if end is not None and end >= start else start,
                      "kind": str(entry.get("kind") or "?"), "stream": fmt_value(entry.get("stream"))
                      if entry.get("stream") not in (None, "") else "(no stream)",
                      "label": entry.get("label") if isinstance(entry.get("label"), str) else ""})
    ranges = []
    for entry in raw_ranges:
        start = as_ns(entry["start_ns"])
        end = as_ns(entry.get("end_ns"))
        is_open = end is None or end == 0
        ranges.append({"raw": entry, "s": start, "e": None if is_open else max(end, start), "open": is_open,
                       "name": fmt_value(entry.get("name")) if entry.get("name") is not None else ""})
    host = []
    for e in raw_host:
        start = as_ns(e["start_ns"])
        end = as_ns(e.get("end_ns"))
        host.append({"raw": e, "s": start,
                     # An interval (a host function, a latch's wait) when it has a later end; a moment otherwise.
                     "e": end if end is not None and end > start else None,
                     "label": e.get("label") if isinstance(e.get("label"), str)
                     else "" if e.get("label") is None else fmt_value(e.get("label"))})

    starts = [x["s"] for x in items] + [x["s"] for x in ranges] + [x["s"] for x in host]
    t0 = min(starts) if starts else 0
    ends = [x["e"] for x in items] + [x["e"] for x in ranges if not x["open"]] + \
        [x["e"] for x in host if x["e"] is not None] + starts
    t1 = max(ends) if ends else 0

    # Copies and memsets: the part of each one's interval that any kernel of the test overlapped.
    kernels = merge_intervals((it["s"], it["e"]) for it in items if it["kind"] == "kernel")
    kernel_starts = [a for a, _ in kernels]
    copies = {"count": 0, "time_ns": 0, "overlap_ns": 0}
    for item in items:
        item["lane"] = (item["stream"], copy_direction(item) if item["kind"] in TL_COPY_KINDS else "")
        if item["kind"] in TL_COPY_KINDS:
            item["overlap_ns"] = covered_ns(item["s"], item["e"], kernels, kernel_starts)
            copies["count"] += 1
            copies["time_ns"] += item["e"] - item["s"]
            copies["overlap_ns"] += item["overlap_ns"]

    # What is drawn: the first items by start time, in at most TL_MAX_LANES lanes.
    items.sort(key=lambda x: (x["s"], x["e"]))
    opened: List[Tuple[str, str]] = []
    opened_set: set = set()
    refused: set = set()
    drawn = []
    for item in items:
        if len(drawn) >= TL_MAX_ITEMS:
            break
        if item["lane"] not in opened_set:
            if len(opened) >= TL_MAX_LANES:
                refused.add(item["lane"])
                continue
            opened.append(item["lane"])
            opened_set.add(item["lane"])
        drawn.append(item)
    # Lane order: the kernel lanes by their stream's first item, then the copy lanes, by stream in the same
    # order and, within a stream, HtoD, DtoH, DtoD, any other copy kind, memset.
    stream_rank: Dict[str, int] = {}
    for stream, _ in opened:
        stream_rank.setdefault(stream, len(stream_rank))

    def lane_order(key: Tuple[str, str]) -> Tuple[int, int, int, str, int]:
        stream, direction = key
        if not direction:
            return 0, stream_rank[stream], 0, "", 0
        rank = TL_DIRECTION_ORDER.get(direction, 4 if direction == "memset" else 3)
        return 1, stream_rank[stream], rank, direction, opened.index(key)

    lanes = []
    for stream, direction in sorted(opened, key=lane_order):
        lanes.append({"key": (stream, direction), "stream": stream, "direction": direction,
                      "name": stream + TL_LANE_SEP + direction if direction else stream})
    drawn_streams = {stream for stream, _ in opened}
    ranges.sort(key=lambda x: (x["s"], -(x["e"] if x["e"] is not None else t1)))
    host.sort(key=lambda x: x["s"])
    return {"t0": t0, "t1": t1, "items": items, "drawn": drawn, "lanes": lanes,
            "lanes_refused": len(refused), "streams_refused": len({s for s, _ in refused} - drawn_streams),
            "copies": copies, "ranges": ranges, "host": host, "bad": bad_items + bad_ranges + bad_host}


def pack_rows(spans: Sequence[Tuple[float, float]], max_rows: int) -> List[Optional[int]]:
    """A row for each (start, end), in the given order, so that spans in one row do not overlap; None
    where more than max_rows would be needed."""
    row_ends: List[float] = []
    rows: List[Optional[int]] = []
    for start, end in spans:
        for number, last in enumerate(row_ends):
            if start >= last:
                row_ends[number] = max(end, start)
                rows.append(number)
                break
        else:
            if len(row_ends) < max_rows:
                row_ends.append(max(end, start))
                rows.append(len(row_ends) - 1)
            else:
                rows.append(None)
    return rows


def tick_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about six ticks over span ns."""
    raw = max(span / 6.0, 1e-9)
    power = 10.0 ** int(("%e" % raw).split("e")[1])
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def axis_unit(span: float) -> Tuple[float, str]:
    if span >= 2e9:
        return 1e9, "s"
    if span >= 2e6:
        return 1e6, "ms"
    if span >= 2e3:
        return 1e3, "\u00b5s"
    return 1.0, "ns"


def fits(text: str, width: float) -> bool:
    return bool(text) and len(text) * TL_CHAR_W + 6 <= width


def svg_text(x: float, y: float, text: str, extra: str = "") -> str:
    return '<text x="%.1f" y="%.1f"%s>%s</text>' % (x, y, extra, h(text))


def item_tooltip(item: Dict[str, Any], t0: int) -> str:
    raw = item["raw"]
    lines = ["%s \u2014 %s" % (item["label"] or "(unlabelled)", item["kind"]),
             "stream %s%s" % (item["stream"], " (CUPTI stream %s)" % fmt_value(raw["stream_id"])
                              if raw.get("stream_id") is not None else ""),
             "start %s, duration %s" % (fmt_ns(item["s"] - t0, signed=True, exact=True),
                                         fmt_ns(item["e"] - item["s"]))]
    duration = item["e"] - item["s"]
    if item["kind"] in TL_COPY_KINDS or "bytes" in raw:
        parts = []
        if raw.get("bytes") is not None:
            parts.append(fmt_bytes(raw.get("bytes")))
        if raw.get("copy_kind"):
            parts.append(fmt_value(raw.get("copy_kind")))
        if item["kind"] == "memset" and raw.get("dst_kind"):
            parts.append("memory %s" % fmt_value(raw.get("dst_kind")))  # a memset has no source
        elif raw.get("src_kind") or raw.get("dst_kind"):
            parts.append("memory %s \u2192 %s" % (fmt_value(raw.get("src_kind") or "?"),
                                                  fmt_value(raw.get("dst_kind") or "?")))
        if parts:
            lines.append(", ".join(parts))
    # Observation schema 1.4: the hardware channel CUPTI reports (absent from older files and when unknown).
    channel = [fmt_value(raw.get(key)) for key in ("channel_type", "channel_id") if raw.get(key) not in (None, "")]
    if channel:
        lines.append("channel %s" % " ".join(channel))
    if item["kind"] in TL_COPY_KINDS:
        n_bytes = raw.get("bytes")
        if isinstance(n_bytes, int) and not isinstance(n_bytes, bool) and n_bytes >= 0 and duration > 0:
            lines.append("bandwidth %s" % fmt_rate(n_bytes, duration))
        if "overlap_ns" in item:
            if duration > 0:
                lines.append("overlapped by kernels: %s of its interval (%s of %s)" % (
                    fmt_pct(item["overlap_ns"], duration), fmt_ns(item["overlap_ns"]), fmt_ns(duration)))
            else:
                lines.append("overlapped by kernels: n/a (zero duration)")
    if raw.get("name"):
        name = fmt_value(raw.get("name"))
        lines.append("name %s" % (name if len(name) <= 160 else name[:157] + "..."))
    if isinstance(raw.get("blocks"), list) and raw.get("blocks"):
        lines.append("%s recorded" % plural(len(raw["blocks"]), "block"))
    if raw.get("correlation_id") is not None:
        lines.append("correlation %s" % fmt_value(raw.get("correlation_id")))
    return "\n".join(lines)


def lane_title(title: str, suffix: str = "") -> str:
    """A lane's title as shown left of the plot: at most TL_LANE_CHARS characters; a copy lane's suffix
    (" · HtoD") is kept whole and its stream's name shortened instead."""
    if len(title) + len(suffix) <= TL_LANE_CHARS:
        return title + suffix
    room = TL_LANE_CHARS - len(suffix) - 1
    if room < 1:
        return (title + suffix)[:TL_LANE_CHARS - 1] + "\u2026"
    return title[:room] + "\u2026" + suffix


def timeline_svg(model: Dict[str, Any], w0: int, w1: int, caption: str) -> Tuple[str, int]:
    """One drawing of the window [w0, w1] (ns on the test's clock); x = (t - w0) * scale.
    Returns the SVG and the number of block bars that did not fit."""
    t0 = model["t0"]
    span = max(w1 - w0, 1)
    scale = TL_PLOT_W / float(span)
    left, right = float(TL_LABEL_W), float(TL_LABEL_W + TL_PLOT_W)

    def x_of(t: int) -> float:
        return left + (t - w0) * scale

    body: List[str] = []
    lanes_out: List[str] = []
    y = float(TL_AXIS_H)
    blocks_left = [TL_MAX_BLOCKS]
    blocks_skipped = 0

    def lane(title: str, tooltip: str, height: float, shade: bool, suffix: str = "") -> float:
        nonlocal y
        top = y
        if shade:
            lanes_out.append('<rect x="0" y="%.1f" width="%d" height="%.1f" fill="#f6f8fa"/>' % (top, TL_WIDTH, height))
        shown = lane_title(title, suffix)
        lanes_out.append('<g class="lane-label"><title>%s</title>%s</g>' % (
            h(tooltip), svg_text(4, top + min(height, TL_ROW_H + 4) / 2 + 3.5, shown,
                                 ' font-weight="600" fill="#24292f"')))
        lanes_out.append('<line x1="0" x2="%d" y1="%.1f" y2="%.1f" stroke="#d0d7de"/>'
                         % (TL_WIDTH, top + height, top + height))
        y += height
        return top

    # Lanes: a stream's kernels (item rows, then block rows under them); after all of those, the copy lanes,
    # one per stream and direction, on the same time axis.
    shade = False
    for entry in model["lanes"]:
        name, direction = entry["stream"], entry["direction"]
        mine = [it for it in model["drawn"] if it["lane"] == entry["key"]]
        rows = pack_rows([(it["s"], it["e"]) for it in mine], 1000)
        n_rows = max(r for r in rows if r is not None) + 1 if mine else 1
        block_plan = []
        n_block_rows = 0
        for it in mine:
            blocks = it["raw"].get("blocks")
            if it["kind"] != "kernel" or not isinstance(blocks, list) or not blocks:
                continue
            good = []
            for index, b in enumerate(blocks):
                bs, be = as_ns(b.get("t0_ns")) if isinstance(b, dict) else None, \
                    as_ns(b.get("t1_ns")) if isinstance(b, dict) else None
                if bs is None:
                    blocks_skipped += 1
                    continue
                good.append((bs, be if be is not None and be >= bs else bs, index, b))
            good.sort(key=lambda g: (g[0], g[1]))
            block_rows = pack_rows([(g[0], g[1]) for g in good], TL_MAX_BLOCK_ROWS)
            block_plan.append((it, good, block_rows, len(blocks)))
            used = [r for r in block_rows if r is not None]
            n_block_rows = max(n_block_rows, max(used) + 1 if used else 0)
        height = n_rows * TL_ROW_H + n_block_rows * (TL_BLOCK_H + 1) + (4 if n_block_rows else 0) + 4
        ids = sorted({fmt_value(it["raw"].get("stream_id")) for it in mine if it["raw"].get("stream_id") is not None})
        what = ""
        if direction:
            what = ", memsets" if direction == "memset" else ", copies" if direction == "memcpy" else \
                ", %s copies" % direction
        tooltip = "stream %s%s%s: %s drawn" % (name, " (CUPTI stream %s)" % ", ".join(ids) if ids else "", what,
                                              plural(len(mine), "item"))
        top = lane(name, tooltip, height, shade, TL_LANE_SEP + direction if direction else "")
        shade = not shade
        for it, row in zip(mine, rows):
            fill, stroke = TL_KIND_STYLE.get(it["kind"], TL_OTHER_STYLE)
            if it["e"] < w0 or it["s"] > w1:
                continue  # outside a zoomed window
            xs, xe = max(x_of(it["s"]), left), min(x_of(it["e"]), right)
            width = max(xe - xs, 1.0)
            ry = top + 2 + (row or 0) * TL_ROW_H
            faded = '' if it["label"] else ' fill-opacity="0.45" stroke-dasharray="2 1"'
            shape = '<rect x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s" stroke="%s" stroke-width="%s"%s/>' % (
                xs, ry, width, TL_ROW_H - 3, fill, stroke, "1" if width >= 3 else "0.5", faded)
            text = ""
            if fits(it["label"], width):
                text = svg_text(xs + 3, ry + TL_ROW_H - 6, it["label"], ' fill="#0b1f33"')
            body.append('<g class="item %s"><title>%s</title>%s%s</g>' % (
                h(slug(it["kind"])), h(item_tooltip(it, t0)), shape, text))
        blocks_top = top + 2 + n_rows * TL_ROW_H + 2
        for it, good, block_rows, total in block_plan:
            who = it["label"] or "kernel"
            for (bs, be, index, b), row in zip(good, block_rows):
                if row is None or blocks_left[0] <= 0:
                    blocks_skipped += 1
                    continue
                if be < w0 or bs > w1:
                    continue
                blocks_left[0] -= 1
                xs, xe = max(x_of(bs), left), min(x_of(be), right)
                sm = "SM %s" % fmt_value(b.get("sm_begin"))
                if b.get("sm_end") != b.get("sm_begin"):
                    sm += " at start, SM %s at end" % fmt_value(b.get("sm_end"))
                tip = "%s \u2014 block %d of %d\n%s\nstart %s, duration %s" % (
                    who, index + 1, total, sm, fmt_ns(bs - t0, signed=True, exact=True), fmt_ns(be - bs))
                if b.get("max_gap_ns") is not None:
                    tip += "\nlargest gap between stamps %s ns" % fmt_value(b.get("max_gap_ns"))
                body.append('<rect class="block" x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s"><title>%s'
                            '</title></rect>' % (xs, blocks_top + row * (TL_BLOCK_H + 1), max(xe - xs, 1.0),
                                                 TL_BLOCK_H, TL_BLOCK_FILL, h(tip)))

    # NVTX lane: nested or overlapping ranges in sub-rows; an open range runs to the end of the span.
    ranges = model["ranges"][:TL_MAX_RANGES]
    if ranges:
        ends = [r["e"] if r["e"] is not None else max(model["t1"], r["s"]) for r in ranges]
        rows = pack_rows([(r["s"], e) for r, e in zip(ranges, ends)], TL_MAX_RANGE_ROWS)
        used = [r for r in rows if r is not None]
        n_rows = max(used) + 1 if used else 1
        top = lane("NVTX", "NVTX ranges (CUPTI marker records)", n_rows * TL_ROW_H + 4, shade)
        shade = not shade
        for r, end, row in zip(ranges, ends, rows):
            if row is None:
                continue
            xs, xe = x_of(r["s"]), x_of(end)
            if xe < left or xs > right:
                continue
            clipped_left, clipped_right = xs < left, xe > right
            xs, xe = max(xs, left), min(xe, right)
            width = max(xe - xs, 1.0)
            ry = top + 2 + row * TL_ROW_H
            fill, stroke = TL_RANGE_STYLE
            dash = ' stroke-dasharray="4 2"' if r["open"] else ""
            shape = '<rect x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s" stroke="%s"%s/>' % (
                xs, ry, width, TL_ROW_H - 3, fill, stroke, dash)
            label = r["name"] + (" (open)" if r["open"] else "")
            label = ("\u25c2 " if clipped_left else "") + label + (" \u25b8" if clipped_right else "")
            if not fits(label, width):
                label = r["name"] if fits(r["name"], width) else ""
            text = svg_text(xs + 3, ry + TL_ROW_H - 6, label, ' fill="#3b1d7a"') if label else ""
            domain = r["raw"].get("domain")
            tip = "NVTX range %s%s\nstart %s, %s" % (
                r["name"] or "(unnamed)", " (domain %s)" % fmt_value(domain) if domain else "",
                fmt_ns(r["s"] - t0, signed=True, exact=True),
                "open: no end when collected (end_ns 0); drawn to the end of the span" if r["open"]
                else "duration %s" % fmt_ns(r["e"] - r["s"]))
            body.append('<g class="range%s"><title>%s</title>%s%s</g>' % (" open" if r["open"] else "", h(tip),
                                                                          shape, text))

    # Host lane: a tick for each host event, and a faint line through the lanes above; a host event with an
    # end (a host function, a host latch's wait) is also drawn as a bar from its start to its end.
    host = [e for e in model["host"][:TL_MAX_HOST] if w0 <= e["s"] <= w1]
    if model["host"]:
        top = lane("host", "host moments and host-function intervals the test recorded", TL_HOST_H, shade)
        for e in host:
            x = x_of(e["s"])
            if e["e"] is not None:
                x_end = max(x_of(min(e["e"], w1)), x + 1.0)
                body.append('<rect class="host-interval" x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" '
                            'fill-opacity="0.25" stroke="%s" stroke-width="1"><title>%s</title></rect>' % (
                                x, top + 3, x_end - x, TL_HOST_H - 5, TL_HOST_COLOR, TL_HOST_COLOR,
                                h("host: %s\nfrom %s for %s" % (e["label"] or "(no label)",
                                                                fmt_ns(e["s"] - t0, signed=True, exact=True),
                                                                fmt_ns(e["e"] - e["s"])))))
            tip = "host: %s\nat %s" % (e["label"] or "(no label)", fmt_ns(e["s"] - t0, signed=True, exact=True))
            if e["e"] is not None:
                tip += ", for %s" % fmt_ns(e["e"] - e["s"])
            text = svg_text(x + 4, top + TL_HOST_H - 6, e["label"], ' fill="%s"' % TL_HOST_COLOR) \
                if e["label"] and x + 4 + len(e["label"]) * TL_CHAR_W <= TL_WIDTH else ""
            body.append('<line x1="%.2f" x2="%.2f" y1="%d" y2="%.1f" stroke="%s" stroke-opacity="0.35" '
                        'stroke-dasharray="3 3"/>' % (x, x, TL_AXIS_H, top, TL_HOST_COLOR))
            body.append('<g class="host"><title>%s</title><line x1="%.2f" x2="%.2f" y1="%.1f" y2="%.1f" stroke="%s" '
                        'stroke-width="2"/><path d="M%.2f %.1fl-4 -6h8z" fill="%s"/>%s</g>' % (
                            h(tip), x, x, top + 3, top + TL_HOST_H - 2, TL_HOST_COLOR, x, top + 9, TL_HOST_COLOR,
                            text))

    height = int(y + 1)
    # Axis: round ticks of the offset from the test's t0, in one unit chosen by the window.
    divisor, unit = axis_unit(span)
    step = tick_step(span)
    decimals = 0
    while decimals < 6 and abs(round(step / divisor, decimals) - step / divisor) > 1e-9 * max(1.0, step / divisor):
        decimals += 1
    axis = ['<text x="4" y="14" fill="#57606a">time (%s)</text>' % unit]
    first = math.ceil((w0 - t0) / step)
    k = first
    while True:
        offset = k * step
        x = x_of(t0 + offset)
        if x > right + 0.01:
            break
        if x >= left - 0.01:
            axis.append('<line x1="%.2f" x2="%.2f" y1="%d" y2="%d" stroke="#d8dee4"/>' % (x, x, TL_AXIS_H - 4, height))
            axis.append(svg_text(x, 14, "%.*f" % (decimals, offset / divisor), ' text-anchor="middle" fill="#57606a"'))
        k += 1
        if k - first > 100:
            break
    axis.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#8c959f"/>' % (left, right, TL_AXIS_H, TL_AXIS_H))
    svg = ('<svg class="tl" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" '
           'font-family="ui-monospace, DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="10">'
           '%s%s%s</svg>' % (TL_WIDTH, height, TL_WIDTH, height, h(caption), "".join(lanes_out), "".join(axis),
                            "".join(body)))
    return svg, blocks_skipped


def timeline_summary(model: Dict[str, Any]) -> str:
    parts = [plural(len(model["items"]), "item")]
    streams = {it["stream"] for it in model["items"]}
    if streams:
        parts[0] += " on %s" % plural(len(streams), "stream")
    parts.append(plural(len(model["ranges"]), "NVTX range"))
    if model["host"]:
        parts.append(plural(len(model["host"]), "host event"))
    copies = model["copies"]
    if copies["count"]:
        # Copies and memsets: the share of their summed time that the union of the test's kernels covered.
        parts.append(plural(copies["count"], "copy", "copies"))
        parts.append("%s of copy time overlapped by kernels" % fmt_pct(copies["overlap_ns"], copies["time_ns"])
                     if copies["time_ns"] > 0 else "no copy time (zero durations)")
    parts.append("span %s" % fmt_ns(model["t1"] - model["t0"]))
    return ", ".join(parts)


def timeline_html(tl: Dict[str, Any], anchor: str) -> str:
    """The collapsed timeline of one test: legend, the drawing (and a zoom on the items when they fill
    a small part of the span), the clock line and what was left out."""
    model = timeline_model(tl)
    t0, t1 = model["t0"], max(model["t1"], model["t0"] + 1)
    out = ['<details class="tl" id="%s"><summary><b>Timeline</b> <span class="muted">%s</span></summary>'
           % (h(anchor), h(timeline_summary(model)))]
    legend = "".join('<span class="tl-key"><i style="background:%s;border-color:%s"></i>%s</span>' % (f, s, k)
                     for k, (f, s) in TL_KIND_STYLE.items())
    legend += '<span class="tl-key"><i style="background:%s;border-color:%s;height:4px"></i>block</span>' % (
        TL_BLOCK_FILL, TL_BLOCK_FILL)
    legend += '<span class="tl-key"><i style="background:%s;border-color:%s"></i>NVTX range</span>' % TL_RANGE_STYLE
    legend += ('<span class="tl-key"><i style="background:%s;border-color:%s;width:3px"></i>host event</span>'
               % (TL_HOST_COLOR, TL_HOST_COLOR))
    if model["copies"]["count"]:
        legend += ('<span class="muted">copies and memsets: lanes of their own under the kernel lanes, one per '
                   'stream and direction</span>')
    legend += '<span class="muted">faded, dashed: unlabelled \u00b7 hover for details</span>'
    out.append('<div class="tl-legend small">%s</div>' % legend)
    out.append('<div class="tl-caption small muted">whole test: t0 = first record, %s</div>' % h(fmt_ns(t1 - t0)))
    svg, skipped_blocks = timeline_svg(model, t0, t1, "timeline of the whole test")
    out.append('<div class="tl-svg">%s</div>' % svg)
    drawn = model["drawn"]
    # The test's own NVTX range usually covers its set-up, so the items fill a sliver of the span:
    # then a second drawing zooms on the labelled items (on all drawn items when none is labelled).
    focus = [it for it in drawn if it["label"]] or drawn
    if focus:
        first = min(it["s"] for it in focus)
        last = max(it["e"] for it in focus)
        extent = last - first
        if extent < TL_ZOOM_BELOW * (t1 - t0):
            pad = max(extent // 40, 500)
            z0, z1 = max(first - pad, t0), min(last + pad, t1)
            zoom_svg, _ = timeline_svg(model, z0, max(z1, z0 + 1), "timeline zoomed on the items")
            what = "the labelled items" if focus is not drawn else "the items"
            outside = sum(1 for it in drawn if it["e"] < z0 or it["s"] > z1)
            out.append('<div class="tl-caption small muted">zoom on %s: %s \u2026 %s (%s)%s; ranges and items '
                       'reaching past it are clipped</div>' % (
                           what, h(fmt_ns(z0 - t0, signed=True)), h(fmt_ns(z1 - t0, signed=True)), h(fmt_ns(z1 - z0)),
                           h(", %s outside" % plural(outside, "item")) if outside else ""))
            out.append('<div class="tl-svg">%s</div>' % zoom_svg)

    clock_map = tl.get("clock_map") if isinstance(tl.get("clock_map"), dict) else {}
    line = ["clock <span class=\"mono\">%s</span>" % h(tl.get("clock") or "not stated")]
    if clock_map:
        if clock_map.get("valid") is False:
            line.append("<b>clock map not valid</b>")
        offset = clock_map.get("globaltimer_to_cupti_offset_ns")
        line.append("offset %s ns <span class=\"muted\">(cupti = globaltimer + offset)</span>" % h(
            offset if offset is not None else "\u2014"))
        residual = clock_map.get("residual_ns")
        line.append("residual %s ns%s" % (h(residual if residual is not None else "\u2014"),
                                          " (%s)" % h(plural(clock_map["samples"], "sample"))
                                          if isinstance(clock_map.get("samples"), int) else ""))
    else:
        line.append("no clock map")
    line.append(h(plural(len(model["items"]), "item")))
    unlabelled = tl.get("unlabelled_records")
    line.append("%s unlabelled" % h(unlabelled if unlabelled is not None else "\u2014"))
    dropped = tl.get("dropped_records_in_process")
    if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped:
        line.append("<b>%s dropped in the process</b>" % h(plural(dropped, "CUPTI record")))
    out.append('<div class="tl-clock small">%s</div>' % " \u00b7 ".join(line))

    notes = []
    left_out = len(model["items"]) - len(drawn)
    if left_out:
        why = ["at most %d items per test, the first by start time" % TL_MAX_ITEMS]
        if model["lanes_refused"]:
            # Lanes: a stream's kernels, and one for each of its copy directions.
            why.append("%s beyond the first %d not drawn" % (plural(model["lanes_refused"], "lane"), TL_MAX_LANES))
        if model["streams_refused"]:
            why.append("%s with nothing drawn" % plural(model["streams_refused"], "stream"))
        notes.append("%d of %d items not drawn (%s)" % (left_out, len(model["items"]), "; ".join(why)))
    if len(model["ranges"]) > TL_MAX_RANGES:
        notes.append("%d of %d NVTX ranges not drawn" % (len(model["ranges"]) - TL_MAX_RANGES, len(model["ranges"])))
    if len(model["host"]) > TL_MAX_HOST:
        notes.append("%d of %d host events not drawn" % (len(model["host"]) - TL_MAX_HOST, len(model["host"])))
    if skipped_blocks:
        notes.append("%s not drawn (at most %d rows per stream, %d per test)"
                     % (plural(skipped_blocks, "block record"), TL_MAX_BLOCK_ROWS, TL_MAX_BLOCKS))
    if model["bad"]:
        notes.append("%s without a numeric start_ns ignored" % plural(model["bad"], "entry", "entries"))
    for note in notes:
        out.append('<div class="tl-note small">%s</div>' % h(note))
    out.append("</details>")
    return "".join(out)


BC_WIDTH = 960          # drawing width in px
BC_MAX_HEIGHT = 560     # the SM axis is squeezed to this height
BC_HIGH = (192, 57, 43)   # colour of the highest priority
BC_LOW = (46, 134, 193)   # colour of the lowest priority


def bc_colour(priority: Any, least: Any, greatest: Any) -> str:
    """High priority red, low priority blue, levels between interpolated; grey when unknown."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (priority, least, greatest)):
        return "#888888"
    f = 0.0 if least == greatest else min(max((least - priority) / float(least - greatest), 0.0), 1.0)
    rgb = [int(round(lo + (hi - lo) * f)) for lo, hi in zip(BC_LOW, BC_HIGH)]
    return "#%02x%02x%02x" % tuple(rgb)


def timeline_without_blocks(tl: Any) -> Any:
    """The timeline as the embedded data keeps it: each kernel's per-block records become their count."""
    if not isinstance(tl, dict) or not isinstance(tl.get("items"), list):
        return tl
    items = []
    for it in tl["items"]:
        if isinstance(it, dict) and isinstance(it.get("blocks"), list):
            it = dict(it, blocks=len(it["blocks"]))
        items.append(it)
    return dict(tl, items=items)


def chart_digest(chart: Any) -> Any:
    """What the embedded data keeps of a block chart: how many grids and records (null without a chart)."""
    if not isinstance(chart, dict):
        return None
    grids = chart.get("grids") if isinstance(chart.get("grids"), list) else []
    return {"grids": len(grids), "records": sum(len(g["records"]) for g in grids
                                                if isinstance(g, dict) and isinstance(g.get("records"), list)),
            "records_in": "the observation file"}


def block_chart_html(chart: Dict[str, Any]) -> str:
    """Every block of the test's grids as a bar: time across, SM (and slot within it) down, coloured by
    stream priority. Malformed rows are counted and left out."""
    grids = [g for g in chart.get("grids", []) if isinstance(g, dict)] if isinstance(chart.get("grids"), list) else []
    rows = []   # (grid index, t0, t1, sm, max_gap)
    bad = 0
    for gi, g in enumerate(grids):
        for r in g.get("records", []) if isinstance(g.get("records"), list) else []:
            ok = (isinstance(r, list) and len(r) >= 3 and
                  all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in r[:3]) and r[1] >= r[0] >= 0)
            if not ok:
                bad += 1
                continue
            gap = r[4] if len(r) >= 5 and isinstance(r[4], (int, float)) and not isinstance(r[4], bool) else 0
            rows.append((gi, float(r[0]), float(r[1]), int(r[2]), gap))
    if not rows:
        return '<div class="muted small">block chart: no usable block records%s</div>' % (
            " (%s malformed)" % plural(bad, "row") if bad else "")
    # Slots: within each SM, a block takes the lowest slot free at its start.
    slots_of_sm: Dict[int, List[float]] = {}
    placed = []
    for gi, t0, t1, sm, gap in sorted(rows, key=lambda x: (x[3], x[1])):
        ends = slots_of_sm.setdefault(sm, [])
        slot = next((i for i, end in enumerate(ends) if end <= t0), len(ends))
        if slot == len(ends):
            ends.append(t1)
        else:
            ends[slot] = t1
        placed.append((gi, t0, t1, sm, slot, gap))
    sm_ids = sorted(slots_of_sm)
    sm_row = {sm: i for i, sm in enumerate(sm_ids)}
    per_sm = max(len(v) for v in slots_of_sm.values())
    n_rows = len(sm_ids) * per_sm
    row_h = max(min(4.0, BC_MAX_HEIGHT / float(n_rows)), 0.25)
    left, top = 46, 6
    height = int(top + n_rows * row_h + 22)
    t_end = max(t1 for _, _, t1, _, _, _ in placed) or 1.0
    xs = (BC_WIDTH - left - 8) / t_end
    paths: Dict[int, List[str]] = {}
    for gi, t0, t1, sm, slot, gap in placed:
        y = top + (sm_row[sm] * per_sm + slot) * row_h
        w = max((t1 - t0) * xs, 0.5)
        paths.setdefault(gi, []).append("M%.1f %.2fh%.1fv%.2fh-%.1fz" % (left + t0 * xs, y, w, row_h * 0.9, w))
    least, greatest = chart.get("priority_least"), chart.get("priority_greatest")
    svg = ['<svg class="tl" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="blocks by SM and '
           'time">' % (BC_WIDTH, height, BC_WIDTH, height)]
    for gi, d in paths.items():
        g = grids[gi]
        svg.append('<path fill="%s" fill-opacity="0.85" d="%s"><title>%s</title></path>' % (
            bc_colour(g.get("priority"), least, greatest), "".join(d),
            h("%s, priority %s, %s" % (g.get("label"), g.get("priority"), plural(len(d), "block")))))
    axis_y = top + n_rows * row_h + 2
    svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>' % (left, axis_y, BC_WIDTH - 8, axis_y))
    for k in range(5):
        t = t_end * k / 4.0
        svg.append('<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>' % (
            left + t * xs, axis_y + 14, h(fmt_ns(t))))
    svg.append('<text x="2" y="%d" font-size="10">SM %s</text>' % (top + 10, h(sm_ids[0])))
    svg.append('<text x="2" y="%.1f" font-size="10">SM %s</text>' % (axis_y - 2, h(sm_ids[-1])))
    svg.append("</svg>")
    legend = []
    for gi, g in enumerate(grids):
        legend.append('<span class="tl-key"><i style="background:%s;border-color:%s"></i>%s</span>' % (
            bc_colour(g.get("priority"), least, greatest), bc_colour(g.get("priority"), least, greatest),
            h("%s (priority %s%s, %s)" % (g.get("label"), g.get("priority"),
                                          ", " + str(g["process"]) if g.get("process") else "",
                                          plural(sum(1 for p in placed if p[0] == gi), "block")))))
    summary = "%s of %s, %s SMs, at most %d blocks at once on one SM (limit %s)" % (
        plural(len(placed), "block"), plural(len(grids), "grid"), len(sm_ids), per_sm,
        chart.get("max_blocks_per_sm", "\u2014"))
    out = ['<details class="tl" open><summary><b>Blocks</b> <span class="muted">%s</span></summary>' % h(summary),
           '<div class="tl-legend small">%s<span class="muted">red: highest priority, blue: lowest \u00b7 '
           'one row per slot of an SM \u00b7 time from the first block</span></div>' % "".join(legend),
           '<div class="tl-svg">%s</div>' % "".join(svg)]
    if bad:
        out.append('<div class="tl-note small">%s left out</div>' % h(plural(bad, "malformed row")))
    out.append("</details>")
    return "".join(out)


def timeline_note(test: Dict[str, Any]) -> Optional[str]:
    """One line for the Result cell when a timeline object exists but nothing is drawn."""
    tl = test.get("timeline")
    state = timeline_state(test)
    if state == "off":
        reason = dig(tl, "tracing", "reason")
        return "no timeline: tracing off (%s)" % (reason if isinstance(reason, str) and reason else "no reason given")
    if state == "empty":
        return "timeline: tracing on, nothing recorded (%s unlabelled)" % fmt_value(tl.get("unlabelled_records", 0))
    return None


def timeline_anchor(test: Dict[str, Any]) -> str:
    return "tl-" + slug(test["ctest_name"])


# ------------------------------------------------------------------------------------------------
# HTML
# ------------------------------------------------------------------------------------------------

CSS = """
:root { --line:#d0d7de; --muted:#57606a; --pass:#116329; --pass-bg:#dafbe1; --fail:#a40e26; --fail-bg:#ffebe9;
  --skip:#424a53; --skip-bg:#eaeef2; --amber:#7d4e00; --amber-bg:#fff1b8; --differs:#6639ba; --differs-bg:#f1e5ff; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 28px 48px; color: #1f2328; background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; margin: 20px 0 6px; }
h2 { font-size: 18px; margin: 30px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 0; display: inline; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 12px; }
pre { margin: 4px 0; padding: 6px 8px; background: #fff5f5; border-left: 3px solid var(--fail);
  white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto; }
a { color: #0550ae; text-decoration: none; } a:hover { text-decoration: underline; }
.muted { color: var(--muted); } .small { font-size: 12px; }
nav.toc { margin: 8px 0 0; font-size: 13px; } nav.toc a { margin-right: 14px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 10px 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.banner { margin: 12px 0; padding: 10px 14px; border-radius: 6px; font-weight: 600; border: 1px solid; }
.banner.fail { background: var(--fail-bg); color: var(--fail); border-color: #ff8182; font-size: 16px; }
.banner.ok { background: var(--pass-bg); color: var(--pass); border-color: #4ac26b; }
.banner.warn { background: var(--amber-bg); color: var(--amber); border-color: #d4a72c; }
.banner ul { margin: 6px 0 0; font-weight: normal; }
.counters { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.counter { min-width: 110px; padding: 8px 14px; border: 1px solid var(--line); border-radius: 6px; }
.counter b { display: block; font-size: 22px; }
.counter.passed { background: var(--pass-bg); } .counter.failed { background: var(--fail-bg); }
.counter.skipped { background: var(--skip-bg); } .counter.notrun { background: var(--amber-bg); }
table { border-collapse: collapse; width: 100%; margin: 6px 0 14px; }
th, td { border: 1px solid var(--line); padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; position: sticky; top: 0; }
table.narrow { width: auto; min-width: 50%; }
table.kv { width: 100%; } table.kv td { overflow-wrap: break-word; } table.kv td:first-child { width: 40%; }
table.tests, table.coverage { table-layout: fixed; }
table.tests td, table.coverage td, table.tests th, table.coverage th { overflow-wrap: break-word; }
td.id { white-space: nowrap; }
.env-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 0 28px; }
.table-wrap { overflow-x: auto; }
tr.row-failed > td { background: #fff8f8; } tr.differs > td { background: #fffbe6; }
.bl { font-size: 12px; margin: 1px 0 3px; }
.st { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
  white-space: nowrap; border: 1px solid transparent; }
.st-passed, .st-pass, .st-match { background: var(--pass-bg); color: var(--pass); border-color: #4ac26b; }
.st-failed, .st-fail, .st-differs-gating, .st-no-baseline-dir { background: var(--fail-bg); color: var(--fail);
  border-color: #ff8182; }
.st-skipped, .st-retired, .st-no-baseline, .st-no-entry, .st-noplan { background: var(--skip-bg); color: var(--skip);
  border-color: #afb8c1; }
.st-uncovered, .st-no-result, .st-notrun { background: var(--amber-bg); color: var(--amber); border-color: #d4a72c; }
.st-differs { background: var(--differs-bg); color: var(--differs); border-color: #c297ff; }
.st-unjudged { background: var(--skip-bg); color: var(--amber); border-color: #d4a72c; border-style: dashed; }
.tag { display: inline-block; padding: 0 6px; margin-left: 4px; border-radius: 4px; font-size: 11px;
  background: #ddf4ff; color: #0550ae; border: 1px solid #80ccff; }
.tag.mutation { background: #fff1e5; color: #953800; border-color: #ffb77c; }
.tag.watchdog { background: var(--fail-bg); color: var(--fail); border-color: #ff8182; font-weight: 600; }
.tag.watchdog-expected { background: var(--skip-bg); color: var(--skip); border-color: #afb8c1; }
.tag.finding { background: var(--differs-bg); color: var(--differs); border-color: #c297ff; cursor: help; }
.why { text-decoration: underline dotted; cursor: help; }
.evidence ul { margin: 2px 0 4px; padding-left: 18px; }
.kvlist { display: flex; flex-wrap: wrap; gap: 2px 10px; font-family: ui-monospace, "DejaVu Sans Mono", Menlo,
  Consolas, monospace; font-size: 12px; } .kvlist i { color: var(--muted); font-style: normal; }
details.family { margin: 12px 0; border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; }
details.family > summary { cursor: pointer; padding: 2px 0; }
details.family > summary .st { margin-left: 6px; }
.unset { color: #8c959f; font-style: italic; }
tr.diff-row > td { background: #fff8c5; }
tr.group > td { background: #f6f8fa; border-top: 2px solid #afb8c1; }
#filters { position: sticky; top: 0; z-index: 2; background: #f6f8fa; border: 1px solid var(--line);
  border-radius: 6px; padding: 6px 10px; margin: 10px 0; }
#filters input[type=search] { width: 320px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
tr.tl-row > td { background: #fcfcfd; padding: 2px 7px 4px; }
details.tl > summary { cursor: pointer; font-size: 13px; }
.tl-svg { overflow-x: auto; margin: 2px 0; }
svg.tl { display: block; max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line); }
svg.tl g.item:hover rect, svg.tl g.range:hover rect, svg.tl rect.block:hover { stroke: #000; stroke-width: 1.5; }
.tl-legend { display: flex; flex-wrap: wrap; gap: 2px 14px; margin: 4px 0; }
.tl-key i { display: inline-block; width: 14px; height: 10px; border: 1px solid; margin-right: 4px;
  vertical-align: middle; }
.tl-caption { margin-top: 6px; } .tl-clock { margin: 3px 0; } .tl-note { color: var(--amber); }
"""

SCRIPT = """
(function () {
  var bar = document.getElementById('filters');
  if (!bar || !document.querySelectorAll) return;
  bar.hidden = false;
  var q = document.getElementById('filter-text');
  var problems = document.getElementById('filter-problems');
  var good = {passed: 1, pass: 1, retired: 1};
  function apply() {
    var text = q.value.toLowerCase();
    var rows = document.querySelectorAll('tr[data-status]');
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var show = !(problems.checked && good[row.getAttribute('data-status')]) &&
                 (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.style.display = show ? '' : 'none';
      var next = row.nextElementSibling;
      if (next && next.className === 'tl-row') next.style.display = row.style.display;
    }
  }
  q.addEventListener('input', apply);
  problems.addEventListener('change', apply);
  function toggle(open) {
    var all = document.querySelectorAll('details.family');
    for (var i = 0; i < all.length; i++) all[i].open = open;
  }
  document.getElementById('expand-all').addEventListener('click', function () { toggle(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { toggle(false); });
  // A link to a collapsed timeline (or into a collapsed family) opens it.
  function openTarget() {
    var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') node.open = true;
    }
    if (target && target.scrollIntoView) target.scrollIntoView();
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
})();
"""


def badge(status: str, label: Optional[str] = None, title: Optional[str] = None) -> str:
    text = label if label is not None else TEST_LABEL.get(status, COVERAGE_LABEL.get(status, status))
    extra = ' title="%s"' % h(title) if title else ""
    return '<span class="st st-%s"%s>%s</span>' % (h(slug(status)), extra, h(text))


def kv_list(values: Dict[str, Any]) -> str:
    if not values:
        return '<span class="muted">\u2014</span>'
    items = ['<span>%s<i>=</i>%s</span>' % (h(str(k)), h(v)) for k, v in values.items()]
    return '<div class="kvlist">%s</div>' % "".join(items)


def test_anchor(test: Dict[str, Any]) -> str:
    return "t-" + slug(test["ctest_name"])


def watchdog_text(entry: Dict[str, Any]) -> str:
    """One fired gate: "gate 2 holding s1: watchdog 2000 ms, waited 2.000 s; unexpected: ..."."""
    held = entry.get("held")
    waited = as_ns(entry.get("waited_ns"))
    text = "gate %s%s: watchdog %s ms%s" % (
        fmt_value(entry.get("gate")), " holding %s" % fmt_value(held) if held not in (None, "") else "",
        fmt_value(entry.get("watchdog_ms")), ", waited %s" % fmt_ns(waited) if waited is not None else "")
    if entry.get("expected") is True:
        return text + "; expected (a test of the watchdog itself)"
    return text + "; unexpected: the test fails, a check made while the gate was supposed to be closed proves nothing"


def watchdog_tags(test: Dict[str, Any]) -> List[str]:
    """Tags for the Result cell: fired watchdogs, unexpected ones (a failure) apart from expected ones."""
    tags = []
    fired = test["watchdog"]
    unexpected = [w for w in fired if w.get("expected") is not True]
    expected = [w for w in fired if w.get("expected") is True]
    for group, cls, label, title in (
            (unexpected, "watchdog", "watchdog fired (unexpected)",
             "a gate was not opened before its watchdog ended it: the test fails (gates listed below)"),
            (expected, "watchdog-expected", "watchdog fired (expected)",
             "a test of the watchdog itself: its firing is expected (gates listed below)")):
        if group:
            tags.append('<span class="tag %s" title="%s">%s%s</span>' % (
                cls, h(title), label, " \u00d7%d" % len(group) if len(group) > 1 else ""))
    if not fired and test["watchdog_summary"]:
        # XML only: the property counts the gates but does not say whether they were expected.
        tags.append('<span class="tag watchdog" title="from the GoogleTest XML; the observation file, which says '
                    'whether it was expected, is missing">watchdog: %s</span>' % h(test["watchdog_summary"]))
    return tags


def evidence_lists(test: Dict[str, Any]) -> List[str]:
    """The fired gates and the invalid gate checks of a test, one line each (at most MAX_EVIDENCE_LINES)."""
    out = []
    for title, lines, cls in (("watchdog fired", [watchdog_text(w) for w in test["watchdog"]], "watchdog"),
                              ("invalid checks", list(test["invalid_checks"]), "invalid")):
        if not lines:
            continue
        shown = lines[:MAX_EVIDENCE_LINES]
        more = len(lines) - len(shown)
        note = ""
        if cls == "invalid" and test["invalid_checks_from_xml"]:
            note = ' <span class="muted">(the last one, from the XML)</span>'
        out.append('<div class="evidence %s small"><b>%s (%d):</b>%s<ul>%s%s</ul></div>' % (
            cls, title, len(lines), note, "".join("<li>%s</li>" % h(line) for line in shown),
            "<li class=\"muted\">%d more in the observation file</li>" % more if more else ""))
    return out


class Page:
    def __init__(self, runs: Sequence[Dict[str, Any]], tests: Dict[str, Dict[str, Any]],
                 instruments: Dict[str, Any], coverage: Dict[str, Any], totals: Dict[str, int],
                 source: Path, plans: Dict[str, Dict[str, Any]], baseline: Optional[Dict[str, Any]] = None):
        self.runs = runs
        self.env = runs[0]["env"]
        self.tests = tests
        self.instruments = instruments
        self.coverage = coverage
        self.totals = totals
        self.source = source
        self.plans = plans
        self.baseline = baseline or {"arch": None, "path": None, "version": None, "entries": {}, "note": None}
        self.out: List[str] = []

    def w(self, *parts: str) -> None:
        self.out.extend(parts)

    # (1) header ---------------------------------------------------------------------------------
    def header(self) -> None:
        env = self.env
        ids = [r["id"] for r in self.runs]
        self.w("<header><h1>streamcheck report</h1>")
        self.w('<dl class="facts">')
        run_text = []
        for r in self.runs:
            started = dig(r["env"], "run", "started_utc")
            finished = dig(r["env"], "run", "finished_utc")
            run_text.append('<span class="mono">%s</span> <span class="muted small">%s \u2192 %s</span>' % (
                h(r["id"]), h(started or "?"), h(finished or "not finished")))
        self.w("<dt>%s</dt><dd>%s</dd>" % ("Runs" if len(ids) > 1 else "Run", "<br>".join(run_text)))

        gpu = env.get("gpu")
        if isinstance(gpu, dict):
            parts = [h(gpu.get("name") or "unnamed GPU")]
            if gpu.get("compute_capability") is not None:
                parts.append("CC %s" % h(gpu.get("compute_capability")))
            if gpu.get("arch"):
                parts.append(h(gpu.get("arch")))
            if gpu.get("sm_count") is not None:
                parts.append("%s SMs" % h(gpu.get("sm_count")))
            if gpu.get("async_engine_count") is not None:
                parts.append("%s copy engines" % h(gpu.get("async_engine_count")))
            if gpu.get("concurrent_kernels") is not None:
                parts.append("concurrent kernels %s" % h(gpu.get("concurrent_kernels")))
            text = " \u00b7 ".join(parts)
            if gpu.get("uuid"):
                text += ' <span class="muted small mono">%s</span>' % h(gpu.get("uuid"))
            self.w("<dt>GPU</dt><dd>%s</dd>" % text)
        else:
            reason = env.get("gpu_unavailable_reason") or "no reason recorded"
            self.w('<dt>GPU</dt><dd><b>no GPU:</b> %s</dd>' % h(reason))

        self.w("<dt>CUDA</dt><dd>driver %s \u00b7 runtime %s</dd>" % (
            h(cuda_version(dig(env, "cuda", "driver_version"))), h(cuda_version(dig(env, "cuda", "runtime_version")))))
        commit = dig(env, "streamcheck", "commit")
        dirty = any(dig(r["env"], "streamcheck", "dirty") is True for r in self.runs)
        version = dig(env, "streamcheck", "version")
        text = '<span class="mono" title="%s">%s</span>' % (h(commit or ""),
                                                           h(str(commit)[:12] if commit else "unknown"))
        if dirty:
            text += ' <span class="st st-failed" title="uncommitted changes in the source tree">dirty</span>'
        if version:
            text += ' <span class="muted">streamcheck %s</span>' % h(version)
        self.w("<dt>Commit</dt><dd>%s</dd>" % text)
        tick = dig(gpu, "timer_tick_ns") if isinstance(gpu, dict) else None
        self.w("<dt>Timer tick</dt><dd>%s</dd>" % (h("%s ns" % fmt_value(tick)) if tick is not None else "\u2014"))
        least, greatest = dig(gpu, "priority_range", "least"), dig(gpu, "priority_range", "greatest")
        if least is not None or greatest is not None:
            prio = "least %s / greatest %s" % (h(least), h(greatest))
            if isinstance(least, int) and isinstance(greatest, int):
                prio += ' <span class="muted">(%s)</span>' % plural(least - greatest + 1, "level")
        else:
            prio = "\u2014"
        self.w("<dt>Priority range</dt><dd>%s</dd>" % prio)
        tracing = env.get("tracing") or {}
        on = tracing.get("enabled") is True
        reason = tracing.get("reason")
        self.w("<dt>Tracing</dt><dd><b>%s</b>%s</dd>" % ("on" if on else "off",
                                                         " \u2014 %s" % h(reason) if reason else ""))
        self.w("<dt>Plans</dt><dd class='mono small'>%s</dd>" % h(str(self.source / "tests")))
        if self.baseline["path"]:
            self.w("<dt>Baseline</dt><dd><span class='mono small'>%s</span>%s</dd>" % (
                h(self.baseline["path"]), ' <span class="muted small">schema %s</span>' % h(self.baseline["version"])
                if self.baseline["version"] else ""))
        else:
            self.w('<dt>Baseline</dt><dd class="muted small">%s</dd>' % h(self.baseline["note"] or "none"))
        self.w("</dl>")
        for r in self.runs:
            for note in r["notes"]:
                self.w('<div class="banner warn">%s</div>' % h(note))
        self.w('<nav class="toc"><a href="#totals">Totals</a><a href="#coverage">Coverage</a>'
               '<a href="#families">Families</a><a href="#timelines">Timelines</a>'
               '<a href="#instruments">Instruments</a>'
               '<a href="#environment">Environment &amp; build</a></nav></header>')

    # (2) totals ---------------------------------------------------------------------------------
    def totals_section(self) -> None:
        t = self.totals
        self.w('<section id="totals"><h2>Totals</h2>')
        failed = sorted((x for x in self.tests.values() if x["status"] == "failed"), key=lambda x: x["ctest_name"])
        if failed:
            self.w('<div class="banner fail">\u2717 %s FAILED<ul>' % plural(len(failed), "test"))
            for x in failed:
                self.w('<li><a href="#%s">%s</a></li>' % (h(test_anchor(x)), h(x["ctest_name"])))
            self.w("</ul></div>")
        elif t["tests"] == t["notrun"]:
            self.w('<div class="banner warn">No test produced a result in %s%s.</div>'
                   % ("these runs" if len(self.runs) > 1 else "this run",
                      " (%s not run)" % plural(t["notrun"], "planned test") if t["notrun"] else ""))
        else:
            extra = ""
            if t["skipped"] or t["notrun"]:
                extra = " (%d of %d skipped%s)" % (t["skipped"], t["tests"],
                                                  ", %d not run" % t["notrun"] if t["notrun"] else "")
            self.w('<div class="banner %s">\u2713 No test failed%s</div>' % ("warn" if t["passed"] == 0 else "ok",
                                                                           h(extra)))
        self.w('<div class="counters">')
        self.w('<div class="counter"><b>%d</b>tests</div>' % t["tests"])
        unjudged = sum(1 for x in self.tests.values() if is_unjudged(x))
        for key, label in (("passed", "passed"), ("failed", "failed"), ("skipped", "skipped"), ("notrun", "not run")):
            extra = '<div class="small">%d not judged: no baseline</div>' % unjudged if key == "skipped" and unjudged \
                else ""
            self.w('<div class="counter %s"><b>%d</b>%s%s</div>' % (key, t[key], label, extra))
        self.w("</div>")
        reasons: Dict[str, int] = {}
        for x in self.tests.values():
            if x["status"] == "skipped":
                # The baseline rule's messages list the rows, so they differ from test to test: one line for all.
                key = "not judged: no baseline (observed values recorded, no baseline file or entry)" \
                    if is_unjudged(x) else x["skip_reason"] or "(no reason given)"
                reasons[key] = reasons.get(key, 0) + 1
        if reasons:
            self.w("<table class='narrow'><tr><th>Skip reason</th><th>Tests</th></tr>")
            for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                self.w("<tr><td>%s</td><td>%d</td></tr>" % (h(reason), n))
            self.w("</table>")
        self.w("</section>")

    # (3) coverage -------------------------------------------------------------------------------
    def coverage_section(self) -> None:
        cov = self.coverage
        self.w('<section id="coverage"><h2>Coverage by catalog ID</h2>')
        counts = cov["counts"]
        if cov["rows"]:
            self.w("<p>%s</p>" % " ".join("%s %d" % (badge(s), counts[s]) for s in COVERAGE_ORDER if counts[s]))
            with_claim = any(row["claim"] for row in cov["rows"])
            columns = 7 if with_claim else 6
            self.w('<div class="table-wrap"><table class="coverage"><colgroup><col style="width:96px">'
                   '<col style="width:104px">%s<col style="width:%s"><col style="width:30%%">'
                   '<col style="width:136px"><col></colgroup><tr><th>ID</th><th>Kind</th>%s<th>Source</th>'
                   '<th>Tests</th><th>Status</th><th>Detail</th></tr>'
                   % ('<col style="width:16%">' if with_claim else "", "16%" if with_claim else "22%",
                      "<th>Claim</th>" if with_claim else ""))
            family = None
            for row in sorted(cov["rows"], key=lambda r: r["family"]):  # stable: plan order within a family
                if row["family"] != family:
                    family = row["family"]
                    plan = self.plans.get(family) or {}
                    self.w('<tr class="group"><td colspan="%d"><a href="#f-%s"><b>%s</b></a> '
                           '<span class="muted small">%s</span></td></tr>'
                           % (columns, h(slug(family)), h(family), h(plan.get("path") or "")))
                cls = ' class="row-failed"' if row["status"] == "fail" else ""
                self.w('<tr data-status="%s"%s id="id-%s">' % (h(row["status"]), cls, h(slug(row["id"]))))
                self.w('<td class="mono id"><b>%s</b></td><td>%s</td>' % (h(row["id"]), h(row["kind"] or "\u2014")))
                if with_claim:
                    self.w('<td class="small">%s</td>' % inline_md(row["claim"]))
                self.w('<td class="small">%s</td>' % inline_md(row["source"]))
                self.w("<td>%s</td>" % self.planned_tests_cell(row))
                self.w("<td>%s</td><td class='small'>%s</td></tr>" % (
                    badge(row["status"]), "<br>".join(h(d) for d in row["detail"])))
            self.w("</table></div>")
        else:
            self.w('<p class="muted">No test plan with a plan table was found under %s.</p>'
                   % h(str(self.source / "tests")))
        if cov["no_plan"]:
            self.w("<h3>Families without a plan</h3>")
            self.w("<table class='narrow'><tr><th>Family</th><th>Status</th><th>Tests run</th><th>Why</th></tr>")
            for entry in cov["no_plan"]:
                self.w('<tr><td><a href="#f-%s">%s</a></td><td>%s</td><td>%d</td><td class="small">%s</td></tr>' % (
                    h(slug(entry["family"])), h(entry["family"]), badge("noplan", "no plan"), entry["tests"],
                    h(entry["note"])))
            self.w("</table>")
        if cov.get("self_tested"):
            self.w("<h3>Families without catalog IDs</h3>")
            self.w('<p class="muted small">Their plans list tests of the suite itself (a table headed '
                   '<code>| Test |</code>), not catalog behaviors.</p>')
            self.w("<table class='narrow'><tr><th>Family</th><th>Plan entries</th><th>Tests run</th>"
                   "<th>Failed</th><th>Detail</th></tr>")
            for entry in cov["self_tested"]:
                detail = []
                if entry["missing"]:
                    detail.append("listed but no result: " + ", ".join(entry["missing"]))
                if entry["unlisted"]:
                    detail.append("ran but not listed: " + ", ".join(entry["unlisted"]))
                self.w('<tr><td><a href="#f-%s">%s</a></td><td>%d</td><td>%d</td><td>%d</td><td class="small">%s</td>'
                       '</tr>' % (h(slug(entry["family"])), h(entry["family"]), entry["planned"], entry["tests"],
                                  entry["failed"], h("; ".join(detail)) or "\u2014"))
            self.w("</table>")
        if cov["unplanned"]:
            self.w("<h3>IDs claimed by tests but absent from every plan</h3>")
            self.w("<table><tr><th>ID</th><th>Family</th><th>Kind</th><th>Tests</th><th>Status</th>"
                   "<th>Detail</th></tr>")
            for row in cov["unplanned"]:
                links = "<br>".join(self.test_link(self.tests[name]) for name in row["tests"])
                self.w('<tr data-status="%s"><td class="mono"><b>%s</b></td><td>%s</td><td>%s</td><td>%s</td>'
                       '<td>%s</td><td class="small">%s</td></tr>' % (
                           h(row["status"]), h(row["id"]), h(row["family"]), h(row["kind"] or "\u2014"), links,
                           badge(row["status"]), "<br>".join(h(d) for d in row["detail"])))
            self.w("</table>")
        self.w("</section>")

    def test_link(self, test: Dict[str, Any], show_status: bool = True) -> str:
        label = '<a href="#%s" class="mono">%s</a>' % (h(test_anchor(test)), breakable(test["gtest_name"]))
        if test["variant"]:
            label += '<span class="tag">%s</span>' % h(test["variant"])
        if show_status:
            label += " " + badge(test["status"])
        return label

    def planned_tests_cell(self, row: Dict[str, Any]) -> str:
        if not row["planned"]:
            return '<span class="muted">\u2014</span>'
        lines = []
        for name in row["planned"]:
            found = [self.tests[c] for c in row["results"].get(name, []) if c in self.tests]
            if not found:
                lines.append('<code>%s</code> %s' % (breakable(name), badge("no-result")))
                continue
            chips = []
            for t in found:
                if t.get("planned_only"):
                    chips.append('<a href="#%s">%s</a>' % (h(test_anchor(t)), badge("no-result", "no result")))
                    continue
                label = t["variant"] or TEST_LABEL[t["status"]]
                if t["variant"]:
                    label = "%s: %s" % (t["variant"], TEST_LABEL[t["status"]])
                chips.append('<a href="#%s">%s</a>' % (h(test_anchor(t)), badge(t["status"], label, t["ctest_name"])))
            lines.append("<code>%s</code> %s" % (breakable(name), " ".join(chips)))
        return "<br>".join(lines)

    # (4) families -------------------------------------------------------------------------------
    def families_section(self) -> None:
        self.w('<section id="families"><h2>Results by family</h2>')
        self.w('<div id="filters" hidden><label>Filter rows: <input type="search" id="filter-text" '
               'placeholder="test name, ID, reason..."></label> &nbsp; <label><input type="checkbox" '
               'id="filter-problems"> only problems (hide passes)</label> &nbsp; '
               '<button type="button" id="expand-all">expand all</button> '
               '<button type="button" id="collapse-all">collapse all</button></div>')
        by_family: Dict[str, List[Dict[str, Any]]] = {}
        for t in self.tests.values():
            by_family.setdefault(t["family"], []).append(t)
        if not by_family:
            self.w('<p class="muted">No test results.</p>')
        multi_run = len(self.runs) > 1
        for family in sorted(by_family):
            tests = sorted(by_family[family], key=lambda t: (TEST_ORDER[t["status"]], t["gtest_name"], t["variant"]))
            counts = {s: sum(1 for t in tests if t["status"] == s) for s in TEST_ORDER}
            summary = " ".join(badge(s, "%d %s" % (counts[s], TEST_LABEL[s])) for s in TEST_ORDER if counts[s])
            plan = self.plans.get(family)
            if plan and plan["rows"] is not None:
                plan_note = "plan: %s" % plural(len(plan["rows"]), "ID")
            elif plan and plan.get("self_tests") is not None:
                plan_note = "plan: %s, no catalog IDs" % plural(len(plan["self_tests"]), "listed test")
            else:
                plan_note = "no plan"
            variants = sorted({t["variant"] for t in tests if t["variant"]})
            variant_note = (" \u00b7 variants: %s" % ", ".join(variants)) if variants else ""
            self.w('<details class="family" open id="f-%s"><summary><h3>%s</h3> <span class="muted">%s \u00b7 %s%s'
                   '</span> %s</summary>' % (h(slug(family)), h(family), plural(len(tests), "test"), h(plan_note),
                                            h(variant_note), summary))
            # Fixed layout; the Test column takes what the others leave, more when a family has no
            # observed values or baseline comparisons.
            observed = "12%" if any(t["observations"] for t in tests) else "100px"
            base = "16%" if any(t["baseline"] for t in tests) else "100px"
            self.w('<div class="table-wrap"><table class="tests"><colgroup><col style="width:76px"><col>'
                   '<col style="width:80px"><col style="width:104px"><col style="width:8%%"><col style="width:90px">'
                   '<col style="width:22%%"><col style="width:%s"><col style="width:%s"></colgroup>'
                   '<tr><th>Status</th><th>Test</th><th>ID</th><th>Kind</th><th>Doc source</th>'
                   '<th>Duration</th><th>Result</th><th>Observed</th><th>Baseline</th></tr>' % (observed, base))
            for t in tests:
                self.test_row(t, multi_run)
            self.w("</table></div></details>")
        self.w("</section>")

    def test_row(self, t: Dict[str, Any], multi_run: bool) -> None:
        cls = ' class="row-failed"' if t["status"] == "failed" else ""
        self.w('<tr id="%s" data-status="%s"%s>' % (h(test_anchor(t)), h(t["status"]), cls))
        if is_unjudged(t):
            self.w("<td>%s</td>" % badge("unjudged", "not judged", "skipped: its observed values have no baseline, "
                                                                    "so they were recorded but not judged"))
        else:
            self.w("<td>%s</td>" % badge(t["status"]))
        name = '<span class="mono" title="%s">%s</span>' % (h(t["ctest_name"]), breakable(t["gtest_name"]))
        if t["variant"]:
            name += '<span class="tag" title="ctest prefix %s.%s.">%s</span>' % (h(t["family"]), h(t["variant"]),
                                                                               h(t["variant"]))
        if multi_run:
            name += '<div class="muted small">run %s</div>' % h(t["run"])
        self.w("<td>%s</td>" % name)
        if t["claims"]:
            ids = "<br>".join('<a href="#id-%s" class="mono">%s</a>' % (h(slug(str(c.get("id")))), h(c.get("id")))
                              for c in t["claims"])
            kinds = "<br>".join(h(c.get("kind") or "\u2014") for c in t["claims"])
            sources = "<br>".join(h(c.get("source") or "\u2014") for c in t["claims"])
        elif t["plan_rows"]:
            # No claim recorded (e.g. skipped before the test body ran): show what the plan says.
            plan_note = ' <span class="muted small">(plan)</span>'
            ids = "<br>".join('<a href="#id-%s" class="mono">%s</a>%s' % (h(slug(r["id"])), h(r["id"]), plan_note)
                              for r in t["plan_rows"])
            kinds = "<br>".join(h(r["kind"] or "\u2014") for r in t["plan_rows"])
            sources = "<br>".join(inline_md(r["source"]) or "\u2014" for r in t["plan_rows"])
        else:
            ids = kinds = sources = '<span class="muted">\u2014</span>'
        self.w('<td>%s</td><td>%s</td><td class="small">%s</td>' % (ids, kinds, sources))
        duration = h(fmt_duration(t["duration_ms"]))
        if t["setup_ms"] is not None:
            duration += '<div class="muted" title="fixture set-up (once per process, and under ctest every test is a process: ' \
                        'CUDA context, kernel loading, timer calibration)">set-up %s</div>' % h(fmt_duration(t["setup_ms"]))
        self.w('<td class="small" style="white-space:nowrap">%s</td>' % duration)

        result = watchdog_tags(t)
        if t["mutation"]:
            kind = t["mutation_kind"]
            title = MUTATION_KIND_TITLE.get(kind) if isinstance(kind, str) else None
            result.append('<span class="tag mutation"%s>mutation: %s%s</span>' % (
                ' title="%s"' % h(title) if title else "", h(t["mutation"]), " (%s)" % h(kind) if kind else ""))
        if is_unjudged(t):
            result.append("<div><b>not judged: no baseline</b> <span class=\"small\">(skipped)</span></div>"
                          "<div class=\"small\">%s</div>" % h(t["skip_reason"]))
            if t["skip_location"]:
                result.append('<div class="muted small mono">%s</div>' % h(t["skip_location"]))
        elif t["status"] == "skipped":
            result.append("<div><b>skipped:</b> %s</div>" % h(t["skip_reason"] or "(no reason given)"))
            if t["skip_location"]:
                result.append('<div class="muted small mono">%s</div>' % h(t["skip_location"]))
        for failure in t["failures"]:
            text = failure if len(failure) <= 20000 else failure[:20000] + "\n... (%d more characters)" % (
                len(failure) - 20000)
            result.append("<pre>%s</pre>" % h(text))
        result.extend(evidence_lists(t))
        for note in t["notes"]:
            result.append('<div class="muted small">%s</div>' % h(note))
        tl_note = timeline_note(t)
        if tl_note:
            result.append('<div class="muted small">%s</div>' % h(tl_note))
        self.w("<td>%s</td>" % ("".join(result) or '<span class="muted">\u2014</span>'))
        self.w("<td>%s</td>" % kv_list(t["observations"]))
        claim_ids = sorted({str(c.get("id")) for c in t["claims"]})
        self.w("<td>%s</td></tr>" % self.baseline_list(t["baseline"], claim_ids, self.baseline))
        if timeline_state(t) == "drawn":
            # The drawing takes the table's whole width, in a row of its own under the test's row.
            self.w('<tr class="tl-row"><td colspan="9">%s</td></tr>' % timeline_html(t["timeline"], timeline_anchor(t)))
        if t.get("block_chart"):
            self.w('<tr class="tl-row"><td colspan="9">%s</td></tr>' % block_chart_html(t["block_chart"]))

    @staticmethod
    def baseline_list(entries: List[Dict[str, Any]], claim_ids: Sequence[str],
                      known: Optional[Dict[str, Any]] = None) -> str:
        """One line per baseline comparison: status, key, observed, expected, gating, detail. What the row does
        not carry comes from the source tree's baseline file (known): why the value is gating or not and where
        it comes from (hover), whether a driver may flip it, a finding, and an expected value changed since."""
        if not entries:
            return '<span class="muted">\u2014</span>'
        single = len(claim_ids) == 1 and all(str(e.get("id")) in claim_ids for e in entries)
        file_entries = (known or {}).get("entries") or {}
        file_name = os.path.basename((known or {}).get("path") or "") or "the baseline file"
        out = []
        for e in entries:
            status = str(e.get("status"))
            entry = dig(file_entries, str(e.get("id")), str(e.get("key")))
            entry = entry if isinstance(entry, dict) else {}
            key = h(e.get("key")) if single else "%s/%s" % (h(e.get("id")), h(e.get("key")))
            about = []
            if isinstance(entry.get("why"), str) and entry["why"]:
                about.append("why: %s" % entry["why"])
            if isinstance(entry.get("driver_may_flip"), bool):
                about.append("driver may flip: %s" % ("yes" if entry["driver_may_flip"] else "no"))
            parts = ['<span class="mono%s"%s>%s</span>' % (" why" if about else "", ' title="%s"' % h(
                "%s (%s)\n%s" % (e.get("key"), file_name, "\n".join(about))) if about else "", key)]
            if "observed" in e:
                parts.append('= <span class="mono">%s</span>' % h(e["observed"]))
            facts = []
            if "expected" in e:
                facts.append('expected <span class="mono">%s</span>' % h(e["expected"]))
            gating = e.get("gating")
            reason = e.get("gating_reason") if isinstance(e.get("gating_reason"), str) and e.get("gating_reason") \
                else entry.get("gating_reason") if isinstance(entry.get("gating_reason"), str) else None
            if gating is not None:
                word = "gating" if gating is True else "not gating" if gating is False else "gating %s" % h(gating)
                facts.append('<span class="why" title="%s">%s</span>' % (h(reason), word) if reason else word)
            if entry.get("driver_may_flip") is True:
                facts.append('<span class="why" title="a driver update may legitimately change this value">'
                             'driver may flip</span>')
            if facts:
                parts.append('<span class="muted">(%s)</span>' % ", ".join(facts))
            if isinstance(entry.get("finding"), str) and entry["finding"]:
                parts.append('<span class="tag finding" title="%s">finding</span>' % h(entry["finding"]))
            line = "%s %s" % (badge(status, BASELINE_LABEL.get(status, status)), " ".join(parts))
            if isinstance(e.get("detail"), str) and e.get("detail"):
                line += '<div class="muted small">%s</div>' % h(e["detail"])
            if "expected" in entry:
                # The row was compared with the file of the run's source tree; this file may be newer.
                if "expected" in e:
                    said = None if same_value(entry["expected"], e["expected"]) else "now expects"
                elif status in ("no-baseline", "no-entry", "no-baseline-dir"):
                    said = "now has an entry: expected"
                else:
                    said = "expects"  # a row from the XML, which records the status only
                if said:
                    line += '<div class="muted small">%s in the source tree %s <span class="mono">%s</span></div>' % (
                        h(file_name), said, h(entry["expected"]))
            out.append('<div class="bl">%s</div>' % line)
        return "".join(out)

    # (4b) timelines -----------------------------------------------------------------------------
    def timelines_section(self) -> None:
        self.w('<section id="timelines"><h2>Timelines</h2>')
        tests = sorted(self.tests.values(), key=lambda t: t["ctest_name"])
        states: Dict[str, List[Dict[str, Any]]] = {}
        for t in tests:
            states.setdefault(timeline_state(t), []).append(t)
        drawn = states.get("drawn", [])
        models = {t["ctest_name"]: timeline_model(t["timeline"]) for t in drawn}
        with_items = [t for t in drawn if models[t["ctest_name"]]["items"]]
        ranges_only = [t for t in drawn if not models[t["ctest_name"]]["items"]]
        if drawn:
            self.w('<p class="small muted">Each drawing is under its test\'s row in the family tables, collapsed; '
                   'the links open it.</p>')
        if with_items:
            self.w("<table class='narrow'><tr><th>Test</th><th>Recorded</th><th>Items' extent</th></tr>")
            for t in with_items:
                model = models[t["ctest_name"]]
                extent = fmt_ns(max(it["e"] for it in model["items"]) - min(it["s"] for it in model["items"]))
                self.w('<tr><td>%s %s</td><td class="small">%s</td><td class="small">%s</td></tr>' % (
                    self.timeline_link(t), badge(t["status"]), h(timeline_summary(model)), h(extent)))
            self.w("</table>")
        if ranges_only:
            self.w('<p class="small">NVTX ranges only (%d): %s</p>' % (
                len(ranges_only), ", ".join(self.timeline_link(t) for t in ranges_only)))
        if not drawn:
            self.w('<p class="muted">No test recorded a timeline (observation files of schema 1.1 with tracing '
                   'on).</p>')
        others = []
        if states.get("empty"):
            others.append("%s traced with nothing recorded" % plural(len(states["empty"]), "test"))
        if states.get("off"):
            reasons = sorted({str(dig(t["timeline"], "tracing", "reason") or "no reason given") for t in states["off"]})
            others.append("%s with tracing off (%s)" % (plural(len(states["off"]), "test"), "; ".join(reasons)))
        if states.get("none"):
            others.append("%s without a timeline record" % plural(len(states["none"]), "test"))
        if others:
            self.w('<p class="small muted">%s.</p>' % h("; ".join(others)))
        self.w("</section>")

    @staticmethod
    def timeline_link(test: Dict[str, Any]) -> str:
        label = '<a href="#%s" class="mono">%s</a>' % (h(timeline_anchor(test)), breakable(test["gtest_name"]))
        if test["variant"]:
            label += '<span class="tag">%s</span>' % h(test["variant"])
        return label

    # (5) instruments ----------------------------------------------------------------------------
    def instruments_section(self) -> None:
        self.w('<section id="instruments"><h2>Instruments</h2>')
        if not self.instruments:
            self.w('<p class="muted">No instrument records (they are written by the GPU instrument tests).</p>')
        else:
            self.w("<table><tr><th>ID</th><th>Test</th><th>Figures</th></tr>")
            for ident in sorted(self.instruments):
                record = self.instruments[ident]
                test_name = record.get("test")
                test = self.tests.get(test_name) if isinstance(test_name, str) else None
                test_cell = self.test_link(test) if test else h(test_name or "\u2014")
                figures = record.get("figures") if isinstance(record.get("figures"), dict) else {}
                self.w('<tr><td class="mono"><b>%s</b></td><td>%s</td><td>%s</td></tr>' % (
                    h(ident), test_cell, kv_list(figures)))
            self.w("</table>")
        self.w("</section>")

    # (6) environment ----------------------------------------------------------------------------
    def kv_table(self, title: str, rows: List[Tuple[str, List[Any]]], unset_label: str = "null") -> None:
        self.w("<div><h3>%s</h3>" % h(title))
        if not rows:
            self.w('<p class="muted">not recorded</p></div>')
            return
        multi = len(self.runs) > 1
        head = "".join("<th>%s</th>" % h(r["id"]) for r in self.runs) if multi else "<th>Value</th>"
        self.w("<table class='kv'><tr><th>Key</th>%s</tr>" % head)
        for key, values in rows:
            differs = multi and len({fmt_value(v) for v in values}) > 1
            cells = "".join("<td class='mono'>%s</td>" % ('<span class="unset">%s</span>' % h(unset_label)
                                                          if v is None else h(v)) for v in values)
            self.w("<tr%s><td class='mono'>%s</td>%s</tr>" % (' class="diff-row"' if differs else "", h(key), cells))
        self.w("</table></div>")

    def section_rows(self, key: str) -> List[Tuple[str, List[Any]]]:
        flat = [dict(flatten(r["env"].get(key) or {})) for r in self.runs]
        keys: List[str] = []
        for f in flat:
            keys.extend(k for k in f if k not in keys)
        return [(k, [f.get(k) for f in flat]) for k in keys]

    def environment_section(self) -> None:
        self.w('<section id="environment"><h2>Environment and build</h2><div class="env-grid">')
        variables = self.section_rows("environment")
        variables.sort(key=lambda kv: (all(v is None for v in kv[1]), kv[0]))
        self.kv_table("Environment variables", variables, unset_label="unset")
        self.kv_table("Build", self.section_rows("build"))
        self.kv_table("streamcheck", self.section_rows("streamcheck"))
        cuda_rows = [(k, [cuda_version(v) if isinstance(v, int) else v for v in vals]) for k, vals in
                     self.section_rows("cuda")]
        cuda_rows += [("%s (raw)" % k, vals) for k, vals in self.section_rows("cuda")]
        self.kv_table("CUDA", cuda_rows)
        self.kv_table("Host", self.section_rows("host"))
        self.kv_table("Tracing", self.section_rows("tracing"))
        gpu_rows = self.section_rows("gpu")
        if any(not isinstance(r["env"].get("gpu"), dict) for r in self.runs):
            gpu_rows.insert(0, ("unavailable_reason", [r["env"].get("gpu_unavailable_reason") for r in self.runs]))
        self.kv_table("GPU", gpu_rows)
        self.kv_table("Run", self.section_rows("run") + [("folder", [r["dir"] for r in self.runs])])
        self.w("</div></section>")

    # page ---------------------------------------------------------------------------------------
    def render(self, data_json: str) -> str:
        title = "streamcheck report \u2014 %s" % ", ".join(r["id"] for r in self.runs)
        if self.totals["failed"]:
            title = "[%d FAILED] %s" % (self.totals["failed"], title)
        self.w("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<title>%s</title><style>%s</style></head><body>\n" % (h(title), CSS))
        self.header()
        self.totals_section()
        self.coverage_section()
        self.families_section()
        self.timelines_section()
        self.instruments_section()
        self.environment_section()
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.w("<footer>Generated by %s %s at %s from %s.</footer>\n" % (
            GENERATOR, GENERATOR_VERSION, now, h(", ".join(r["dir"] for r in self.runs))))
        self.w('<script type="application/json" id="data">%s</script>\n' % data_json)
        self.w("<script>%s</script>\n</body></html>\n" % SCRIPT)
        return "".join(self.out)


def finite(data: Any) -> Any:
    """The data with NaN and infinities as strings: JSON.parse rejects them as numbers."""
    if isinstance(data, float) and (data != data or data in (float("inf"), float("-inf"))):
        return repr(data)
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def embed_json(data: Any) -> str:
    """JSON that cannot end its <script> element: every "</" becomes "<\\/" (a valid JSON escape)."""
    text = json.dumps(finite(data), ensure_ascii=True, sort_keys=False, default=str, allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def build_report(run_dirs: Sequence[Path], source: Path) -> Tuple[str, Dict[str, Any]]:
    runs = []
    seen = set()
    for run_dir in run_dirs:
        key = os.path.realpath(str(run_dir))
        if key in seen:
            continue
        seen.add(key)
        runs.append(load_run(run_dir))
    check_same_environment(runs)
    tests, instruments = merge_runs(runs)
    plans = load_plans(source)
    coverage = build_coverage(plans, tests)
    add_planned_placeholders(coverage, plans, tests)
    totals = totals_of(tests)
    baseline = load_baseline(source, baseline_arch(runs[0]["env"], tests.values()))
    data = {
        "generator": {"name": GENERATOR, "version": GENERATOR_VERSION},
        "runs": [{"dir": r["dir"], "id": r["id"], "env": r["env"], "notes": r["notes"]} for r in runs],
        "source": str(source),
        "totals": totals,
        "coverage": coverage,
        "plans": plans,
        # Block records stay in the observation files: the page carries their drawing, not a second copy.
        "tests": [dict(tests[name], block_chart=chart_digest(tests[name].get("block_chart")),
                       timeline=timeline_without_blocks(tests[name].get("timeline"))) for name in sorted(tests)],
        "instruments": instruments,
        "baseline": {k: v for k, v in baseline.items() if k != "entries"},
    }
    page = Page(runs, tests, instruments, coverage, totals, source, plans, baseline)
    return page.render(embed_json(data)), {"totals": totals, "uncovered": coverage["counts"]["uncovered"]}


def write_atomically(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=".%s." % path.name, suffix=".tmp", dir=str(directory))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="\n") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, str(path))
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="streamcheck_report.py",
        description="Write one self-contained HTML report from streamcheck run folders.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="a run's results folder, e.g. build/results/latest or build/results/runs/<id>")
    parser.add_argument("--source", metavar="SRC_DIR",
                        help="the streamcheck source tree, for the test plans tests/*/README.md and the "
                             "baseline file baselines/sm_<cc>.json (default: the folder above reports/)")
    parser.add_argument("-o", "--output", metavar="OUT.html",
                        help="where to write the page (default: report.html in the first RUN_DIR)")
    args = parser.parse_args(argv)

    run_dirs = [Path(d) for d in args.run_dirs]
    source = Path(args.source) if args.source else Path(__file__).resolve().parent.parent
    output = Path(args.output) if args.output else run_dirs[0] / "report.html"
    try:
        if args.source and not source.is_dir():
            raise InputError("%s: the --source folder does not exist" % source)
        text, summary = build_report(run_dirs, source)
        try:
            write_atomically(output, text)
        except OSError as e:
            raise InputError("%s: cannot write the report: %s" % (output, e.strerror or e))
    except InputError as e:
        print("%s: error: %s" % (GENERATOR, e), file=sys.stderr)
        return 2
    t = summary["totals"]
    print("report: %s (%d tests: %d passed, %d failed, %d skipped; %d IDs uncovered)"
          % (output, t["tests"], t["passed"], t["failed"], t["skipped"], summary["uncovered"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
