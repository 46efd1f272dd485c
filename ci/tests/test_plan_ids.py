"""ci/plan_ids.py: the mutation job's IDs come from the family plans."""
import importlib.util
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci" / "plan_ids.py"
spec = importlib.util.spec_from_file_location("plan_ids", SCRIPT)
plan_ids = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plan_ids)

TABLE = """# plan
| ID | Kind | Source | Tests | Checks |
|---|---|---|---|---|
| X-01 | documented | RT | `A.B` | mutation: something |
| X-02 *(suite row)* | observed | RT | `A.C` | mutation: other |
| X-03 *(retired)* | observed | RT | — | gone |
| X-04 | observed | RT | `A.D` | recorded only. (no mutation run): judged with X-01 |
| X-05 | documented | RT | `A.E` | mutation: no wait (mutation needs two GPUs) |
text | X-09 | not a row
"""


class PlanIds(unittest.TestCase):
    def test_rows_notes_retired_and_no_mutation_marker(self):
        self.assertEqual(["X-01", "X-02", "X-04", "X-05"], plan_ids.plan_ids(TABLE, False))
        self.assertEqual(["X-01", "X-02"], plan_ids.plan_ids(TABLE, True))
        self.assertEqual(["X-01", "X-02", "X-05"], plan_ids.plan_ids(TABLE, True, gpus=2))

    def test_the_real_plans(self):
        sched = plan_ids.plan_ids((ROOT / "tests" / "priority_sched" / "README.md").read_text(), True)
        self.assertEqual(["SCHED-%02d" % i for i in (1, 2, 3, 5, 6, 7, 8, 9, 11, 13)] + ["CAPT-12"], sched)
        dflt = plan_ids.plan_ids((ROOT / "tests" / "default_streams" / "README.md").read_text(), True)
        self.assertEqual(["DFLT-%02d" % i for i in range(1, 24)], dflt)
        host = plan_ids.plan_ids((ROOT / "tests" / "host_funcs" / "README.md").read_text(), True)
        self.assertEqual(["HOST-%02d" % i for i in list(range(1, 15)) + [16]], host)

    def test_command_line_errors_are_one_line(self):
        missing = subprocess.run([sys.executable, str(SCRIPT), "--mutations", "/nonexistent/README.md"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(1, missing.returncode)
        self.assertEqual(1, len(missing.stderr.strip().splitlines()))
        empty = subprocess.run([sys.executable, str(SCRIPT), str(ROOT / "tests" / "unit" / "README.md")],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(1, empty.returncode)
        self.assertIn("lists no catalog ID", empty.stderr)
        for wrong in (["--mutations", "--gpus", "\u00b2"], ["--gpus", "2"], ["--mutations", "--gpus"]):
            run = subprocess.run([sys.executable, str(SCRIPT)] + wrong + [str(ROOT / "tests" / "events" / "README.md")],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(2, run.returncode, wrong)
            self.assertEqual(1, len(run.stderr.strip().splitlines()), wrong)
        bad = subprocess.run([sys.executable, str(SCRIPT), "--mutations", "--gpus", "two",
                              str(ROOT / "tests" / "events" / "README.md")], capture_output=True, text=True, timeout=30)
        self.assertEqual(2, bad.returncode)
        self.assertEqual(1, len(bad.stderr.strip().splitlines()))

    def test_two_gpu_rows_of_the_events_plan(self):
        text = (ROOT / "tests" / "events" / "README.md").read_text()
        self.assertNotIn("EVT-14", plan_ids.plan_ids(text, True))
        self.assertNotIn("DFLT-20", plan_ids.plan_ids(text, True))
        self.assertIn("EVT-14", plan_ids.plan_ids(text, True, gpus=2))
        self.assertIn("DFLT-20", plan_ids.plan_ids(text, True, gpus=2))


if __name__ == "__main__":
    unittest.main()
