"""Comparing two run folders (reports/streamcheck/compare.py and the two-folder command line)."""

import json
import re
import tempfile
import unittest
from pathlib import Path

from synthetic import SCRIPT_TEXT, UUID_B, env_doc, gtest_xml, make_run, make_source, run_cli, write
from streamcheck.compare import compare_runs, diff_text, render_diff
from streamcheck.results import load_run


class Compare(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-compare-test-")
        self.root = Path(self._tmp.name)
        self.source = make_source(self.root / "src")
        self.old = make_run(self.root / "old", "20260101T000000Z-1")
        self.new = make_run(self.root / "new", "20260102T000000Z-2", driver=13010, uuid=UUID_B, release="580.159.04")
        doc = env_doc("20260102T000000Z-2", driver=13010, uuid=UUID_B, release="580.159.04")
        doc["environment"]["CUDA_DEVICE_MAX_CONNECTIONS"] = "8"
        write(self.new / "env.json", json.dumps(doc))
        # Last night's failure is fixed; a pass now fails; one test removed, one added.
        write(self.new / "gtest" / "priority_flags.PriorityFlags.DriverRangeMatches.xml", gtest_xml(
            "PriorityFlags", "DriverRangeMatches", properties={"catalog_id": "PRIO-02"}))
        write(self.new / "gtest" / "unit.Handle.OwnedHandleIsReleasedOnce.xml", gtest_xml(
            "Handle", "OwnedHandleIsReleasedOnce", failures=["h.cpp:3\nreleased twice " + SCRIPT_TEXT]))
        (self.new / "gtest" / "priority_flags.ptds.PriorityFlags.SpecialHandles.xml").unlink()
        (self.new / "observations" / "priority_flags.ptds.PriorityFlags.SpecialHandles.json").unlink()
        write(self.new / "gtest" / "unit.Clock.Fits.xml", gtest_xml("Clock", "Fits"))
        obs = self.new / "observations" / "priority_flags.PriorityFlags.SpecialHandles.json"
        doc = json.loads(obs.read_text())
        doc["observations"]["per_thread.flags"] = 0
        doc["baseline"][1].update(observed=0, status="match")
        write(obs, json.dumps(doc))

    def tearDown(self):
        self._tmp.cleanup()

    def test_values_that_moved_come_first_largest_first_and_jitter_is_folded(self):
        obs = self.new / "observations" / "priority_flags.PriorityFlags.SpecialHandles.json"
        old_obs = self.old / "observations" / "priority_flags.PriorityFlags.SpecialHandles.json"
        for path, values in ((old_obs, {"a_us": 100.0, "b_us": 100.0, "c_us": 100.0, "d": "x"}),
                             (obs, {"a_us": 102.0, "b_us": 150.0, "c_us": 60.0, "d": "y"})):
            doc = json.loads(path.read_text())
            doc["observations"].update(values)
            write(path, json.dumps(doc))
        diff = compare_runs(load_run(self.old), load_run(self.new))
        self.assertEqual([c["key"] for c in diff["values"]], ["d", "per_thread.flags", "b_us", "c_us"])
        self.assertEqual([c["key"] for c in diff["jitter"]], ["a_us"])
        text = diff_text(diff)
        self.assertIn("b_us: 100 -> 150 (+50.0 %)", text)
        self.assertIn("observed values within noise, folded: 1", text)
        page = render_diff(diff, self.root)
        self.assertIn("1 observed value within noise (less than 5 %), folded", page)
        self.assertLess(page.index("b_us"), page.index("a_us"))

    def test_what_changed(self):
        diff = compare_runs(load_run(self.old), load_run(self.new))
        env = {e["what"]: (e["old"], e["new"]) for e in diff["environment"]}
        self.assertEqual(env["CUDA version of the driver"], ("13.0 (13000)", "13.1 (13010)"))
        # A driver upgrade is said first: its release, then its kernel module.
        self.assertEqual(diff["environment"][0], {"what": "driver release", "old": "580.95.05", "new": "580.159.04"})
        self.assertEqual(diff["environment"][1]["what"], "kernel module")
        self.assertIn("GPU UUID", env)
        self.assertEqual(env["$CUDA_DEVICE_MAX_CONNECTIONS"], (None, "8"))
        self.assertEqual({(c["test"], c["old"], c["new"]) for c in diff["status"]}, {
            ("priority_flags.PriorityFlags.DriverRangeMatches", "failed", "passed"),
            ("unit.Handle.OwnedHandleIsReleasedOnce", "passed", "failed")})
        self.assertEqual([(c["key"], c["old"], c["new"]) for c in diff["values"]], [("per_thread.flags", 1, 0)])
        self.assertEqual([(c["id"], c["key"], c["old_status"], c["new_status"]) for c in diff["baselines"]],
                         [("PRIO-07", "per_thread.flags", "differs", "match")])
        self.assertEqual([c["test"] for c in diff["added"]], ["unit.Clock.Fits"])
        self.assertEqual([c["test"] for c in diff["removed"]], ["priority_flags.ptds.PriorityFlags.SpecialHandles"])
        text = diff_text(diff)
        self.assertLess(text.index("driver release: 580.95.05"), text.index("GPU UUID"))
        self.assertLess(text.index("CUDA version of the driver: 13.0"), text.index("status changes"))
        self.assertIn("unit.Handle.OwnedHandleIsReleasedOnce: pass -> FAIL (released twice", text)

    def test_two_folders_give_a_comparison_page_and_text(self):
        out, txt = self.root / "diff.html", self.root / "diff.txt"
        result = run_cli(self.old, self.new, "--source", self.source, "-o", out, "--text", txt)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("status changes: 2", result.stdout)
        self.assertEqual(txt.read_text(), result.stdout[:len(txt.read_text())])
        page = out.read_text()
        for anchor in ("environment", "status", "baseline", "added-removed"):
            self.assertIn('<section id="%s">' % anchor, page)
        self.assertLess(page.index('id="environment"'), page.index('id="status"'))
        self.assertIn("different GPUs", page)
        self.assertNotIn(SCRIPT_TEXT, page)
        data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))
        self.assertEqual(len(data["status"]), 2)

    def test_default_output_is_in_the_new_run_and_a_third_folder_is_refused(self):
        result = run_cli(self.old, self.new, "--source", self.source)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue((self.new / "compare-20260101T000000Z-1.html").is_file())
        result = run_cli(self.old, self.new, self.new, "--source", self.source)
        self.assertEqual(result.returncode, 2)
        self.assertNotIn("Traceback", result.stderr)

    def test_a_damaged_file_is_listed_not_fatal(self):
        write(self.new / "observations" / "unit.Clock.Fits.json", "{")
        out = self.root / "diff.html"
        result = run_cli(self.old, self.new, "--source", self.source, "-o", out)
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)
        self.assertIn("unit.Clock.Fits.json", out.read_text())

    def test_identical_runs_have_nothing_to_say(self):
        diff = compare_runs(load_run(self.old), load_run(self.old))
        self.assertEqual([diff[k] for k in ("environment", "status", "values", "baselines", "added", "removed")],
                         [[]] * 6)


if __name__ == "__main__":
    unittest.main()
