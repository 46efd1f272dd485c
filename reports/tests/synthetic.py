"""Synthetic run folders and source trees for the report's host tests (standard library only): env.json,
GoogleTest XML and observation files shaped like the suite writes them."""

import json
import re
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

HERE = Path(__file__).resolve().parent
REPORTS = HERE.parent
SCRIPT = REPORTS / "streamcheck_report.py"
if str(REPORTS) not in sys.path:
    sys.path.insert(0, str(REPORTS))

UUID_A = "GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
UUID_B = "GPU-ffffffff-4f50-6172-8394-a5b6c7d8e9f0"
SCRIPT_TEXT = "<script>alert('x')</script>"


def env_doc(run_id, uuid=UUID_A, driver=13000, runtime=13000, commit="c9f25ae7e95e168af0e38dd402fd67bef72247ab",
            gpu=True):
    doc = {
        "schema": "streamcheck.env",
        "schema_version": "1.0.0",
        "run": {"id": run_id, "started_utc": "2026-01-01T00:00:00Z", "finished_utc": "2026-01-01T00:01:00Z"},
        "streamcheck": {"version": "0.1.0", "commit": commit, "dirty": False, "source_dir": "/src"},
        "build": {"build_type": "RelWithDebInfo", "cuda_architectures": "90", "generator": "Ninja"},
        "host": {"hostname": "runner", "machine": "x86_64", "os": "Linux"},
        "cuda": {"driver_version": driver, "runtime_version": runtime},
        "environment": {"CUDA_LAUNCH_BLOCKING": None, "STREAMCHECK_DEVICE": "0"},
        "tracing": {"enabled": False, "reason": "CUPTI tracing is not part of this build yet"},
        "instruments": {"INST-01": {"id": "INST-01", "test": "instruments.Instruments.TickIsMeasured",
                                    "figures": {"tick_ns": 32, "reads": 4096}}},
    }
    if gpu:
        doc["gpu"] = {"name": "NVIDIA H200", "uuid": uuid, "compute_capability": "9.0", "arch": "sm_90",
                      "sm_count": 132, "async_engine_count": 3, "concurrent_kernels": 1,
                      "priority_range": {"least": 0, "greatest": -5}, "timer_tick_ns": 32}
    else:
        doc["gpu"] = None
        doc["gpu_unavailable_reason"] = "no usable CUDA device: cudaGetDeviceCount -> cudaErrorInsufficientDriver"
    return doc


def gtest_xml(suite, name, failures=(), skip=None, properties=None, seconds="0.012", notrun=False):
    """One GoogleTest 1.12-shaped XML document with one <testcase>."""
    children = []
    if properties:
        children.append("<properties>" + "".join(
            "<property name=%s value=%s/>" % (quoteattr(k), quoteattr(str(v))) for k, v in properties.items())
            + "</properties>")
    for text in failures:
        children.append('<failure message=%s type=""><![CDATA[%s]]></failure>' % (quoteattr(text), text))
    if skip is not None:
        children.append("<skipped message=%s><![CDATA[%s]]></skipped>" % (quoteattr(skip), skip))
    status = "notrun" if notrun else "run"
    result = "skipped" if skip is not None else "suppressed" if notrun else "completed"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" name="AllTests">\n'
            '  <testsuite name=%s tests="1">\n'
            '    <testcase name=%s file="/src/tests/x_test.cpp" line="10" status="%s" result="%s" time=%s '
            'classname=%s>%s</testcase>\n  </testsuite>\n</testsuites>\n'
            % (quoteattr(suite), quoteattr(name), status, result, quoteattr(seconds), quoteattr(suite),
               "".join(children)))


def observation(ctest, test, claims, observations=None, baseline=None, outcome="passed", mutation=None):
    doc = {"schema": "streamcheck.observation", "schema_version": "1.0.0", "test": test, "ctest_name": ctest,
           "claims": [{"id": i, "kind": k, "source": s} for i, k, s in claims],
           "observations": observations or {}, "baseline": baseline or [],
           "device": {"index": 0, "name": "NVIDIA H200", "compute_capability": 90}, "outcome": outcome,
           "duration_ms": 3.25, "setup_ms": 1.5}
    if mutation:
        doc["mutation"] = mutation
    return doc


