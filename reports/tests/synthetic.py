"""Synthetic run folders and source trees for the report's host tests (standard library only): env.json,
GoogleTest XML and observation files shaped like the suite writes them."""

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

HERE = Path(__file__).resolve().parent
REPORTS = HERE.parent
SCRIPT = REPORTS / "streamcheck_report.py"

RECORDED_RUN = HERE / "data" / "h100-fast-run.tgz"
UUID_A = "GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
UUID_B = "GPU-ffffffff-4f50-6172-8394-a5b6c7d8e9f0"
SCRIPT_TEXT = "<script>alert('x')</script>"


def env_doc(run_id, uuid=UUID_A, driver=13000, runtime=13000, commit="c9f25ae7e95e168af0e38dd402fd67bef72247ab",
            gpu=True, release="580.95.05"):
    doc = {
        "schema": "streamcheck.env",
        "schema_version": "1.0.0",
        "run": {"id": run_id, "started_utc": "2026-01-01T00:00:00Z", "finished_utc": "2026-01-01T00:01:00Z"},
        "streamcheck": {"version": "0.1.0", "commit": commit, "dirty": False, "source_dir": "/src"},
        "build": {"build_type": "RelWithDebInfo", "cuda_architectures": "90", "generator": "Ninja"},
        "host": {"hostname": "runner", "machine": "x86_64", "os": "Linux"},
        "cuda": {"driver_version": driver, "runtime_version": runtime},
        "driver": {"version": release, "source": "nvidia-smi",
                   "kernel_module": {"version": release, "flavor": "open", "line": "NVRM version: ..."}}
        if release else {"version": None, "source": None, "kernel_module": None, "reason": "neither answered"},
        "environment": {"CUDA_LAUNCH_BLOCKING": None, "CUDA_VISIBLE_DEVICES": "0"},
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
    """streamcheck_report.py with `args`, run in this process (its main(), its exit status, what it printed): a
    Python start per call made the report's tests slow. run_script runs it as a command."""
    import streamcheck_report  # reports/ is on the tests' path; imported when first used
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = streamcheck_report.main([str(a) for a in args])
        except SystemExit as e:  # argparse's refusals
            status = e.code if isinstance(e.code, int) else 1
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def run_script(*args):
    """streamcheck_report.py with `args`, as a command in a process of its own."""
    return subprocess.run([sys.executable, str(SCRIPT)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=60)


def embedded_data(page):
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert match, "no embedded data block"
    return match.group(1), json.loads(match.group(1))


def details_of(text):
    """What a test's details file (details/<ctest name>.js) hands the page: {row, html, test}."""
    match = re.fullmatch(r"// [^\n]*\nstreamcheckDetails\((.*)\);\n", text, re.S)
    assert match, "not a details file: %r" % text[:200]
    return json.loads(match.group(1))


def family_of(text):
    """What a family's file (families/<family>.js) hands the page: {family, html, tests}."""
    match = re.fullmatch(r"// [^\n]*\nstreamcheckFamily\((.*)\);\n", text, re.S)
    assert match, "not a family's file: %r" % text[:200]
    return json.loads(match.group(1))


def files_beside(page_path):
    """The families' and the details' files beside a page: path from the page -> text, as render_report returns
    them."""
    folder = Path(page_path).parent
    return {str(path.relative_to(folder)): path.read_text(encoding="utf-8")
            for part in ("families", "details") for path in (folder / part).glob("*.js")}


def opened_page(page, files):
    """The page as a reader sees it with every family and every test's row opened: in each family's table, its
    rows, and under each row the markup of its details (files: path from the page -> text of each family's and
    each details file), where report.js puts them."""
    def with_rows(family):
        return family.group(0) + family_of(files["families/%s.js" % family.group(1)])["html"]

    def with_details(row):
        text = files["details/%s.js" % row.group(1)]
        return row.group(0) + '<tr class="details-row"><td colspan="4">%s</td></tr>' % details_of(text)["html"]
    page = re.sub(r'<details class="family" id="f-([^"]+)">.*?<tbody>', with_rows, page, flags=re.S)
    return re.sub(r'<tr id="t-([^"]+)" data-status=.*?</tr>', with_details, page, flags=re.S)


def full_data(page, files):
    """The page's data block with "tests": each test's whole record (from its details file), in name order."""
    _, data = embedded_data(page)
    names = sorted(t["ctest_name"] for name, text in files.items() if name.startswith("families/")
                   for t in family_of(text)["tests"])
    records = {t["ctest_name"]: t for t in (details_of(text)["test"] for name, text in files.items()
                                            if name.startswith("details/"))}
    data["tests"] = [records[name] for name in names]
    return data


def make_drawn_run(root):
    """A small run with one test whose timeline and block chart are drawn (hostile text in its labels): a report of
    it writes every kind of file beside its page."""
    run = make_run(root)
    ctest = "harness.Timeline.Drawn"
    write(run / "gtest" / (ctest + ".xml"), gtest_xml("Timeline", SCRIPT_TEXT))
    doc = observation(ctest, "Timeline.Drawn", [])
    doc["timeline"] = {"tracing": {"enabled": True}, "clock": "cupti", "items": [
        {"kind": "kernel", "label": SCRIPT_TEXT, "stream": "s1", "start_ns": 1000, "end_ns": 9000},
        {"kind": "memcpy", "label": "copy", "stream": "s2", "start_ns": 3000, "end_ns": 5000, "copy_kind": "HtoD"}],
        "ranges": [{"name": "</svg>", "start_ns": 0, "end_ns": 10000}], "host_events": []}
    doc["block_chart"] = {"priority_least": 0, "priority_greatest": -5, "grids": [
        {"label": "low", "priority": 0, "records": [[b * 10, b * 10 + 900, b % 132, b % 132, 0] for b in range(3000)]}]}
    write(run / "observations" / (ctest + ".json"), json.dumps(doc))
    return run


def make_heavy_run(root, run_id="20260102T000000Z-9"):
    """A run shaped like a full H100 run, heavier than most: 79 tests with timelines (10 to 60 items, NVTX ranges,
    host events); 16 scheduling tests with 1100-block kernels and 4224-block charts; 7 instrument tests with
    264-block kernels. For the page's size budget."""
    run = Path(root) / run_id
    write(run / "env.json", json.dumps(env_doc(run_id)))
    T0 = 1795317993000000000
    def timeline(n_items, blocks_per_kernel):
        items = []
        t = T0 + 5000000
        for i in range(n_items):
            kind = ["kernel", "memcpy", "memset"][i % 3] if i % 4 else "kernel"
            it = {"kind": kind, "label": "k%d" % i if i % 5 else "", "stream": "s%d" % (i % 4), "stream_id": 10 + i % 4,
                  "start_ns": t, "end_ns": t + 200000, "correlation_id": i, "name": "_Z11spin_kernelPvm" if kind == "kernel" else "",
                  "channel_id": i % 8, "channel_type": "compute"}
            if kind != "kernel":
                it.update(bytes=8 << 20, copy_kind="HtoD", src_kind="pinned", dst_kind="device")
            elif blocks_per_kernel:
                it["blocks"] = [{"t0_ns": t + 1000 * (b // 132), "t1_ns": t + 1000 * (b // 132) + 50000 + b, "max_gap_ns": 64,
                                 "sm_begin": b % 132, "sm_end": b % 132} for b in range(blocks_per_kernel)]
            items.append(it)
            t += 150000
        ranges = [{"name": "Suite.Test", "domain": "streamcheck", "start_ns": T0, "end_ns": t + 100000}]
        ranges += [{"name": "enqueue %d" % i, "domain": "streamcheck", "start_ns": T0 + 5000000 + i * 300000, "end_ns": T0 + 5000000 + i * 300000 + 20000} for i in range(20)]
        host = [{"kind": "host", "label": "h%d" % i, "start_ns": T0 + 5000000 + i * 100000, "end_ns": T0 + 5000000 + i * 100000} for i in range(10)]
        return {"tracing": {"enabled": True, "cupti_library": "libcupti.so.13", "cupti_api_version": 130001, "nvtx_routed": True, "nvtx_detail": "x"},
                "clock": "cupti", "clock_map": {"valid": True, "globaltimer_to_cupti_offset_ns": -98000, "residual_ns": 1300, "samples": 16},
                "items": items, "ranges": ranges, "host_events": host, "unlabelled_records": 3, "dropped_records_in_process": 0}
    families = [("priority_sched", 16, 40, 1100), ("default_streams", 25, 30, 0), ("copy_overlap", 16, 60, 0), ("host_funcs", 15, 20, 0), ("instruments", 7, 10, 264)]
    n = 0
    for fam, count, n_items, blocks in families:
        for i in range(count):
            suite = "".join(p.capitalize() for p in fam.split("_"))
            name = "BehaviorNumber%dHoldsUnderLoad" % i
            ctest = "%s.%s.%s" % (fam, suite, name)
            cid = "%s-%02d" % (fam[:4].upper(), i + 1)
            props = {"catalog_id": cid, "verdict_kind": "observed" if i % 2 else "documented", "doc_source": "PG 4.3"}
            write(run / "gtest" / (ctest + ".xml"), gtest_xml(suite, name, properties=props))
            doc = observation(ctest, suite + "." + name, [(cid, props["verdict_kind"], "PG 4.3")],
                              {"k%d" % j: j * 1.5 for j in range(8)},
                              [{"id": cid, "key": "k%d" % j, "observed": j * 1.5, "expected": j * 1.5, "gating": True, "status": "match"} for j in range(4)])
            doc["schema_version"] = "1.5.0"
            doc["timeline"] = timeline(n_items, blocks)
            if fam == "priority_sched":
                recs = []
                for g in range(2):
                    recs.append({"label": "g%d" % g, "stream": "s%d" % g, "process": "", "priority": -g * 5, "threads": 256,
                                 "fields": ["t0", "t1", "sm0", "sm1", "max_gap"],
                                 "records": [[(b // 132) * 20000 + g * 1000, (b // 132) * 20000 + 19000 + g * 1000, b % 132, b % 132, 64] for b in range(132 * 16)]})
                doc["block_chart"] = {"clock": "globaltimer", "base_ns": 0, "sms": 132, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
                                      "priority_least": 0, "priority_greatest": -5, "grids": recs}
            write(run / "observations" / (ctest + ".json"), json.dumps(doc))
            n += 1
    return run


def make_big_run(root, tests=2000, run_id="20260103T000000Z-7"):
    """(run folder, source tree) of a run of many tests, with names as long as the suite's, and plans of its
    seven families that list them all, 40 catalog IDs a family. Each test claims an ID and has eight observed
    values and four baseline rows; one in 20 is skipped, one in 50 failed with a GoogleTest message. For the
    page's size and load time, which must not grow with the number of tests."""
    run = Path(root) / run_id
    write(run / "env.json", json.dumps(env_doc(run_id)))
    families = ("capture", "copy_overlap", "default_streams", "events", "host_funcs", "mempool", "priority_sched")
    planned = {}
    for n in range(tests):
        family = families[n % len(families)]
        suite = "".join(part.capitalize() for part in family.split("_"))
        name = "TheBehaviorNumber%04dHoldsWhileOtherStreamsAreBusy" % n
        ctest = "%s.%s.%s" % (family, suite, name)
        claim = "%s-%02d" % (family[:4].upper(), n // len(families) % 40 + 1)
        planned.setdefault(family, {}).setdefault(claim, []).append("%s.%s" % (suite, name))
        failures = ["/src/tests/%s/%s_test.cpp:%d\nExpected equality of these values:\n  observed\n    Which is: 1\n"
                    "  expected\n    Which is: 2" % (family, family, n)] if n % 50 == 7 else []
        skip = "stream priorities are not supported on this device" if n % 20 == 3 else None
        write(run / "gtest" / (ctest + ".xml"), gtest_xml(suite, name, failures=failures, skip=skip,
                                                          properties={"catalog_id": claim}))
        values = {"value_%d_us" % j: n * 0.25 + j for j in range(8)}
        rows = [{"id": claim, "key": "value_%d_us" % j, "observed": values["value_%d_us" % j], "gating": False,
                 "status": "recorded"} for j in range(4)]
        doc = observation(ctest, "%s.%s" % (suite, name), [(claim, "observed", "PG 4.3")], values, rows,
                          outcome="failed" if failures else "skipped" if skip else "passed")
        write(run / "observations" / (ctest + ".json"), json.dumps(doc))
    source = Path(root) / "src"
    for family, ids in planned.items():
        table = "".join("| %s | the behavior holds | observed | PG 4.3 | %s |\n" % (claim, ", ".join(
            "`%s`" % name for name in names)) for claim, names in sorted(ids.items()))
        write(source / "tests" / family / "README.md", "# %s: test plan\n\n| ID | Claim | Kind | Source | Tests |\n"
              "|----|-------|------|--------|-------|\n%s" % (family, table))
    return run, source


# How a test that ran beside another context ends (observation schema 1.12): skipped, not judged, with the
# fixture's evidence.
SHARING = {"shared": True, "reason": "another process had a context on the GPU at the test's end: pid 4242 "
                                     "(/usr/bin/python3); latch 7 holding s1 stopped for 2500 us between two timer "
                                     "reads (bound 300 us: its SM served another context)",
           "process_source": "nvml", "other_processes": [{"pid": 4242, "name": "/usr/bin/python3", "seen": "end"}],
           "widest_gap_ns": 2500000, "gap_where": "latch 7 holding s1", "gap_bound_ns": 300000}


def shared_gpu_fields(sharing=None):
    """The observation fields of a test not judged for a shared GPU."""
    sharing = sharing or SHARING
    return {"outcome": "skipped", "skip_kind": "shared_gpu", "gpu_sharing": sharing, "schema_version": "1.12.0",
            "skip_reason": "not judged: the GPU was shared with another context: " + sharing["reason"]}


def extract_recorded_run(root):
    """The recorded fast run of every GPU test on one H100 (data/h100-fast-run.tgz), unpacked under root."""
    with tarfile.open(RECORDED_RUN) as tar:
        # The "data" filter where this Python has it (3.11.4 and later).
        tar.extractall(root, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    run, = Path(root).iterdir()
    return run


def git_source(root):
    """A source tree (make_source) that is a git checkout of one commit: (path, commit), or None without git."""
    if shutil.which("git") is None:
        return None
    source = make_source(Path(root))
    git = ["git", "-C", str(source), "-c", "user.name=streamcheck", "-c", "user.email=streamcheck@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "plans"]):
        subprocess.run(git + args, check=True, capture_output=True, timeout=60)
    head = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60)
    return source, head.stdout.strip()
