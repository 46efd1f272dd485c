"""The one reader of a run folder (build/results/runs/<id>/): env.json, entries/*.json (each ctest entry's list
of the tests it was about to run), gtest/*.xml (GoogleTest's own XML, one file per entry: one test, or in fast
mode many), observations/*.json and instruments/*.json, read into plain dictionaries. The report, the run comparison, the gate, the baseline
writer and the ci/ scripts all read runs through load_run().

A folder that is not a run (missing, no env.json, env.json unreadable or of another schema) is an InputError.
Any other file that cannot be read (truncated JSON or XML, a schema version this reader does not know, a
field of the wrong type, a file too large) does not stop the reader: the file is left out and the run's
"problems" list says which file and why, so that a page can say what was wrong and a gate can refuse the run.
Python 3.9+ standard library only.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .common import COUNT_LABEL, InputError, as_ns, dig, fmt_ns, fmt_value, type_name

ENV_SCHEMA = "streamcheck.env"
OBSERVATION_SCHEMA = "streamcheck.observation"
BASELINE_SCHEMA = "streamcheck.baseline"
SUPPORTED_SCHEMA_MAJOR = "1"

# A result file larger than this is not read (a runaway writer, or not a result file at all).
MAX_FILE_BYTES = 64 * 1024 * 1024

# Properties that the fixtures record for every claim; everything else is an observed value.
CLAIM_PROPERTIES = ("catalog_id", "verdict_kind", "doc_source")
# Properties of the test's evidence (observation schema 1.3), not observed values.
EVIDENCE_PROPERTIES = ("mutation", "mutation_kind", "watchdog", "invalid_check")
# Attributes GoogleTest itself writes on <testcase>; any other attribute is a recorded property.
TESTCASE_ATTRIBUTES = {"name", "file", "line", "status", "result", "time", "timestamp", "classname",
                       "type_param", "value_param"}
# The sections of env.json that must be objects (or null) when present.
ENV_OBJECTS = ("run", "streamcheck", "build", "host", "cuda", "environment", "gpu", "tracing", "instruments",
               "driver")
# Families whose tests run on the host only (tests/unit); every other family's tests need a GPU.
HOST_FAMILIES = frozenset({"unit"})
# The skip kind of a test that ran beside another context on the GPU (observation schema 1.12): nothing it
# showed is judged, and its outcome is its own (outcome()).
SHARED_GPU = "shared_gpu"
# The outcomes every count of a run's tests has, in this order: the report's totals, the gate's counts, JUnit.
OUTCOMES = tuple(COUNT_LABEL)


def read_text(path: Path, what: str) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError("%s: %s is %d bytes, more than the %d this reader accepts" % (path, what, size,
                                                                                           MAX_FILE_BYTES))
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


def not_run_after_process_ended(test: Dict[str, Any]) -> bool:
    """The test never ran because its process ended, or was left unusable, before it (the reason is in
    test["not_run_reason"]); neither a failure nor a pass."""
    return test["status"] == "notrun" and bool(test["not_run_reason"])


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
        "skip_kind": None,
        "skip_location": None,
        "failures": [],
        "not_run_reason": None,
        "ended_process": None,
        "unjudged_claims": [],
        "gpu_sharing": None,
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
        "setup_steps": [],
        "first_in_process": None,
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
        "unreadable": False,
        "observation_unreadable": False,
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


def parse_gtest_xml(path: Path, stem: str, listed: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """The tests of one GoogleTest XML file, named after its ctest entry `stem`; `listed`: the ctest names its
    process said it would run (entries/<stem>.json), which name the tests of a process that held several
    families."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError("%s: the XML file is %d bytes, more than the %d this reader accepts"
                             % (path, size, MAX_FILE_BYTES))
        root = ET.fromstring(path.read_bytes())
    except ET.ParseError as e:
        raise InputError("%s: invalid XML: %s" % (path, e))
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror or e))
    except (ValueError, RecursionError) as e:
        raise InputError("%s: invalid XML: %s" % (path, e))
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
        # The file is named after its ctest entry: <prefix><Suite>.<Test>, or <prefix>fast for many tests, whose
        # process listed each test's ctest name.
        named = [n for n in listed if n.endswith("." + gname)]
        if len(named) == 1:
            ctest = named[0]
        elif stem.endswith("." + gname) or stem == gname:
            ctest = stem
        elif stem.endswith(".fast"):
            ctest = stem[: -len("fast")] + gname
        elif len(cases) == 1:
            ctest = stem
        else:
            ctest = "%s.%s" % (stem.split(".", 1)[0], gname)
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
    """RecordProperty values: claim, observed values, baseline verdicts, mutation, and the evidence of latches
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
    # Schema 1.3: latches whose watchdog fired, and latch checks that proved nothing. Older files have neither.
    # Before 1.14 a fired latch's number was under "gate" (test_row.fired_line reads both).
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
    # Schema 1.6: where set-up went, as [step, milliseconds] pairs, and whether the test was its process's first.
    steps = []
    for entry in checked_list(doc, "setup_steps_ms", list, "a [step, milliseconds] pair", path):
        if (len(entry) != 2 or not isinstance(entry[0], str) or not isinstance(entry[1], (int, float))
                or isinstance(entry[1], bool)):
            raise InputError("%s: every entry of \"setup_steps_ms\" must be a [step, milliseconds] pair" % path)
        steps.append((entry[0], float(entry[1])))
    test["setup_steps"] = steps
    test["first_in_process"] = check_member(doc, "first_in_process", bool, path, "the observation")
    test["instrument"] = check_member(doc, "instrument", dict, path, "the observation")
    test["device"] = check_member(doc, "device", dict, path, "the observation")
    test["timeline"] = check_member(doc, "timeline", dict, path, "the observation")
    # Schema 1.5: per-block records of the scheduling tests, drawn as SM x time.
    test["block_chart"] = check_member(doc, "block_chart", dict, path, "the observation")
    test["skip_kind"] = check_member(doc, "skip_kind", str, path, "the observation")
    test["unjudged_claims"] = [{"id": str(u.get("id")), "reason": str(u.get("reason") or "")}
                               for u in checked_list(doc, "unjudged_claims", dict, "an object", path)]
    test["ended_process"] = check_member(doc, "ended_process", str, path, "the observation")
    if test["ended_process"]:
        test["notes"].append("ended its process: %s" % test["ended_process"])
    merge_sharing(test, doc, path)
    merge_outcome(test, doc, path)


def merge_sharing(test: Dict[str, Any], doc: Dict[str, Any], path: Path) -> None:
    """Schema 1.12 gpu_sharing: whether the test ran beside another context on the GPU, and the evidence. A file
    of 1.11 recorded the same finding as gpu_shared (a block of one grid stopped too long) and failed the test on
    the rows it made invalid: read as the same outcome, a test not judged."""
    test["gpu_sharing"] = check_member(doc, "gpu_sharing", dict, path, "the observation")
    old = check_member(doc, "gpu_shared", dict, path, "the observation")
    if test["gpu_sharing"] is None and old is not None:
        test["gpu_sharing"] = {"shared": True, "widest_gap_ns": as_ns(old.get("widest_gap_ns")),
                               "gap_bound_ns": as_ns(old.get("bound_ns")),
                               "gap_where": "a block of grid %s" % fmt_value(old.get("grid"))}
        test["skip_kind"] = SHARED_GPU


def merge_outcome(test: Dict[str, Any], doc: Dict[str, Any], path: Path) -> None:
    """The observation's outcome where it knows better than the XML: a test not judged for a shared GPU (whatever
    GoogleTest recorded: failures from before the sharing was known stay, as evidence), a test not run, and every
    test of a process that ended before GoogleTest wrote its XML."""
    outcome = doc.get("outcome")
    if test["skip_kind"] == SHARED_GPU:
        if test["status"] == "failed":
            test["notes"].append("GoogleTest's XML says failed: its failures came before the sharing was known, "
                                 "so they are evidence, not a verdict")
        test["status"] = "skipped"
        test["failures"] = test["failures"] or [str(f) for f in checked_list(doc, "failures", str, "a string", path)]
        test["skip_reason"] = check_member(doc, "skip_reason", str, path, "the observation") or \
            "not judged: the GPU was shared with another context: %s" % sharing_text(test)
    elif outcome == "not_run":
        # An earlier test left the process unusable; GoogleTest's XML calls this one skipped.
        test["status"] = "notrun"
        test["not_run_reason"] = check_member(doc, "skip_reason", str, path, "the observation") or "not run"
        test["skip_reason"] = None
    elif test["xml_file"] is None:
        # The process ended before GoogleTest wrote its XML: the observation file has the result.
        test["status"] = outcome if outcome in ("passed", "failed", "skipped") else "notrun"
        test["failures"] = [str(f) for f in checked_list(doc, "failures", str, "a string", path)]
        if test["status"] == "skipped":
            test["skip_reason"] = check_member(doc, "skip_reason", str, path, "the observation")
        test["notes"].append("no GoogleTest XML (its process ended before writing it); the observation file "
                             "says %s" % fmt_value(outcome))
    elif isinstance(outcome, str) and outcome != test["status"]:
        test["notes"].append("the observation file says %s, the XML says %s" % (outcome, test["status"]))


def run_mode(env: Dict[str, Any]) -> str:
    """How the run's tests were run (env.json 1.2 run.mode): "isolated" (one process per test; also every run
    before 1.2) or "fast" (one process per family executable and environment variant)."""
    mode = dig(env, "run", "mode")
    return mode if isinstance(mode, str) and mode else "isolated"


def load_entries(run_dir: Path, problems: List[str]) -> Dict[str, List[str]]:
    """Each ctest entry's list (<run>/entries/<entry>.json): entry -> the ctest names of the tests its process
    was about to run. A listed test with no result was asked for and never finished."""
    entries: Dict[str, List[str]] = {}
    for path in result_files(run_dir / "entries", "*.json", recursive=True):
        try:
            doc = read_json(path, "entry list")
            if not isinstance(doc, dict):
                raise InputError("%s: an entry list must be a JSON object" % path)
            tests = checked_list(doc, "tests", str, "a string", path)
            entry = doc.get("entry") if isinstance(doc.get("entry"), str) and doc.get("entry") else \
                name_of(path, run_dir / "entries")
        except InputError as e:
            problems.append(str(e))
            continue
        entries[entry] = list(tests)
    return entries


def add_tests_without_result(run: Dict[str, Any]) -> None:
    """Tests an entry listed that left neither XML nor observation file: not run, and why as far as the folder
    tells (a test of the same entry that ended the process, else a crash or a timeout)."""
    tests = run["tests"]
    for entry, names in sorted(run["entries"].items()):
        ender = next((t for t in (tests.get(n) for n in names) if t is not None and t["ended_process"]), None)
        for name in names:
            if name in tests:
                continue
            test = new_test(name, None)
            test["run"] = run["id"]
            test["not_run_reason"] = ("%s ended the process: %s" % (ender["ctest_name"], ender["ended_process"]) if ender else
                                      "its process (ctest entry %s) ended without a result for it: a crash or a "
                                      "timeout?" % entry)
            test["notes"].append("not run: " + test["not_run_reason"])
            tests[name] = test


def load_env(run_dir: Path) -> Dict[str, Any]:
    """env.json of a run folder, checked; an InputError when the folder is not a usable run folder."""
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
    for key in ENV_OBJECTS:
        check_member(env, key, dict, env_path, "env.json")
    check_member(env, "gpu_unavailable_reason", str, env_path, "env.json")
    for ident, record in (env.get("instruments") or {}).items():
        if not isinstance(record, dict):
            raise InputError("%s: instruments.%s in env.json must be an object" % (env_path, ident))
    return env


def name_of(path: Path, folder: Path) -> str:
    """The ctest name (or entry name) a result file of `folder` is named after: its path below the folder without
    its suffix. A parameterized test's name carries '/' (Prefix/Suite.Test/Param), so its files lie in subfolders."""
    return path.relative_to(folder).with_suffix("").as_posix()


