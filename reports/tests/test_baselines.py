"""The baseline writer (reports/streamcheck/baselines.py, reports/streamcheck_baseline.py), the existing
baselines/sm_90.json under schema 1.2, and a GPU without a baseline: "no baseline" rows, not failures."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPORTS, env_doc, gtest_xml, observation, write
from streamcheck.baselines import baseline_diff, load_baseline_file, write_baseline
from streamcheck.gate import judge
from streamcheck.results import load_run

ROOT = REPORTS.parent
WRITER = REPORTS / "streamcheck_baseline.py"


def b200_run(root):
    """A run on a GPU of another architecture (sm_100): PRIO-01/least as on sm_90, PRIO-07 a new value,
    and rows the fixture wrote as no-baseline (no sm_100 file)."""
    run = Path(root) / "20260105T000000Z-5"
    env = env_doc(run.name, driver=13020)
    env["gpu"].update(name="NVIDIA B200", arch="sm_100", compute_capability="10.0")
    env["tracing"] = {"enabled": True}
    write(run / "env.json", json.dumps(env))
    rows = [{"id": "PRIO-01", "key": "least", "observed": 0, "status": "no-baseline", "detail": "no file"},
            {"id": "PRIO-01", "key": "greatest", "observed": -7, "status": "no-baseline", "detail": "no file"},
            {"id": "NEW-01", "key": "depth", "observed": 3, "status": "no-baseline", "detail": "no file"}]
    for suite, name, kind in (("PriorityFlags", "RangeIsOrdered", "documented"), ("New", "Depth", "observed")):
        ctest = "priority_flags.%s.%s" % (suite, name)
        skip = None if kind == "documented" else "x.cpp:1\nno baseline: the observed value(s) were recorded"
        write(run / "gtest" / (ctest + ".xml"), gtest_xml(suite, name, skip=skip))
        mine = rows[:2] if kind == "documented" else rows[2:]
        doc = observation(ctest, "%s.%s" % (suite, name), [(mine[0]["id"], kind, "RT")], baseline=mine,
                          outcome="passed" if skip is None else "skipped")
        if skip is not None:
            doc["skip_kind"] = "no_baseline"
        write(run / "observations" / (ctest + ".json"), json.dumps(doc))
    return run


class Baselines(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-baseline-test-")
        self.root = Path(self._tmp.name)
        self.run = b200_run(self.root)

    def tearDown(self):
        self._tmp.cleanup()

    def test_the_existing_sm_90_file_is_a_valid_baseline(self):
        doc = load_baseline_file(ROOT / "baselines" / "sm_90.json")
        self.assertEqual(doc["schema_version"].split(".")[0], "1")
        for ident, rows in doc["entries"].items():
            for key, entry in rows.items():
                self.assertTrue({"expected", "gating", "why", "gating_reason", "driver_may_flip"} <= set(entry),
                                (ident, key))

    def test_a_gpu_without_a_baseline_gets_no_baseline_rows_not_failures(self):
        verdict = judge(load_run(self.run))
        self.assertEqual((verdict["code"], verdict["regressions"], verdict["failed"]), (0, [], []))
        self.assertEqual(verdict["counts"]["skipped"], 1)  # the observed-only test: "no baseline:"

    def test_written_entries_take_the_policy_of_the_existing_file(self):
        against = load_baseline_file(ROOT / "baselines" / "sm_90.json")
        doc, conflicts = write_baseline(load_run(self.run), "sm_100", against)
        self.assertEqual(conflicts, [])
        self.assertEqual((doc["schema_version"], doc["arch"], doc["devices"]), ("1.2.0", "sm_100", ["NVIDIA B200"]))
        prov = doc["provenance"]
        self.assertEqual((prov["gpu"], prov["driver_version"], prov["run_id"], prov["date"]),
                         ("NVIDIA B200", 13020, "20260105T000000Z-5", "2026-01-01T00:00:00Z"))
        self.assertTrue(prov["commit"])
        least = doc["entries"]["PRIO-01"]["least"]
        old = against["entries"]["PRIO-01"]["least"]
        self.assertEqual((least["expected"], least["gating"], least["gating_reason"]), (0, old["gating"],
                                                                                      old["gating_reason"]))
        new = doc["entries"]["NEW-01"]["depth"]
        self.assertEqual((new["expected"], new["gating"], new["driver_may_flip"]), (3, False, True))
        for rows in doc["entries"].values():
            for entry in rows.values():
                self.assertTrue(entry["why"] and entry["gating_reason"])
        lines = baseline_diff(doc, against)
        self.assertIn("~ PRIO-01/greatest: -5 -> -7 (gating)", lines)
        self.assertIn("+ NEW-01/depth = 3 (new entry, not gating)", lines)
        self.assertTrue(any(line.startswith("- PRIO-07/") for line in lines))

    def test_a_key_seen_with_two_values_is_left_out(self):
        doc = json.loads((self.run / "observations" / "priority_flags.New.Depth.json").read_text())
        doc["baseline"].append(dict(doc["baseline"][0], observed=4))
        write(self.run / "observations" / "priority_flags.New.Depth.json", json.dumps(doc))
        doc, conflicts = write_baseline(load_run(self.run), "sm_100", None)
        self.assertNotIn("NEW-01", doc["entries"])
        self.assertEqual(len(conflicts), 1)

    def test_command_line_writes_a_file_the_report_and_the_fixture_can_read(self):
        out = self.root / "sm_100.json"
        result = subprocess.run([sys.executable, str(WRITER), self.run, "--against", ROOT / "baselines" / "sm_90.json",
                                 "-o", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("~ PRIO-01/greatest: -5 -> -7 (gating)", result.stdout)
        self.assertIn("wrote", result.stdout)
        doc = load_baseline_file(out)
        self.assertEqual(doc["entries"]["PRIO-01"]["greatest"]["expected"], -7)
        again = subprocess.run([sys.executable, str(WRITER), self.run, "-o", out], capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(again.returncode, 2)
        self.assertIn("--force", again.stderr)

    def test_a_run_without_gpu_is_refused_in_one_line(self):
        doc = env_doc("x", gpu=False)
        write(self.run / "env.json", json.dumps(doc))
        result = subprocess.run([sys.executable, str(WRITER), self.run], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
