"""The machine page (reports/streamcheck/machine.py, streamcheck_report.py --machine): two GPUs' runs and a
pair's, what differs between the GPUs first."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPORTS, UUID_B, env_doc, gtest_xml, make_run, make_source, write
from streamcheck.machine import machine_text, machine_view
from streamcheck.results import load_run


def set_visible(run, devices):
    doc = json.loads((run / "env.json").read_text())
    doc["environment"]["CUDA_VISIBLE_DEVICES"] = devices
    write(run / "env.json", json.dumps(doc))


class Machine(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-machine-test-")
        self.addCleanup(self._tmp.cleanup)
        self.root = Path(self._tmp.name)
        self.source = make_source(self.root / "src")
        self.gpu0 = make_run(self.root / "gpu0", "20260101T000000Z-1")
        self.gpu1 = make_run(self.root / "gpu1", "20260101T000000Z-2", uuid=UUID_B)
        set_visible(self.gpu1, "1")
        # GPU 1 differs: a test that passes on GPU 0 fails there, and one observed value differs.
        write(self.gpu1 / "gtest" / "unit.Handle.OwnedHandleIsReleasedOnce.xml", gtest_xml(
            "Handle", "OwnedHandleIsReleasedOnce", failures=["h.cpp:3\nreleased twice"]))
        obs = self.gpu1 / "observations" / "priority_flags.PriorityFlags.SpecialHandles.json"
        doc = json.loads(obs.read_text())
        doc["observations"]["per_thread.flags"] = 0
        doc["observations"]["note"] = "a measurement no baseline compares"
        write(obs, json.dumps(doc))
        self.pair = self.root / "pair" / "20260101T000000Z-3"
        write(self.pair / "env.json", json.dumps(dict(env_doc("20260101T000000Z-3"),
                                                      environment={"CUDA_VISIBLE_DEVICES": "0,1"})))
        write(self.pair / "gtest" / "events.EventsAcrossDevices.Wait.xml", gtest_xml("EventsAcrossDevices", "Wait"))

    def view(self):
        return machine_view([load_run(d) for d in (self.gpu0, self.gpu1, self.pair)])

    def test_what_differs_between_the_gpus(self):
        view = self.view()
        self.assertEqual([len(view["gpus"]), len(view["pairs"])], [2, 1])
        self.assertEqual([(c["test"], c["statuses"]) for c in view["status"]],
                         [("unit.Handle.OwnedHandleIsReleasedOnce", ["passed", "failed"])])
        self.assertEqual([(c["key"], c["values"]) for c in view["values"]], [("per_thread.flags", [1, 0])])
        self.assertEqual(view["measured"], 1, "counted, not listed")
        self.assertEqual(view["environment"], [], "UUIDs differ by nature and are not a difference")
        text = machine_text(view)
        self.assertIn("machine: 2 GPUs, 1 two-GPU run; differences between the GPUs: 1 test status, 1 observed "
                      "value a baseline compares, 0 baseline rows, 0 environment facts", text)
        self.assertIn("unit.Handle.OwnedHandleIsReleasedOnce: passed / failed", text)

    def test_gpus_that_agree(self):
        view = machine_view([load_run(self.gpu0), load_run(self.gpu0)])
        self.assertEqual((view["status"], view["values"], view["baselines"]), ([], [], []))

    def test_command_line_writes_the_page_differences_first(self):
        out = self.root / "machine.html"
        done = subprocess.run([sys.executable, str(REPORTS / "streamcheck_report.py"), "--machine", str(self.gpu0),
                               str(self.gpu1), str(self.pair), "--source", str(self.source), "-o", str(out)],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(0, done.returncode, done.stderr)
        page = out.read_text()
        self.assertLess(page.index('id="differences"'), page.index('id="grid"'))
        self.assertLess(page.index('id="grid"'), page.index('id="pairs"'))
        self.assertIn("GPU 1 (NVIDIA H200, GPU-ffffffff)", page)
        self.assertIn("The GPUs differ in 2 places", page)
        self.assertIn('<span class="mono">0,1</span>', page)
        self.assertIn("machine: %s" % out, done.stdout)
        refused = subprocess.run([sys.executable, str(REPORTS / "streamcheck_report.py"), "--machine",
                                  str(self.gpu0)], capture_output=True, text=True, timeout=60)
        self.assertEqual(2, refused.returncode)
        self.assertIn("--machine needs -o", refused.stderr)


if __name__ == "__main__":
    unittest.main()
