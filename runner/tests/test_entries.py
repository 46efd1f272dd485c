#!/usr/bin/env python3
"""The entries ctest is given (runner/cmake/entries.py), checked without a GPU on a GoogleTest executable whose
tests claim the folders of two families (tests/unit/entries_fake.cpp):

    test_entries.py SC_ENTRIES_FAKE
"""
import os
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

import entries  # runner/cmake/entries.py, on PYTHONPATH (tests/unit/CMakeLists.txt)

FAKE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("SC_ENTRIES_FAKE", "")


def family(isolated=(), two_gpus=(), variants=()):
    return {"kind": "gpu", "timeout": 60, "isolated": list(isolated), "two_gpus": list(two_gpus),
            "variants": [{"name": n, "filter": f, "sets": s} for n, f, s in variants]}


CONN1 = ("conn1", "+Fam.One*:Other.Axb", "CUDA_DEVICE_MAX_CONNECTIONS=1")


@unittest.skipUnless(FAKE and Path(FAKE).exists(), "the stand-in executable sc_entries_fake is not built")
class Entries(unittest.TestCase):
    def setUp(self):
        self.work = Path(tempfile.mkdtemp())
        self.exe = self.work / "sc_entries_fake"
        shutil.copy(FAKE, self.exe)  # its lists are kept beside it
        self.families = {"fam": family(isolated=["Other.First*"], variants=[CONN1]), "kin": family(),
                         "stray": family()}

    def tearDown(self):
        shutil.rmtree(self.work)

    def make(self, mode, only=()):
        config = {"cmake": "cmake", "fail_script": "fail.cmake", "results": "/r", "families": self.families,
                  "executables": [{"name": "suite", "path": str(self.exe), "build": "legacy", "kind": "gpu"}]}
        lines = entries.make_entries(config, mode, list(only))
        made = {}
        for line in lines:
            args = re.findall(r"\[==\[(.*?)\]==\]", line)
            if line.startswith("add_test"):
                made[args[0]] = {"args": args[1:], "props": {}}
            else:
                made[args[0]]["props"] = dict(zip(line.split("PROPERTIES ")[1].split(" ")[::2], args[1:]))
        return made

    @staticmethod
    def filters(made):
        return {name: next((a.split("=", 1)[1] for a in e["args"] if a.startswith("--gtest_filter=")), None)
                for name, e in made.items()}

    def test_isolated_mode_gives_every_test_one_entry_named_after_its_family(self):
        made = self.filters(self.make(""))
        self.assertEqual({
            "fam.Fam.Plain": "Fam.Plain", "fam.Fam.Dotty": "Fam.Dotty", "fam.Fam.OneConnection": "Fam.OneConnection",
            "fam.Other.FirstLaunch": "Other.FirstLaunch", "fam.P/Sweep.Case/0": "P/Sweep.Case/0",
            "fam.conn1.Fam.OneConnection": "Fam.OneConnection", "fam.conn1.Other.Axb": "Other.Axb",
            "kin.Kin.Alone": "Kin.Alone", "kin.Kin.Pair": "Kin.Pair", "stray.Stray.Lost": "Stray.Lost"}, made)

    def test_fast_mode_runs_every_family_in_one_process_per_variant(self):
        made = self.make("fast")
        self.assertEqual({
            "fam.Other.FirstLaunch": "Other.FirstLaunch",
            "suite.fast": "Fam.Plain:Fam.Dotty:Fam.OneConnection:P/Sweep.Case/0:Kin.Alone:Kin.Pair:Stray.Lost",
            "suite.conn1.fast": "Fam.OneConnection:Other.Axb"}, self.filters(made))
        self.assertEqual("fam;kin;stray;gpu", made["suite.fast"]["props"]["LABELS"])
        self.assertEqual("CUDA_DEVICE_MAX_CONNECTIONS=1", made["suite.conn1.fast"]["props"]["ENVIRONMENT"])
        self.assertIn("--streamcheck-variant=conn1,CUDA_DEVICE_MAX_CONNECTIONS", made["suite.conn1.fast"]["args"])
        self.assertEqual("gpus:1", made["suite.fast"]["props"]["RESOURCE_GROUPS"])
        self.assertEqual("900", made["suite.fast"]["props"]["TIMEOUT"])

    def test_both_modes_run_the_same_tests_once(self):
        for mode in ("", "fast"):
            runs = [(e["props"].get("ENVIRONMENT", ""), t) for e in self.make(mode).values()
                    for a in e["args"] if a.startswith("--gtest_filter=") for t in a.split("=", 1)[1].split(":")]
            self.assertEqual(len(runs), len(set(runs)), mode)
            self.assertEqual(10, len(runs), mode)

    def test_families_named_in_streamcheck_families_are_the_only_ones(self):
        self.assertEqual({"suite.fast": "Kin.Alone:Kin.Pair"}, self.filters(self.make("fast", only=["kin"])))

    def test_a_two_gpu_test_must_be_isolated(self):
        self.families["kin"] = family(two_gpus=["Kin.Pair"])
        made = self.make("")
        self.assertIn("-DSC_FAIL=Kin.Pair need two GPUs but are not ISOLATED", made["kin.TwoGpuTestsAreIsolated"]["args"])
        self.families["kin"] = family(isolated=["Kin.Pair"], two_gpus=["Kin.Pair"])
        self.assertEqual("kin;gpu;two_gpus", self.make("fast")["kin.Kin.Pair"]["props"]["LABELS"])

    def test_a_variant_pattern_that_selects_nothing_fails(self):
        self.families["fam"] = family(variants=[("conn1", "Fam.One*:Fam.Renamed", "CUDA_DEVICE_MAX_CONNECTIONS=1")])
        made = self.make("")
        self.assertIn("fam.conn1.PatternSelectsNoTest", made)
        self.assertIn("'Fam.Renamed' selects no test", made["fam.conn1.PatternSelectsNoTest"]["args"][1])

    def test_a_pattern_selects_in_its_own_family_only(self):
        self.families["kin"] = family(isolated=["*.Plain", "Kin.Alone"],
                                      variants=[("conn1", "*.Pair:*.Dotty", "CUDA_DEVICE_MAX_CONNECTIONS=1")])
        made = self.make("")
        self.assertIn("kin.conn1.Kin.Pair", made)
        self.assertNotIn("kin.conn1.Fam.Dotty", made)
        self.assertIn("'*.Dotty' selects no test", made["kin.conn1.PatternSelectsNoTest"]["args"][1])
        self.assertNotIn("kin.Fam.Plain", self.make("fast"))
        self.assertIn("kin.Kin.Alone", self.make("fast"))

    def test_tests_outside_every_family_fail_and_an_unknown_mode_fails(self):
        del self.families["stray"]
        self.assertIn("Stray.Lost", self.make("")["suite.UnknownFamily"]["args"][1])
        self.assertEqual(["streamcheck.mode"], list(self.make("quick")))


if __name__ == "__main__":
    unittest.main()
