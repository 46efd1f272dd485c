"""The gate (reports/streamcheck/gate.py, reports/streamcheck_gate.py) on synthetic run folders that provoke
each exit code: 0 as expected, 1 a behavior regressed, 2 the run is not trustworthy."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from synthetic import REPORTS, SCRIPT_TEXT, env_doc, gtest_xml, observation, write
from streamcheck.gate import gate, markdown
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
        self.assertIn("documented behavior PRIO-01 failed: least was 1", verdict["regressions"][0])

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
        self.assertIn("where the tolerance is 0.25 (one tick in four) ~~~~ a fence in the text; and a second failure",
                      verdict["regressions"][0])
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
            "shared GPU": lambda: self.edit_env(lambda d: d.update(conditions={"time_sliced_tests": [
                {"test": "priority_sched.PrioritySched.X", "evidence": {"grid": "low", "widest_gap_ns": 2500000,
                                                                        "bound_ns": 1000000}}]})),
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
                   "shared GPU": "the GPU was shared with another context while priority_sched.PrioritySched.X ran: "
                                 "a block of low stopped for 2500 us (bound 1000 us)",
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

    def test_both_templates_have_the_sanitizer_job_on_a_build_it_configures(self):
        for template in ("github-actions-gpu.yml", "gitlab-ci-gpu.yml"):
            text = (REPORTS.parent / "ci" / template).read_text()
            self.assertIn("bash ci/sanitizer.sh build", text, template)
            self.assertLess(text.index("-B build"), text.index("ci/sanitizer.sh build"), template)


if __name__ == "__main__":
    unittest.main()
