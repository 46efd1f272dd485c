"""The gate (reports/streamcheck/gate.py, reports/streamcheck_gate.py) on synthetic run folders that provoke
each exit code: 0 as expected, 1 a behavior regressed, 2 the run is not trustworthy."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from synthetic import (REPORTS, SCRIPT_TEXT, SHARING, env_doc, extract_recorded_run, git_source, gtest_xml,
                       observation, shared_gpu_fields, write)
from streamcheck.gate import (MESSAGE_CHARS, WRAP_COLUMNS, gate, junit_document, machine_markdown, markdown,
                              summary_lines)
from streamcheck.model import build_model
from streamcheck.results import load_run

GATE = REPORTS / "streamcheck_gate.py"


def good_run(root, run_id="20260101T000000Z-1"):
    """A run on a GPU with tracing on: a documented pass, an observed pass matching its baseline, a skip."""
    run = Path(root) / run_id
    env = env_doc(run_id)
    env["tracing"] = {"enabled": True, "cupti_library": "libcupti.so.13"}
    env["run"]["gtest_xml_files"] = 3
    write(run / "env.json", json.dumps(env))
    write(run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
        "PriorityFlags", "RangeIsOrdered", properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
    write(run / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json", json.dumps(observation(
        "priority_flags.PriorityFlags.RangeIsOrdered", "PriorityFlags.RangeIsOrdered",
        [("PRIO-01", "documented", "RT")], {"least": 0},
        [{"id": "PRIO-01", "key": "least", "observed": 0, "expected": 0, "gating": True, "status": "match"}])))
    write(run / "gtest" / "priority_flags.PriorityFlags.SpecialHandles.xml", gtest_xml(
        "PriorityFlags", "SpecialHandles", properties={"catalog_id": "PRIO-07", "verdict_kind": "observed"}))
    write(run / "observations" / "priority_flags.PriorityFlags.SpecialHandles.json", json.dumps(observation(
        "priority_flags.PriorityFlags.SpecialHandles", "PriorityFlags.SpecialHandles",
        [("PRIO-07", "observed", "none")], {"legacy.priority": 0},
        [{"id": "PRIO-07", "key": "legacy.priority", "observed": 0, "expected": 0, "gating": True,
          "status": "match"}])))
    write(run / "gtest" / "unit.Handle.Skips.xml", gtest_xml("Handle", "Skips", skip="h.cpp:1\nno reason " + SCRIPT_TEXT))
    return run


def github_step_script(text, step_id):
    """The run: | block of the step with the given id in a GitHub Actions workflow, as bash source."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "id: %s" % step_id)
    start = next(i for i in range(at, len(lines)) if lines[i].strip() == "run: |") + 1
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        body.append(line[indent:])
    return "\n".join(body) + "\n"


def gitlab_jobs(text):
    """Top-level keys of a GitLab CI file (jobs, and hidden keys such as an anchor) -> their indented lines."""
    jobs, name = {}, None
    for line in text.splitlines():
        key = re.match(r"([^\s#][^:]*):", line)
        if key:
            name = key.group(1)
            jobs[name] = ""
        elif name and line.startswith(" "):
            jobs[name] += line + "\n"
    return jobs