PLAN = """# priority_flags: test plan

The plan lists every catalog ID of the family. (This line | has a bar but is not a table.)

| ID | Claim | Kind | Source | Tests | Skip rule |
|----|-------|------|--------|-------|-----------|
| PRIO-01 | Range is ordered | documented | RT `cudaDeviceGetStreamPriorityRange` | `PriorityFlags.RangeIsOrdered` | no GPU |
| PRIO-02 | Driver range equals runtime range | documented | DRV `cuCtxGetStreamPriorityRange` | `PriorityFlags.DriverRangeMatches` | no GPU |
| PRIO-03 | Clamping | documented | RT `cudaStreamCreateWithPriority` | `PriorityFlags.ClampsOutOfRange` | no GPU |
| PRIO-04 | Driver clamping | documented | DRV `cuStreamCreateWithPriority` | \u2014 | |
| PRIO-05 | In-range values read back | documented | RT `cudaStreamGetPriority` | `PriorityFlags.NeverRan` | |
| PRIO-07 | Special handles | observed | not stated in docs | `PriorityFlags.SpecialHandles` | |
| PRIO-08 *(retired)* | Old claim | documented | RT | \u2014 | |

Text after the table.
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_source(root):
    """A source tree with one plan (priority_flags) and one family folder without a plan (unit)."""
    write(root / "tests" / "priority_flags" / "README.md", PLAN)
    write(root / "tests" / "priority_flags" / "CMakeLists.txt", "# family\n")
    write(root / "tests" / "unit" / "CMakeLists.txt", "# family\n")
    return root


def make_run(root, run_id="20260101T000000Z-1", **env_args):
    """A run with a pass, a failure, a skip, a ptds pair, a differing baseline and a host test."""
    run = root / run_id
    write(run / "env.json", json.dumps(env_doc(run_id, **env_args), indent=2))
    g = run / "gtest"
    write(g / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
        "PriorityFlags", "RangeIsOrdered",
        properties={"catalog_id": "PRIO-01", "verdict_kind": "documented", "doc_source": "RT range",
                    "least": 0, "greatest": -5, "baseline.PRIO-01.least": "match"}))
    write(g / "priority_flags.PriorityFlags.DriverRangeMatches.xml", gtest_xml(
        "PriorityFlags", "DriverRangeMatches",
        failures=["/src/tests/priority_test.cpp:61\nExpected equality of these values:\n  least_\n    Which is: 0\n"
                  "  seen " + SCRIPT_TEXT,
                  "/src/tests/priority_test.cpp:62\nsecond failure </pre> here"],
        properties={"catalog_id": "PRIO-02", "verdict_kind": "documented", "doc_source": "DRV range"}))
    write(g / "priority_flags.PriorityFlags.ClampsOutOfRange.xml", gtest_xml(
        "PriorityFlags", "ClampsOutOfRange",
        skip="/src/fixtures/src/gpu_test.cpp:22\nstream priorities are not supported on this device"))
    special = {"catalog_id": "PRIO-07", "verdict_kind": "observed", "doc_source": "not stated in docs"}
    write(g / "priority_flags.PriorityFlags.SpecialHandles.xml", gtest_xml("PriorityFlags", "SpecialHandles",
                                                                          properties=special))
    write(g / "priority_flags.ptds.PriorityFlags.SpecialHandles.xml", gtest_xml("PriorityFlags", "SpecialHandles",
                                                                               properties=special))
    write(g / "unit.Handle.OwnedHandleIsReleasedOnce.xml", gtest_xml("Handle", "OwnedHandleIsReleasedOnce"))

    o = run / "observations"
    baseline = [{"id": "PRIO-07", "key": "legacy.priority", "observed": 0, "expected": 0, "gating": True,
                 "status": "match"},
                {"id": "PRIO-07", "key": "per_thread.flags", "observed": 1, "expected": 0, "gating": False,
                 "status": "differs", "detail": "first sm_90 value to confirm"}]
    for prefix in ("priority_flags.", "priority_flags.ptds."):
        ctest = prefix + "PriorityFlags.SpecialHandles"
        write(o / (ctest + ".json"), json.dumps(observation(
            ctest, "PriorityFlags.SpecialHandles", [("PRIO-07", "observed", "not stated in docs")],
            {"legacy.priority": 0, "per_thread.flags": 1, "note": "</script><b>bold</b>"}, baseline)))
    write(o / "priority_flags.PriorityFlags.RangeIsOrdered.json", json.dumps(observation(
        "priority_flags.PriorityFlags.RangeIsOrdered", "PriorityFlags.RangeIsOrdered",
        [("PRIO-01", "documented", "RT range")], {"least": 0, "greatest": -5, "levels": 6},
        [{"id": "PRIO-01", "key": "least", "observed": 0, "expected": 0, "gating": True, "status": "match"}],
        mutation="PRIO-01")))
    write(run / "instruments" / "INST-01.json", json.dumps(
        {"id": "INST-01", "test": "instruments.Instruments.TickIsMeasured",
         "figures": {"tick_ns": 32, "max_step_ns": 64, "cupti_active": False}}))
    return run


def run_cli(*args):
    return subprocess.run([sys.executable, str(SCRIPT)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=60)


def embedded_data(page):
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert match, "no embedded data block"
    return match.group(1), json.loads(match.group(1))
