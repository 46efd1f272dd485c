"""The one results reader (reports/streamcheck/results.py): what it reads, and how it survives files it
cannot read."""

import json
import tempfile
import unittest
from pathlib import Path

from synthetic import env_doc, gtest_xml, make_run, observation, shared_gpu_fields, write
from streamcheck.common import InputError
from streamcheck.results import (MAX_FILE_BYTES, gpu_facts, load_run, outcome, sharing_text, tests_claiming,
                                 unexpected_watchdogs)


class ResultsReader(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-results-test-")
        self.run_dir = make_run(Path(self._tmp.name) / "results")

    def tearDown(self):
        self._tmp.cleanup()

    def test_reads_every_test_with_its_claims_and_outcome(self):
        run = load_run(self.run_dir)
        self.assertEqual(run["problems"], [])
        self.assertEqual((run["xml_files"], run["observation_files"]), (6, 3))
        status = {name: t["status"] for name, t in run["tests"].items()}
        self.assertEqual(status["priority_flags.PriorityFlags.DriverRangeMatches"], "failed")
        self.assertEqual(status["priority_flags.PriorityFlags.ClampsOutOfRange"], "skipped")
        self.assertEqual(sorted(tests_claiming(run, "PRIO-07")),
                         ["priority_flags.PriorityFlags.SpecialHandles", "priority_flags.ptds.PriorityFlags.SpecialHandles"])
        self.assertEqual(gpu_facts(run["env"])["arch"], "sm_90")

    def test_a_process_of_several_families_names_each_test_as_its_entry_listed_it(self):
        listed = ["harness.Harness.Plain", "events.EventsAndWaits.Plain", "events.EventsAndWaits.Other"]
        write(self.run_dir / "entries" / "suite.fast.json", json.dumps({"entry": "suite.fast", "tests": listed}))
        cases = "".join('<testsuite name="%s"><testcase name="%s" classname="%s" status="run" result="completed" '
                        'time="0.01"/></testsuite>' % (s, n, s) for s, n in
                        (("Harness", "Plain"), ("EventsAndWaits", "Plain"), ("EventsAndWaits", "Other")))
        write(self.run_dir / "gtest" / "suite.fast.xml", "<testsuites>%s</testsuites>" % cases)
        tests = load_run(self.run_dir)["tests"]
        for name in listed:
            self.assertEqual((tests[name]["status"], tests[name]["family"]), ("passed", name.split(".")[0]))

    def test_a_parameterized_test_is_read_from_the_subfolders_its_name_makes(self):
        # GoogleTest names an instance Prefix/Suite.Test/Param; its entry's XML, entry list and observation file
        # lie in subfolders of their folders, and the shared process lists it by the same name.
        alone = "capture.Modes/StreamCapture.Unsafe/Global"
        write(self.run_dir / "gtest" / (alone + ".xml"), gtest_xml("Modes/StreamCapture", "Unsafe/Global"))
        write(self.run_dir / "entries" / (alone + ".json"), json.dumps({"tests": [alone]}))
        write(self.run_dir / "observations" / (alone + ".json"), json.dumps(observation(
            "", "Modes/StreamCapture.Unsafe/Global", [("CAPT-03", "documented", "RT")])))
        shared = "capture.Modes/StreamCapture.Unsafe/Relaxed"
        write(self.run_dir / "entries" / "suite.fast.json", json.dumps({"entry": "suite.fast", "tests": [shared]}))
        write(self.run_dir / "gtest" / "suite.fast.xml", gtest_xml("Modes/StreamCapture", "Unsafe/Relaxed"))
        run = load_run(self.run_dir)
        self.assertEqual(run["problems"], [])
        self.assertEqual(run["entries"][alone], [alone])
        for name in (alone, shared):
            self.assertEqual((run["tests"][name]["status"], run["tests"][name]["family"]), ("passed", "capture"))
        self.assertEqual(list(tests_claiming(run, "CAPT-03")), [alone])

    def test_a_folder_that_is_not_a_run_is_an_input_error(self):
        for damage in ("missing", "truncated", "schema 2"):
            with self.subTest(damage):
                env = self.run_dir / "env.json"
                if damage == "missing":
                    env.unlink()
                elif damage == "truncated":
                    write(env, '{"schema": "streamcheck.env", "run": {')
                else:
                    doc = env_doc("r")
                    doc["schema_version"] = "2.0.0"
                    write(env, json.dumps(doc))
                with self.assertRaises(InputError) as caught:
                    load_run(self.run_dir)
                self.assertEqual(len(str(caught.exception).splitlines()), 1)
                write(env, json.dumps(env_doc("r")))

    def test_unreadable_result_files_are_problems_not_errors(self):
        obs = self.run_dir / "observations"
        write(obs / "priority_flags.PriorityFlags.RangeIsOrdered.json", '{"schema": "streamcheck.observation", "te')
        doc = observation("harness.Harness.Future", "Harness.Future", [])
        doc["schema_version"] = "9.0.0"
        write(obs / "harness.Harness.Future.json", json.dumps(doc))
        bad_shape = observation("harness.Harness.Shape", "Harness.Shape", [])
        bad_shape["watchdog"] = "fired"
        write(obs / "harness.Harness.Shape.json", json.dumps(bad_shape))
        write(self.run_dir / "gtest" / "harness.Harness.Cut.xml", "<testsuites><testsuite><testcase name='x'")
        write(self.run_dir / "instruments" / "INST-02.json", "[1, 2")
        run = load_run(self.run_dir)
        self.assertEqual(len(run["problems"]), 5, run["problems"])
        text = "\n".join(run["problems"])
        for needle in ("RangeIsOrdered.json: invalid JSON", "schema version 9.0.0", '"watchdog"', "invalid XML",
                       "INST-02.json"):
            self.assertIn(needle, text)
        # The test keeps what its XML says; the unreadable XML's test is listed, not run.
        ranged = run["tests"]["priority_flags.PriorityFlags.RangeIsOrdered"]
        self.assertEqual(ranged["status"], "passed")
        self.assertTrue(ranged["observation_unreadable"])
        self.assertEqual(run["tests"]["harness.Harness.Cut"]["status"], "notrun")
        self.assertTrue(run["tests"]["harness.Harness.Cut"]["unreadable"])

    def test_a_file_too_large_is_a_problem(self):
        path = self.run_dir / "observations" / "harness.Harness.Huge.json"
        with open(path, "wb") as f:
            f.truncate(MAX_FILE_BYTES + 1)
        run = load_run(self.run_dir)
        self.assertEqual(len(run["problems"]), 1)
        self.assertIn("more than the", run["problems"][0])

    def test_deep_nesting_is_a_problem(self):
        write(self.run_dir / "observations" / "harness.Harness.Deep.json", "[" * 100000 + "]" * 100000)
        run = load_run(self.run_dir)
        self.assertEqual(len(run["problems"]), 1)

    def test_a_test_beside_another_context_is_its_own_outcome_from_its_observation_alone(self):
        # Its process ended before GoogleTest wrote an XML; the fixture's evidence has no reason line.
        sharing = {"shared": True, "process_source": "nvidia-smi", "widest_gap_ns": None, "gap_where": "",
                   "gap_bound_ns": 300000, "other_processes": [{"pid": 77, "name": "/usr/bin/app", "seen": "start"}]}
        doc = observation("harness.Harness.Beside", "Harness.Beside", [("HARN-01", "documented", "RT")])
        doc.update(shared_gpu_fields(dict(sharing, reason="x")), gpu_sharing=sharing, failures=["h.cpp:3: lost"])
        del doc["skip_reason"]
        write(self.run_dir / "observations" / "harness.Harness.Beside.json", json.dumps(doc))
        test = load_run(self.run_dir)["tests"]["harness.Harness.Beside"]
        self.assertEqual((test["status"], outcome(test), test["failures"]), ("skipped", "shared_gpu", ["h.cpp:3: lost"]))
        self.assertEqual(sharing_text(test), "pid 77 /usr/bin/app (seen at start)")
        self.assertEqual(test["skip_reason"], "not judged: the GPU was shared with another context: pid 77 "
                                              "/usr/bin/app (seen at start)")

    def test_watchdog_from_the_xml_alone_counts_as_unexpected(self):
        write(self.run_dir / "gtest" / "harness.Harness.Dog.xml",
              gtest_xml("Harness", "Dog", failures=["x:1\nfired"], properties={"watchdog": "1 gate(s) fired"}))
        run = load_run(self.run_dir)
        self.assertEqual(len(unexpected_watchdogs(run["tests"]["harness.Harness.Dog"])), 1)
        self.assertEqual(unexpected_watchdogs(run["tests"]["priority_flags.PriorityFlags.RangeIsOrdered"]), [])


if __name__ == "__main__":
    unittest.main()