def cli(*args, env=None):
    return subprocess.run([sys.executable, str(GATE)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=60, env=env)


class Gate(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-gate-test-")
        self.root = Path(self._tmp.name)
        self.run = good_run(self.root)

    def tearDown(self):
        self._tmp.cleanup()

    def code(self, **kwargs):
        return gate(self.run, **kwargs)["verdict"]

    def edit_env(self, change):
        doc = json.loads((self.run / "env.json").read_text())
        change(doc)
        write(self.run / "env.json", json.dumps(doc))

    def edit_observation(self, name, change):
        path = self.run / "observations" / (name + ".json")
        doc = json.loads(path.read_text())
        change(doc)
        write(path, json.dumps(doc))

    def test_0_every_behavior_as_expected(self):
        verdict = self.code()
        self.assertEqual((verdict["code"], verdict["untrustworthy"], verdict["regressions"]), (0, [], []))

    def test_1_a_documented_test_failed(self):
        write(self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
            "PriorityFlags", "RangeIsOrdered", failures=["p.cpp:9\nleast was 1"],
            properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
        verdict = self.code()
        self.assertEqual(verdict["code"], 1, verdict)
        self.assertIn("documented behavior PRIO-01 failed: p.cpp:9: least was 1", verdict["regressions"][0])

    def test_a_failure_is_summarized_whole_with_skips_by_reason_conditions_and_the_report(self):
        reason = ["p.cpp:9", "rate 0.31 exceeds kRateTolerance, where", "  the tolerance is 0.25 (one tick in four)",
                  "~~~~ a fence in the text"]
        write(self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
            "PriorityFlags", "RangeIsOrdered", failures=["\n".join(reason), "p.cpp:12\nand a second failure"],
            properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
        for n in ("A", "B"):
            write(self.run / "gtest" / ("unit.Handle.Skip%s.xml" % n), gtest_xml("Handle", "Skip" + n,
                                                                                skip="h.cpp:1\nneeds two GPUs"))
        self.edit_env(lambda d: d.update(conditions={"launch_blocking": None, "max_connections": None,
                                                     "mps": {"active": False}, "mig": {"enabled": False},
                                                     "compute_mode": {"name": "Default"}}))
        self.edit_env(lambda d: d["run"].update(gtest_xml_files=5))
        write(self.run / "report.html", "<html></html>")
        verdict = self.code()
        self.assertEqual(verdict["code"], 1, verdict)
        # One line: the first failure with its file:line, and how many more the block below shows.
        self.assertIn("failed: p.cpp:9: rate 0.31 exceeds kRateTolerance, where the tolerance is 0.25 (one tick in "
                      "four) ~~~~ a fence in the text; and 1 more failure(s)", verdict["regressions"][0])
        md = markdown(verdict)
        for needle in ("  ~~~~~text\n  p.cpp:9\n  rate 0.31 exceeds kRateTolerance, where\n"
                       "    the tolerance is 0.25 (one tick in four)\n  ~~~~ a fence in the text\n\n"
                       "  p.cpp:12\n  and a second failure\n  ~~~~~\n",
                       "| 2 | needs two GPUs |", "| 1 | no reason",
                       "Conditions: mode isolated, CUDA_VISIBLE_DEVICES unset, CUDA_LAUNCH_BLOCKING unset, "
                       "CUDA_DEVICE_MAX_CONNECTIONS unset, compute mode Default, MPS off, MIG off, sanitizer none, "
                       "no other process on the GPU, tracing on.",
                       "Report: `%s`" % (self.run / "report.html").resolve(), "driver 580.95.05 (CUDA 13.0)"):
            self.assertIn(needle, md)
        self.assertLess(md.index("| 2 | needs two GPUs |"), md.index("| 1 | no reason"))

    def test_1_a_gating_baseline_row_differs(self):
        def differ(doc):
            doc["baseline"][0].update(observed=1, status="differs-gating")
        self.edit_observation("priority_flags.PriorityFlags.SpecialHandles", differ)
        verdict = self.code()
        self.assertEqual(verdict["code"], 1)
        self.assertIn("baseline row PRIO-07/legacy.priority differs-gating (observed 1, expected 0)",
                      verdict["regressions"][0])

    def test_a_row_that_differs_without_gating_passes(self):
        def differ(doc):
            doc["baseline"][0].update(observed=1, gating=False, status="differs")
        self.edit_observation("priority_flags.PriorityFlags.SpecialHandles", differ)
        self.assertEqual(self.code()["code"], 0)

    def test_2_untrustworthy_runs(self):
        cases = {
            "no GPU": lambda: self.edit_env(lambda d: d.update(gpu=None, gpu_unavailable_reason="no device")),
            "CUPTI off": lambda: self.edit_env(lambda d: d.update(tracing={"enabled": False, "reason": "no libcupti"})),
            "not finished": lambda: self.edit_env(lambda d: d["run"].update(finished_utc=None)),
            "XML count": lambda: self.edit_env(lambda d: d["run"].update(gtest_xml_files=5)),
            "mutation": lambda: self.edit_env(lambda d: d["environment"].update(STREAMCHECK_MUTATE="PRIO-01")),
            "watchdog": lambda: self.edit_observation("priority_flags.PriorityFlags.RangeIsOrdered", lambda d: d.update(
                watchdog=[{"gate": 0, "held": "s1", "watchdog_ms": 2000, "waited_ns": 2e9, "expected": False}])),
            "missing observation": lambda: (self.run / "observations" /
                                            "priority_flags.PriorityFlags.SpecialHandles.json").unlink(),
            "missing XML": lambda: (self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml").unlink(),
            "truncated file": lambda: write(self.run / "observations" /
                                            "priority_flags.PriorityFlags.RangeIsOrdered.json", '{"schema": "stre'),
            "no env.json": lambda: (self.run / "env.json").unlink(),
            "launch blocking": lambda: self.edit_env(lambda d: d.update(conditions={"launch_blocking": "1"})),
            "connections": lambda: self.edit_env(lambda d: d.update(conditions={"max_connections": "1"})),
            "sanitizer": lambda: self.edit_env(lambda d: d.update(conditions={"sanitizer": "memcheck"})),
            "MPS": lambda: self.edit_env(lambda d: d.update(conditions={"mps": {"active": True, "evidence": "e"}})),
            "MIG": lambda: self.edit_env(lambda d: d.update(conditions={"mig": {"enabled": True, "evidence": "m"}})),
            "another process": lambda: self.edit_env(lambda d: d.update(conditions={"other_compute_processes": [
                {"pid": "4242", "name": "sc_probe", "seen": "begin"}]})),
            "shared GPU": lambda: self.edit_observation("priority_flags.PriorityFlags.SpecialHandles",
                                                        lambda d: d.update(shared_gpu_fields())),
            "every GPU test skipped": lambda: [write(self.run / "gtest" / ("priority_flags.PriorityFlags.%s.xml" % n),
                                                     gtest_xml("PriorityFlags", n, skip="p.cpp:1\nneeds two GPUs"))
                                               for n in ("RangeIsOrdered", "SpecialHandles")],
        }
        needles = {"no GPU": "no GPU was used: no device", "CUPTI off": "tracing (CUPTI) was off: no libcupti",
                   "not finished": "did not finish", "XML count": "counts 5", "mutation": "STREAMCHECK_MUTATE=PRIO-01",
                   "watchdog": "watchdog fired", "missing observation": "wrote no observation file",
                   "missing XML": "no GoogleTest XML", "truncated file": "unreadable", "no env.json": "no env.json",
                   "launch blocking": "CUDA_LAUNCH_BLOCKING=1 is set", "connections": "CUDA_DEVICE_MAX_CONNECTIONS=1",
                   "sanitizer": "compute-sanitizer --tool memcheck", "MPS": "MPS is active", "MIG": "MIG instance",
                   "another process": "another process had a context on the GPU: pid 4242 (sc_probe)",
                   "shared GPU": "1 test(s) ran beside another context on the GPU: not judged",
                   "every GPU test skipped": "nothing was tested on a GPU (all 2 GPU tests skipped or did not run; 2 "
                                             "of them: needs two GPUs)"}
        for label, damage in cases.items():
            with self.subTest(label):
                self.run = good_run(self.root / label.replace(" ", "_"))
                damage()
                verdict = self.code()
                self.assertEqual(verdict["code"], 2, verdict)
                self.assertTrue(any(needles[label] in r for r in verdict["untrustworthy"]), verdict["untrustworthy"])

    def test_2_ctest_ran_a_test_that_left_no_xml(self):
        junit = self.run / "junit.xml"
        write(junit, '<testsuite><testcase name="streamcheck.run.begin" status="run"/>'
                     '<testcase name="priority_flags.PriorityFlags.RangeIsOrdered" status="run"/>'
                     '<testcase name="priority_flags.PriorityFlags.Hangs" status="fail"/>'
                     '<testcase name="priority_flags.conn1.EnvironmentEntry.FilterSelectsATest" status="run"/>'
                     '<testcase name="harness.Harness.Disabled" status="notrun"/></testsuite>')
        verdict = self.code()
        self.assertEqual(verdict["code"], 2)
        self.assertEqual(len(verdict["untrustworthy"]), 1)
        self.assertIn("priority_flags.PriorityFlags.Hangs: ctest ran it (fail)", verdict["untrustworthy"][0])

    def test_every_test_an_entry_listed_has_a_result(self):
        # Each ctest entry lists the tests it is about to run (entries/<entry>.json); here a fast entry.
        self.edit_env(lambda d: d["run"].update(mode="fast"))
        listed = ["priority_flags.PriorityFlags.RangeIsOrdered", "priority_flags.PriorityFlags.SpecialHandles"]
        write(self.run / "entries" / "priority_flags.fast.json",
              json.dumps({"entry": "priority_flags.fast", "tests": listed}))
        junit = self.run / "junit.xml"
        write(junit, '<testsuite><testcase name="streamcheck.run.begin" status="run"/>'
                     '<testcase name="priority_flags.fast" status="fail"/></testsuite>')
        self.assertEqual(load_run(self.run)["mode"], "fast")
        self.assertEqual(self.code()["untrustworthy"], [])
        # The process ended before a listed test left any result: not run, naming the entry.
        write(self.run / "entries" / "priority_flags.fast.json",
              json.dumps({"entry": "priority_flags.fast", "tests": listed + ["priority_flags.PriorityFlags.Crashes"]}))
        verdict = self.code()
        self.assertEqual(verdict["code"], 2)
        self.assertEqual(len(verdict["untrustworthy"]), 1, verdict["untrustworthy"])
        self.assertIn("1 test(s) not run (priority_flags.PriorityFlags.Crashes)", verdict["untrustworthy"][0])
        self.assertIn("ctest entry priority_flags.fast", verdict["untrustworthy"][0])
        # An entry ctest ran that failed and left no list at all (it ended before its first test).
        (self.run / "entries" / "priority_flags.fast.json").unlink()
        verdict = self.code()
        self.assertEqual(verdict["code"], 2)
        self.assertIn("priority_flags.fast: ctest ran it (fail)", verdict["untrustworthy"][0])

    def test_tests_not_run_after_a_broken_process_make_the_run_untrustworthy(self):
        # An earlier test left the process unusable: GoogleTest's XML calls the later tests skipped, their
        # observation files say not_run and why.
        reason = "not run: an earlier test of this process left it unusable: a watchdog fired"
        for name in ("Later", "Last"):
            ctest = "priority_flags.PriorityFlags.%s" % name
            write(self.run / "gtest" / (ctest + ".xml"), gtest_xml("PriorityFlags", name, skip="x.cpp:1\n" + reason))
            doc = observation(ctest, "PriorityFlags." + name, [], outcome="not_run")
            doc.update(skip_reason=reason, skip_kind="not_run")
            write(self.run / "observations" / (ctest + ".json"), json.dumps(doc))
        self.edit_env(lambda d: d["run"].update(gtest_xml_files=5))
        verdict = self.code()
        self.assertEqual(verdict["code"], 2, verdict)
        self.assertEqual(verdict["counts"]["notrun"], 2)
        self.assertEqual(verdict["failed"], [])
        self.assertEqual(len(verdict["untrustworthy"]), 1, verdict["untrustworthy"])
        self.assertIn("2 test(s) not run (priority_flags.PriorityFlags.Last, priority_flags.PriorityFlags.Later)",
                      verdict["untrustworthy"][0])
        self.assertIn(reason, verdict["untrustworthy"][0])

    def test_a_test_that_ended_its_process_names_itself_for_the_tests_after_it(self):
        # end_test_process: the ending test's observation file has the result, no XML was written, and the
        # tests the entry listed after it have no result at all.
        (self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml").unlink()
        path = self.run / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json"
        doc = json.loads(path.read_text())
        doc.update(outcome="failed", failures=["x.cpp:9: the chain is stuck"], ended_process="the chain is stuck")
        write(path, json.dumps(doc))
        write(self.run / "entries" / "priority_flags.fast.json", json.dumps({
            "entry": "priority_flags.fast", "tests": ["priority_flags.PriorityFlags.RangeIsOrdered",
                                                      "priority_flags.PriorityFlags.After"]}))
        tests = load_run(self.run)["tests"]
        self.assertEqual(tests["priority_flags.PriorityFlags.RangeIsOrdered"]["status"], "failed")
        self.assertEqual(tests["priority_flags.PriorityFlags.RangeIsOrdered"]["failures"], ["x.cpp:9: the chain is stuck"])
        self.assertEqual(tests["priority_flags.PriorityFlags.After"]["status"], "notrun")
        self.assertEqual(tests["priority_flags.PriorityFlags.After"]["not_run_reason"],
                         "priority_flags.PriorityFlags.RangeIsOrdered ended the process: the chain is stuck")

    def test_runs_before_env_1_2_read_as_isolated(self):
        self.edit_env(lambda d: d["run"].pop("mode", None))
        self.assertEqual(load_run(self.run)["mode"], "isolated")

    def test_tracing_off_can_be_accepted_on_request(self):
        self.edit_env(lambda d: d.update(tracing={"enabled": False, "reason": "compute-sanitizer"}))
        self.assertEqual(self.code(require_tracing=False)["code"], 0)

    def test_command_line_writes_markdown_and_junit_and_exits_with_the_code(self):
        md, xml, step = self.root / "s.md", self.root / "j.xml", self.root / "step.md"
        write(step, "earlier step\n")
        env = dict(os.environ, GITHUB_STEP_SUMMARY=str(step))
        result = cli(self.run, "--markdown", md, "--junit", xml, env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("gate: passed: every behavior as expected (exit 0)", result.stdout)
        self.assertIn("## streamcheck gate: passed", md.read_text())
        # The runner's driver release, not only the CUDA version it supports.
        self.assertIn("driver 580.95.05 (CUDA 13.0)", md.read_text())
        self.assertIn("driver 580.95.05 (CUDA 13.0)", result.stdout)
        self.assertTrue(step.read_text().startswith("earlier step\n## streamcheck gate"))
        root = ET.parse(xml).getroot()
        cases = {c.get("classname") + "." + c.get("name"): c for c in root.iter("testcase")}
        claim = cases["priority_flags.PriorityFlags.RangeIsOrdered"].find("properties/property")
        self.assertEqual((claim.get("name"), claim.get("value")), ("claim", "PRIO-01 (documented)"))
        skipped = cases["unit.Handle.Skips"].find("skipped")
        self.assertEqual(skipped.get("message"), "no reason " + SCRIPT_TEXT)
        self.assertIsNone(cases["streamcheck.gate.RunIsTrustworthy"].find("failure"))

    def test_command_line_2_with_summary_naming_the_reason(self):
        self.edit_env(lambda d: d.update(gpu=None, gpu_unavailable_reason="cudaErrorNoDevice"))
        md, xml = self.root / "s.md", self.root / "j.xml"
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
        result = cli(self.run, "--markdown", md, "--junit", xml, env=env)
        self.assertEqual(result.returncode, 2)
        self.assertIn("no GPU was used: cudaErrorNoDevice", md.read_text())
        failure = [c for c in ET.parse(xml).getroot().iter("testcase") if c.get("name") == "RunIsTrustworthy"][0]
        self.assertIn("no GPU was used", failure.find("failure").get("message"))
        missing = cli(self.root / "nowhere", env=env)
        self.assertEqual(missing.returncode, 2)
        self.assertNotIn("Traceback", missing.stderr)

    def test_a_machines_runs_are_judged_together_the_worst_counting(self):
        other = good_run(self.root / "gpu1", "20260101T000000Z-2")
        doc = json.loads((other / "env.json").read_text())
        doc["environment"]["CUDA_VISIBLE_DEVICES"] = "1"
        write(other / "env.json", json.dumps(doc))
        write(other / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
            "PriorityFlags", "RangeIsOrdered", failures=["p.cpp:9\nleast was 1"],
            properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
        write(self.run / "machine.html", "<html></html>")
        md, xml = self.root / "s.md", self.root / "j.xml"
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
        result = cli(self.run, other, "--markdown", md, "--junit", xml, env=env)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        text = md.read_text()
        self.assertTrue(text.startswith("## streamcheck gate: FAILED: a behavior regressed (exit 1)"), text)
        self.assertIn("| `20260101T000000Z-1` | GPU 0 | passed: every behavior as expected (exit 0) |", text)
        self.assertIn("| `20260101T000000Z-2` | GPU 1 | FAILED: a behavior regressed (exit 1) |", text)
        self.assertIn("Machine page (what differs between the GPUs): `%s`" % (self.run / "machine.html").resolve(), text)
        self.assertIn("### Run of GPU 1: FAILED", text)
        self.assertIn("#### Regressions (1)", text)
        self.assertIn("GPU 1 gate: regression:", result.stdout)
        suites = list(ET.parse(xml).getroot().iter("testsuite"))
        self.assertEqual(["streamcheck 20260101T000000Z-1 (GPU 0)", "streamcheck 20260101T000000Z-2 (GPU 1)"],
                         [s.get("name") for s in suites])
        self.assertEqual("1", ET.parse(xml).getroot().get("failures"))
        # Each run's own ctest record is read with it: a test ctest ran that left no result, in GPU 1's run.
        write(other / "junit.xml", '<testsuite><testcase name="priority_flags.PriorityFlags.Hangs" status="fail"/>'
                                   '</testsuite>')
        result = cli(self.run, other, env=env)
        self.assertEqual(2, result.returncode)
        self.assertIn("GPU 1 gate: not trustworthy: priority_flags.PriorityFlags.Hangs: ctest ran it (fail)",
                      result.stdout)
        self.assertNotIn("GPU 0 gate: not trustworthy", result.stdout)

    def share_the_gpu(self, name="SpecialHandles", failures=("p.cpp:40\nmark 3 was absent while gated",)):
        """The test ran beside another context: its XML says failed (it failed before the sharing was known),
        its observation says skipped, not judged, and its rows say anything, a gating difference included."""
        ctest = "priority_flags.PriorityFlags." + name
        write(self.run / "gtest" / (ctest + ".xml"), gtest_xml("PriorityFlags", name, failures=list(failures)))
        rows = [{"id": "PRIO-07", "key": "legacy.priority", "observed": 1, "expected": 0, "gating": True,
                 "status": "differs-gating"},
                {"id": "PRIO-07", "key": "per_thread.flags", "observed": 1, "status": "invalid", "detail": "shared"}]
        self.edit_observation(ctest, lambda d: d.update(shared_gpu_fields(), failures=list(failures), baseline=rows))
        return ctest

    def test_2_a_test_beside_another_context_is_not_judged_and_is_no_regression(self):
        ctest = self.share_the_gpu()
        verdict = self.code()
        self.assertEqual((verdict["code"], verdict["regressions"], verdict["failed"]), (2, [], []), verdict)
        self.assertEqual(verdict["untrustworthy"], ["1 test(s) ran beside another context on the GPU: not judged"])
        self.assertEqual(verdict["counts"], {"passed": 1, "failed": 0, "skipped": 1, "shared_gpu": 1, "notrun": 0})
        why = SHARING["reason"] + "; 1 failure(s) from before the sharing was known, kept as evidence"
        self.assertEqual(verdict["shared"], [(ctest, why)])
        md = markdown(verdict)
        self.assertIn("| passed | failed | skipped | not judged (shared GPU) | not run |\n|---:|---:|---:|---:|---:|\n"
                      "| 1 | 0 | 1 | 1 | 0 |", md)
        self.assertIn("### Not judged: the GPU was shared (1)\n- **%s**: %s\n" % (ctest, why), md)
        self.assertNotIn("Regressions", md)
        lines = summary_lines(verdict)
        self.assertIn("gate: 1 passed, 0 failed, 1 skipped, 1 not judged (shared GPU), 0 not run", lines)
        self.assertFalse([line for line in lines if "regression:" in line], lines)
        suite = ET.fromstring(junit_document([(load_run(self.run), verdict)])).find("testsuite")
        self.assertEqual((suite.get("failures"), suite.get("skipped")), ("1", "2"))
        case = next(c for c in suite.iter("testcase") if c.get("name") == "SpecialHandles")
        self.assertIsNone(case.find("failure"))
        self.assertTrue(case.find("skipped").get("message").startswith("not judged (shared GPU): another process"))
        self.assertIn("mark 3 was absent while gated", case.find("system-out").text)

    def test_a_test_of_observation_1_11_that_found_the_gpu_shared_reads_the_same(self):
        ctest = "priority_flags.PriorityFlags.SpecialHandles"
        write(self.run / "gtest" / (ctest + ".xml"), gtest_xml("PriorityFlags", "SpecialHandles",
                                                               failures=["p.cpp:7\nPRIO-07/k not judged"]))
        self.edit_observation(ctest, lambda d: d.update(
            schema_version="1.11.0", outcome="failed", failures=["p.cpp:7: PRIO-07/k not judged"],
            gpu_shared={"widest_gap_ns": 2500000, "bound_ns": 1000000, "grid": "low"},
            baseline=[{"id": "PRIO-07", "key": "k", "observed": 1, "status": "invalid", "detail": "shared"}]))
        verdict = self.code()
        self.assertEqual((verdict["code"], verdict["regressions"]), (2, []))
        self.assertEqual(verdict["shared"][0][1], "widest stop 2.500 ms at a block of grid low (bound 1.000 ms); 1 "
                                                  "failure(s) from before the sharing was known, kept as evidence")

    def test_conditions_say_what_listed_the_gpus_processes(self):
        for source, said in (("nvml", "no other process on the GPU (listed by nvml)"),
                              ("none: no NVML, no nvidia-smi", "no other process on the GPU (processes not listed: "
                                                               "none: no NVML, no nvidia-smi)")):
            self.edit_env(lambda d: d.update(conditions={"other_compute_processes": [],
                                                         "compute_process_source": source}))
            self.assertIn(said, self.code()["conditions"])

    def test_rows_without_a_baseline_are_said_first_and_documented_claims_still_gate(self):
        detail = "no file /src/baselines/sm_100.json"
        self.edit_env(lambda d: d["gpu"].update(arch="sm_100", compute_capability="10.0"))
        write(self.run / "gtest" / "priority_flags.PriorityFlags.SpecialHandles.xml", gtest_xml(
            "PriorityFlags", "SpecialHandles", skip="p.cpp:1\nnot judged: PRIO-07/legacy.priority (%s);" % detail))
        self.edit_observation("priority_flags.PriorityFlags.SpecialHandles", lambda d: d.update(
            outcome="skipped", skip_kind="not_judged",
            baseline=[{"id": "PRIO-07", "key": "legacy.priority", "observed": 0, "status": "no-baseline",
                       "detail": detail}]))
        # A documented claim's own row had no baseline either: it is counted, and the claim still gates.
        self.edit_observation("priority_flags.PriorityFlags.RangeIsOrdered", lambda d: d.update(baseline=[
            {"id": "PRIO-01", "key": "least", "observed": 0, "status": "no-baseline", "detail": detail}]))
        verdict = self.code()
        line = "2 observed row(s) not judged: no baseline for sm_100"
        self.assertEqual((verdict["code"], verdict["unjudged_rows"]), (0, line))
        self.assertEqual(summary_lines(verdict)[0], "gate: " + line)
        self.assertEqual(markdown(verdict).splitlines()[0],
                         "## streamcheck gate: passed: every behavior as expected (exit 0); " + line)
        judged = gate(self.run)
        self.assertEqual(machine_markdown([judged, judged], None).splitlines()[0],
                         "## streamcheck gate: passed: every behavior as expected (exit 0); " + line)
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
        self.assertEqual(cli(self.run, env=env).stdout.splitlines()[0], "gate: " + line)
        write(self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
            "PriorityFlags", "RangeIsOrdered", failures=["p.cpp:9\nleast was 1"],
            properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
        self.assertEqual(self.code()["code"], 1)

    def test_a_failure_of_thousands_of_characters_on_one_line_is_bounded_and_names_its_file_and_line(self):
        actual = "  Actual: false (more blocks resident on one SM than the device allows: %s)" % "; ".join(
            "SM %d: 8 blocks / 2560 threads (1 grids at once, t=1795686368005081696)" % sm for sm in range(100))
        failure = "\n".join(["/work/main/tests/priority_sched/priority_sched.cpp:214",
                             'Value of: within_residency_limits(inputs, properties(), "residency")', actual,
                             "Expected: true"])
        self.assertGreater(len(actual), 7000)
        write(self.run / "gtest" / "priority_flags.PriorityFlags.RangeIsOrdered.xml", gtest_xml(
            "PriorityFlags", "RangeIsOrdered", failures=[failure],
            properties={"catalog_id": "PRIO-01", "verdict_kind": "documented"}))
        verdict = self.code()
        where = "/work/main/tests/priority_sched/priority_sched.cpp:214"
        self.assertIn("failed: %s: Value of: within_residency_limits" % where, verdict["regressions"][0])
        md = markdown(verdict)
        block = md[md.index("~~~~text"):md.index("~~~~\n", md.index("~~~~text") + 8)]
        self.assertEqual(block.splitlines()[1], "  " + where)
        self.assertLessEqual(max(len(line) for line in block.splitlines()), WRAP_COLUMNS + 2)
        self.assertIn("  Expected: true", block)
        self.assertRegex(" ".join(block.split()), r"\.\.\. \(\d+ more characters\)")
        self.assertLessEqual(max(len(line) for line in md.splitlines()), 2 * MESSAGE_CHARS)
        case = next(c for c in ET.fromstring(junit_document([(load_run(self.run), verdict)])).iter("testcase")
                    if c.get("name") == "RangeIsOrdered")
        self.assertLessEqual(len(case.find("failure").get("message")), MESSAGE_CHARS)
        self.assertTrue(case.find("failure").get("message").startswith(where + ": Value of:"))
        self.assertIn(actual, case.find("failure").text)

    def test_the_summary_says_when_the_source_tree_is_at_another_commit(self):
        made = git_source(self.root / "src")
        if made is None:
            self.skipTest("git is not installed")
        source, head = made
        verdict = gate(self.run, source=source)["verdict"]
        self.assertIn("read from %s at commit %s, but the run was made at commit c9f25ae7e95e" % (source, head[:12]),
                      verdict["source"])
        self.assertIn("Source tree: the plans and baselines are read from", markdown(verdict))
        self.assertTrue(any(line.startswith("gate: source tree: ") for line in summary_lines(verdict)))
        self.edit_env(lambda d: d["streamcheck"].update(commit=head))
        self.assertIsNone(gate(self.run, source=source)["verdict"]["source"])
        self.assertIsNone(gate(self.run, source=self.root)["verdict"]["source"])  # not a checkout

    def test_gate_sh_calls_the_gate_and_judges_its_own_run(self):
        text = (REPORTS.parent / "ci" / "gate.sh").read_text()
        self.assertIn("reports/streamcheck_gate.py", text)
        self.assertIn("s/^run_suite: results folder //p", text)
        self.assertNotIn("results/latest", text)
        for template in ("github-actions-gpu.yml", "gitlab-ci-gpu.yml"):
            self.assertIn("ci/gate.sh", (REPORTS.parent / "ci" / template).read_text())
        self.assertIn("junit: build/gate-junit.xml", (REPORTS.parent / "ci" / "gitlab-ci-gpu.yml").read_text())

    def test_templates_build_for_the_runners_gpu_on_the_expected_events_and_keep_results_for_a_while(self):
        github = (REPORTS.parent / "ci" / "github-actions-gpu.yml").read_text()
        gitlab = (REPORTS.parent / "ci" / "gitlab-ci-gpu.yml").read_text()
        for name, text in (("github", github), ("gitlab", gitlab)):
            self.assertIn("What to change:", text.split("\n\n")[0], name)
            self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=native", text, name)
            self.assertNotIn('"90"', text, name)
            self.assertLess(text.index("-B build"), text.index("bash ci/gate.sh build"), name)
        for event in ("push:", "workflow_dispatch:", "schedule:"):
            self.assertIn("\n  %s" % event, github)
        self.assertEqual(github.count("retention-days: 14"), 3)
        self.assertIn("$CI_PIPELINE_SOURCE =~ /^(push|web|schedule)$/", gitlab)
        self.assertEqual(gitlab.count("expire_in: 2 weeks"), 3)

    def test_github_keeps_an_untrustworthy_run_apart_from_a_regression(self):
        text = (REPORTS.parent / "ci" / "github-actions-gpu.yml").read_text()
        self.assertIn("gate_exit: ${{ steps.gate.outputs.exit }}", text)
        step = github_step_script(text, "gate")
        for code, passes, annotation in ((0, True, None), (1, False, "::error"), (2, True, "::warning"),
                                         (127, False, "::error")):
            with self.subTest(exit=code):
                write(self.root / "ci" / "gate.sh", "exit %d\n" % code)
                output = self.root / "github-output"
                write(output, "")
                done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step],
                                      cwd=str(self.root), capture_output=True, text=True, timeout=60,
                                      env=dict(os.environ, GITHUB_OUTPUT=str(output)))
                self.assertEqual(done.returncode == 0, passes, done.stdout + done.stderr)
                self.assertEqual(output.read_text(), "exit=%d\n" % code)
                if annotation:
                    self.assertTrue(done.stdout.startswith(annotation + " title=streamcheck gate::"), done.stdout)
                else:
                    self.assertEqual(done.stdout, "")

    def test_gitlab_shows_an_untrustworthy_run_as_a_warning_and_a_regression_as_a_failure(self):
        jobs = gitlab_jobs((REPORTS.parent / "ci" / "gitlab-ci-gpu.yml").read_text())
        self.assertIn("\n  allow_failure:\n    exit_codes: [2]\n", jobs["streamcheck-gate"])
        # A failed build is a failure, even where its tool exits 2 (make).
        build = jobs[".streamcheck-build"].splitlines()
        self.assertEqual(len(build), 2)
        self.assertTrue(all(line.endswith(" || exit 1") for line in build), build)
        for name in ("streamcheck-nightly", "streamcheck-sanitizer"):
            self.assertNotIn("allow_failure", jobs[name], name)

    def test_both_templates_have_the_sanitizer_job_on_a_build_it_configures(self):
        for template in ("github-actions-gpu.yml", "gitlab-ci-gpu.yml"):
            text = (REPORTS.parent / "ci" / template).read_text()
            self.assertIn("bash ci/sanitizer.sh build", text, template)
            self.assertLess(text.index("-B build"), text.index("ci/sanitizer.sh build"), template)



class RecordedRun(unittest.TestCase):
    def test_the_report_the_gate_and_junit_count_the_recorded_h100_run_alike(self):
        # A fast run on one H100, recorded before tests the plans now name existed: the report once called them
        # "not run" where the gate said 0. Not run is a test an entry was asked to run that has no result; the
        # plans' tests the run lacks are "planned", however many the plans name today.
        with tempfile.TemporaryDirectory(prefix="streamcheck-counts-test-") as tmp:
            run = extract_recorded_run(Path(tmp))
            totals = build_model(run, REPORTS.parent)["totals"]
            judged = gate(run)
            counts = judged["verdict"]["counts"]
            suite = ET.fromstring(junit_document([(judged["run"], judged["verdict"])])).find("testsuite")
            cases = [c for c in suite.iter("testcase") if c.get("classname") != "streamcheck.gate"]
            junit = {"failed": sum(1 for c in cases if c.find("failure") is not None),
                     "notrun": sum(1 for c in cases if c.find("skipped") is not None and
                                   c.find("skipped").get("message").startswith("not run")),
                     "tests": len(cases)}
        self.assertEqual(counts, {"passed": 135, "failed": 1, "skipped": 5, "shared_gpu": 0, "notrun": 0})
        self.assertEqual({k: totals[k] for k in counts}, counts)
        self.assertEqual(totals["tests"], sum(counts.values()))
        self.assertGreater(totals["planned"], 0)
        self.assertEqual(junit, {"failed": counts["failed"], "notrun": counts["notrun"], "tests": totals["tests"]})
        self.assertEqual(int(suite.get("skipped")), counts["skipped"] + counts["shared_gpu"] + counts["notrun"])


if __name__ == "__main__":
    unittest.main()