def result_files(folder: Path, pattern: str, recursive: bool = False) -> List[Path]:
    """Regular files of a run's subfolder, sorted; none when the folder is absent."""
    if not folder.is_dir():
        return []
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    return sorted(p for p in found if p.is_file())


def load_run(run_dir: Path) -> Dict[str, Any]:
    """The run as {dir, id, env, tests, instruments, notes, problems, xml_files, observation_files}.
    tests maps the ctest name to the test's record (new_test()); problems lists the files left out."""
    run_dir = Path(run_dir)
    env = load_env(run_dir)
    run_id = dig(env, "run", "id")
    run_id = str(run_id) if run_id else run_dir.resolve().name
    run: Dict[str, Any] = {"dir": str(run_dir), "id": run_id, "env": env, "tests": {}, "instruments": {},
                           "notes": [], "problems": [], "xml_files": 0, "observation_files": 0,
                           "mode": run_mode(env), "entries": {}}
    problems: List[str] = run["problems"]
    run["entries"] = load_entries(run_dir, problems)

    tests: Dict[str, Dict[str, Any]] = run["tests"]
    gtest_dir = run_dir / "gtest"
    for path in result_files(gtest_dir, "*.xml", recursive=True):
        run["xml_files"] += 1
        stem = name_of(path, gtest_dir)
        try:
            found = parse_gtest_xml(path, stem, run["entries"].get(stem, ()))
        except InputError as e:
            problems.append(str(e))
            # The test ran (its XML exists) but its result cannot be read: it counts as not run.
            test = new_test(stem, None)
            test["xml_file"] = str(path)
            test["unreadable"] = True
            test["notes"].append("its GoogleTest XML could not be read: %s" % e)
            found = [test]
        for test in found:
            test["run"] = run_id
            tests[test["ctest_name"]] = test

    for path in result_files(run_dir / "observations", "*.json", recursive=True):
        run["observation_files"] += 1
        try:
            doc = read_json(path, "observation")
            check_schema(doc, path, OBSERVATION_SCHEMA, "observation")
            ctest = doc.get("ctest_name")
            ctest = ctest if isinstance(ctest, str) and ctest else name_of(path, run_dir / "observations")
            test = tests.get(ctest)
            if test is None:
                gname = doc.get("test") if isinstance(doc.get("test"), str) else None
                test = new_test(ctest, gname)
                test["run"] = run_id
            # Merged into a copy: a file that turns out malformed half-way leaves the test as the XML had it.
            merged = copy.deepcopy(test)
            merge_observation(merged, doc, path)
            tests[ctest] = merged
        except InputError as e:
            problems.append(str(e))
            test = tests.get(name_of(path, run_dir / "observations"))
            if test is not None:
                test["notes"].append("its observation file could not be read: %s" % e)
                test["observation_unreadable"] = True

    instruments: Dict[str, Any] = run["instruments"]
    for ident, record in sorted((env.get("instruments") or {}).items()):
        instruments[str(ident)] = dict(record)
    for path in result_files(run_dir / "instruments", "*.json"):
        try:
            doc = read_json(path, "instrument record")
            if not isinstance(doc, dict):
                raise InputError("%s: an instrument record must be a JSON object" % path)
            check_member(doc, "figures", dict, path, "the instrument record")
        except InputError as e:
            problems.append(str(e))
            continue
        ident = doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else path.stem
        instruments[ident] = doc

    add_tests_without_result(run)
    counted = dig(env, "run", "gtest_xml_files")
    if isinstance(counted, int) and not isinstance(counted, bool) and counted != run["xml_files"]:
        run["notes"].append("env.json counts %d GoogleTest XML file(s); %d found" % (counted, run["xml_files"]))
    if dig(env, "run", "finished_utc") is None:
        run["notes"].append("run %s has no finish time: its finish step (streamcheck.run.finish) did not run; "
                            "the run was interrupted or is still running" % run_id)
    return run


