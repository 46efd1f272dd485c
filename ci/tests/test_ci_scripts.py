"""ci/mutation_check.py and ci/family_time.py read runs through the report's results reader; the resource spec
ctest reads."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import env_doc, make_drawn_run, make_run, make_source, observation, run_cli, shared_gpu_fields, write

CI = Path(__file__).resolve().parents[2] / "ci"


def ci(script, *args):
    return subprocess.run([sys.executable, str(CI / script)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=60)


class CiScripts(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-ci-test-")
        self.root = Path(self._tmp.name)
        self.run_dir = make_run(self.root / "results")

    def tearDown(self):
        self._tmp.cleanup()

    def mutate(self, catalog_id):
        doc = env_doc(self.run_dir.name)
        doc["environment"]["STREAMCHECK_MUTATE"] = catalog_id
        write(self.run_dir / "env.json", json.dumps(doc))

    def test_mutation_killed_by_exactly_its_own_test(self):
        self.mutate("PRIO-02")
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("mutation PRIO-02: killed", result.stdout)

    def test_surviving_mutation_and_collateral_failure(self):
        self.mutate("PRIO-01")
        result = ci("mutation_check.py", self.run_dir, "PRIO-01")
        self.assertEqual(result.returncode, 1)
        self.assertIn("NOT KILLED", result.stdout)
        self.assertIn("survived: priority_flags.PriorityFlags.RangeIsOrdered", result.stdout)
        self.assertIn("other failures: priority_flags.PriorityFlags.DriverRangeMatches", result.stdout)

    def test_tests_not_run_after_a_claiming_test_ended_the_process_are_no_collateral(self):
        # Fast mode: the claiming test failed and ended its process; the test its entry listed after it never ran.
        self.mutate("PRIO-02")
        write(self.run_dir / "entries" / "priority_flags.fast.json", json.dumps(
            {"entry": "priority_flags.fast", "tests": ["priority_flags.PriorityFlags.DriverRangeMatches",
                                                       "priority_flags.PriorityFlags.After"]}))
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("mutation PRIO-02: killed", result.stdout)
        self.assertIn("1 other test(s) not run after a claiming test ended the process", result.stdout)

    def test_a_test_not_judged_for_a_shared_gpu_before_its_claims_is_named(self):
        # The ptds build of the claiming test met a context still being destroyed: skipped with no claim recorded.
        self.mutate("PRIO-02")
        ctest = "priority_flags.ptds.PriorityFlags.DriverRangeMatches"
        doc = observation(ctest, "PriorityFlags.DriverRangeMatches", [], outcome="skipped")
        doc.update(shared_gpu_fields())
        write(self.run_dir / "observations" / (ctest + ".json"), json.dumps(doc))
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("not judged for a shared GPU, claims unknown: " + ctest, result.stdout)

    def test_unreadable_file_makes_the_mutation_run_prove_nothing(self):
        self.mutate("PRIO-02")
        write(self.run_dir / "observations" / "harness.Harness.Cut.json", "{")
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 1)
        self.assertIn("could not be read", result.stdout)
        self.assertNotIn("Traceback", result.stderr)

    def test_family_time_uses_the_fixture_times_of_the_observation_files(self):
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/>'
                     '<testcase name="unit.Handle.OwnedHandleIsReleasedOnce" time="0.1"/>'
                     '<testcase name="streamcheck.run.begin" time="1"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(l for l in result.stdout.splitlines() if l.startswith("priority_flags"))
        # 0.5 s of ctest time, 3.25 ms in the fixture of which 1.5 ms set-up.
        self.assertEqual(line.split()[:6], ["priority_flags", "1", "0.50", "0.50", "0.00", "0.00"])
        self.assertIn("(no observation files: host tests)", result.stdout)

    def set_steps(self, steps, first):
        path = self.run_dir / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json"
        doc = json.loads(path.read_text())
        doc["schema_version"] = "1.6.0"
        doc["setup_steps_ms"] = steps
        doc["first_in_process"] = first
        write(path, json.dumps(doc))

    def test_family_time_splits_set_up_into_its_steps(self):
        self.set_steps([["device_count", 100.0], ["context", 120.5], ["clock_offset", 3.5]], True)
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = {l.split()[0]: l.split()[1:] for l in result.stdout.splitlines() if l.strip()}
        self.assertIn("set-up", rows)
        # First test of its process: 1 test, total, median; no later tests.
        self.assertEqual(rows["context"], ["1", "120.5", "120.50", "-"])
        self.assertEqual(rows["device_count"][:2], ["1", "100.0"])
        self.assertEqual(list(rows).index("device_count") + 2, list(rows).index("clock_offset"))

    def test_malformed_set_up_steps_leave_the_file_out_and_say_why(self):
        self.set_steps([["context", "fast"]], False)
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("skipping", result.stderr)
        self.assertIn("setup_steps_ms", result.stderr)
        self.assertNotIn("set-up step", result.stdout)
        self.assertNotIn("Traceback", result.stderr)



class RunnerArtifacts(unittest.TestCase):
    def test_the_nightly_job_keeps_the_page_with_every_folder_the_report_writes_beside_it(self):
        kept = re.search(r"^for part in (.*); do cp -R", (CI / "gpu_runner.sh").read_text(), re.M).group(1).split()
        with tempfile.TemporaryDirectory(prefix="streamcheck-ci-test-") as tmp:
            # A run with a drawn timeline and block chart: every kind of file beside the page.
            source = make_source(Path(tmp) / "src")
            out = Path(tmp) / "report" / "report.html"
            result = run_cli(make_drawn_run(Path(tmp) / "results"), "--source", source, "-o", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(sorted(kept), sorted(p.name for p in out.parent.iterdir()))


HOLDER = """
import fcntl, sys, time
with open(sys.argv[1], "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    time.sleep(float(sys.argv[2]))
"""


class Help(unittest.TestCase):
    def test_every_script_answers_help_without_building_or_running_anything(self):
        with tempfile.TemporaryDirectory() as d:
            # Stand-ins that fail loudly if a script builds or runs anything.
            for tool in ("cmake", "ctest", "nvidia-smi", "compute-sanitizer"):
                path = Path(d) / tool
                path.write_text("#!/bin/sh\necho \"$0 was called\" >&2\nexit 99\n")
                path.chmod(0o755)
            env = dict(os.environ, PATH="%s:%s" % (d, os.environ["PATH"]))
            scripts = [p for p in sorted(CI.iterdir()) if p.suffix in (".sh", ".py") and p.name != "ctest_run.sh"]
            self.assertGreater(len(scripts), 8)
            for script in scripts:
                with self.subTest(script.name):
                    command = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
                    done = subprocess.run(command + ["--help"], capture_output=True, text=True, timeout=30, env=env)
                    self.assertEqual(0, done.returncode, done.stdout + done.stderr)
                    self.assertIn(script.name.split(".")[0], done.stdout.replace("-", "_"))
                    self.assertNotIn("was called", done.stderr)


class ResourceSpec(unittest.TestCase):
    """runner/cmake/gpu_resource_spec.cmake.in, run as ctest runs it when it reads the tests: one resource "gpus" per
    GPU, two slots each; where CUDA_VISIBLE_DEVICES is set, one per entry it lists."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-spec-test-")
        self.build = Path(self._tmp.name)
        template = (CI.parent / "runner" / "cmake" / "gpu_resource_spec.cmake.in").read_text()
        self.script = self.build / "gpu_resource_spec.cmake"
        # What ctest reads: the spec file the script names (none: no spec).
        self.script.write_text(template.replace("@CMAKE_BINARY_DIR@", str(self.build)) +
                               'message("spec file: ${CTEST_RESOURCE_SPEC_FILE}")\n')

    def tearDown(self):
        self._tmp.cleanup()

    def start(self, visible):
        return subprocess.Popen(["cmake", "-P", str(self.script)], env=dict(os.environ, CUDA_VISIBLE_DEVICES=visible),
                                stderr=subprocess.PIPE, text=True)

    def gpus(self, run):
        """The spec's GPUs as (id, slots) pairs, None for no spec."""
        _, err = run.communicate(timeout=60)
        self.assertEqual(0, run.returncode, err)
        spec = err.strip()[len("spec file: "):]
        return [(g["id"], g["slots"]) for g in json.loads(Path(spec).read_text())["local"][0]["gpus"]] if spec else None

    def test_one_gpu_per_visible_device_two_slots_each(self):
        for visible, gpus in (("1", [("0", 2)]), ("1,0", [("0", 2), ("1", 2)]), ("", None),
                              ("GPU-aa,MIG-bb,7", [("0", 2), ("1", 2), ("2", 2)])):
            self.assertEqual(gpus, self.gpus(self.start(visible)), visible)

    def test_runs_started_together_each_read_a_whole_spec(self):
        runs = [(visible, self.start(visible)) for visible in ["0", "0,1", "0,1,2"] * 8]
        for visible, run in runs:
            self.assertEqual(len(visible.split(",")), len(self.gpus(run)), visible)
        self.assertEqual([], [p.name for p in self.build.glob("gpu_resource_spec-*.json.*")])


if __name__ == "__main__":
    unittest.main()