# ------------------------------------------------------------------------------------------------
# Questions the ci/ scripts ask of a run
# ------------------------------------------------------------------------------------------------

def claim_ids(test: Dict[str, Any]) -> List[str]:
    return [str(c.get("id")) for c in test["claims"] if c.get("id")]


def claims_kind(test: Dict[str, Any], kind: str) -> bool:
    """Whether any of the test's claims is of the kind (documented, observed)."""
    return any(c.get("kind") == kind for c in test["claims"])


def outcome(test: Dict[str, Any]) -> str:
    """How the test ended, as every count and label says it: its status, except that a test not judged for a
    shared GPU (skipped by the fixture, whatever its XML says) is "shared_gpu", and a test a plan names that the
    run never listed (the report's placeholder, not a test of the run) is "planned". "notrun" is a test an entry
    was asked to run that has no result."""
    if test["status"] == "skipped" and test["skip_kind"] == SHARED_GPU:
        return SHARED_GPU
    if test.get("planned_only"):
        return "planned"
    return test["status"]


def sharing_text(test: Dict[str, Any]) -> str:
    """Why a test was not judged for a shared GPU, one line: the fixture's reason, which names the other
    processes and the widest stop of the test's own kernels; without one (a file of 1.11), the same from the
    evidence's fields."""
    sharing = test["gpu_sharing"] if isinstance(test["gpu_sharing"], dict) else {}
    if sharing.get("reason"):
        return str(sharing["reason"])
    others = sharing.get("other_processes") if isinstance(sharing.get("other_processes"), list) else []
    parts = ["pid %s %s (seen at %s)" % (fmt_value(p.get("pid")), fmt_value(p.get("name")), fmt_value(p.get("seen")))
             for p in others if isinstance(p, dict)]
    gap, bound = as_ns(sharing.get("widest_gap_ns")), as_ns(sharing.get("gap_bound_ns"))
    if gap is not None:
        parts.append("widest stop %s%s%s" % (fmt_ns(gap), " at %s" % sharing["gap_where"] if sharing.get("gap_where")
                                             else "", " (bound %s)" % fmt_ns(bound) if bound is not None else ""))
    return "; ".join(parts) or test["skip_reason"] or "no reason recorded"


def count_outcomes(tests: Iterable[Dict[str, Any]]) -> Dict[str, int]:
    """{outcome: count} over OUTCOMES for the tests of a run (placeholders of the plans are not counted)."""
    counts = {key: 0 for key in OUTCOMES}
    for test in tests:
        key = outcome(test)
        if key in counts:
            counts[key] += 1
    return counts


def tests_claiming(run: Dict[str, Any], catalog_id: str) -> Dict[str, Dict[str, Any]]:
    """ctest name -> test, for the tests that claim catalog_id."""
    return {name: t for name, t in run["tests"].items() if catalog_id in claim_ids(t)}


def unexpected_watchdogs(test: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Fired latches whose firing was not expected (a failure); with no observation file, the XML's summary
    counts as one unexpected firing, since it cannot say otherwise."""
    fired = [w for w in test["watchdog"] if w.get("expected") is not True]
    if not test["watchdog"] and test["watchdog_summary"]:
        fired = [{"latch": None, "held": None, "summary": test["watchdog_summary"], "expected": None}]
    return fired


def nothing_tested_on_gpu(env: Dict[str, Any], tests: Dict[str, Dict[str, Any]]) -> Optional[str]:
    """Why no test of the run judged anything on a GPU (none passed or failed), or None when some did. The
    gate, the report and run_suite all say it in these words."""
    gpu_tests = [t for t in tests.values() if t["family"] not in HOST_FAMILIES]
    if not isinstance(env.get("gpu"), dict):
        why = "no GPU was used: %s" % (env.get("gpu_unavailable_reason") or "no reason recorded")
    elif any(t["status"] in ("passed", "failed") for t in gpu_tests):
        return None
    elif not gpu_tests:
        why = "the run holds no GPU test"
    else:
        reasons: Dict[str, int] = {}
        for t in gpu_tests:
            key = t["skip_reason"] if t["status"] == "skipped" and t["skip_reason"] else t["status"]
            reasons[key] = reasons.get(key, 0) + 1
        reason, count = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        why = "all %d GPU tests skipped or did not run; %d of them: %s" % (len(gpu_tests), count, reason)
    return "nothing was tested on a GPU (%s)" % why


def gpu_facts(env: Dict[str, Any]) -> Dict[str, Any]:
    """What identifies a run's environment, for comparisons and summaries (missing values are None)."""
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    return {
        "gpu": gpu.get("name"),
        "uuid": gpu.get("uuid"),
        "arch": gpu.get("arch"),
        "driver": dig(env, "cuda", "driver_version"),
        "driver_release": dig(env, "driver", "version"),
        "kernel_module": dig(env, "driver", "kernel_module", "version"),
        "runtime": dig(env, "cuda", "runtime_version"),
        "commit": dig(env, "streamcheck", "commit"),
        "tracing": dig(env, "tracing", "enabled"),
    }
