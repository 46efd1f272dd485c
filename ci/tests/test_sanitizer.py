"""ci/sanitizer.py: how the sanitizer job reads the tool's output, the tests' verdicts and its own lists."""
import importlib.util
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("sanitizer", ROOT / "ci" / "sanitizer.py")
sanitizer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sanitizer)

MEMCHECK = """========= COMPUTE-SANITIZER
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaStreamCreateWithFlags.
=========     Saved host backtrace up to driver entry point at error
========= Program hit cudaErrorNotReady (error 600) due to "device not ready" on CUDA API call to cudaStreamQuery.
========= ERROR SUMMARY: 2 errors
"""
RACECHECK = "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"


class ToolOutput(unittest.TestCase):
    def test_api_errors_are_named_and_not_ready_is_a_status(self):
        found = sanitizer.tool_findings(MEMCHECK)
        self.assertEqual(1, found["errors"])
        self.assertEqual(1, found["statuses"])
        self.assertEqual([("cudaStreamCreateWithFlags", "cudaErrorInvalidValue")], found["api_errors"])

    def test_every_process_summary_counts_and_racecheck_has_its_own(self):
        two = "========= ERROR SUMMARY: 0 errors\n========= ERROR SUMMARY: 3 errors\n"
        self.assertEqual(3, sanitizer.tool_findings(two)["errors"])
        self.assertEqual(2, sanitizer.tool_findings(two)["summaries"])
        self.assertEqual(1, sanitizer.tool_findings(RACECHECK)["errors"])

    def test_no_summary_means_no_counted_error(self):
        self.assertEqual(0, sanitizer.tool_findings("")["errors"])


class Verdicts(unittest.TestCase):
    def test_passed_failed_skipped_watchdog_and_early_end(self):
        self.assertEqual("passed", sanitizer.test_outcome("[  PASSED  ] 1 test.\n")[0])
        failed = sanitizer.test_outcome("/x/a.cpp:3: Failure\nValue of: ...\n[  FAILED  ] A.B\n")
        self.assertEqual(("failed", "/x/a.cpp:3: Failure"), failed)
        skipped = sanitizer.test_outcome("/x/a.cpp:3: Skipped\nCUDA_LAUNCH_BLOCKING=1 ...\n[  SKIPPED ] A.B\n")
        self.assertEqual(("skipped", "CUDA_LAUNCH_BLOCKING=1 ..."), skipped)
        self.assertEqual("failed", sanitizer.test_outcome("STREAMCHECK-WATCHDOG gate 1\n[  PASSED  ] 1 test.")[0])
        self.assertEqual("failed", sanitizer.test_outcome("[ RUN      ] A.B\n")[0])

    def test_the_skip_reason_follows_googletests_skip_line_not_a_test_name_with_the_word(self):
        # Seen on the H100: HOST-11 (...HostFunctionsAreSkipped) was reported with the tool's banner as its reason.
        log = ("$ compute-sanitizer --tool memcheck exe --gtest_filter=HostFuncs.AfterAFaultFunctionsAreSkipped\n"
               "========= COMPUTE-SANITIZER\n"
               "Note: Google Test filter = HostFuncs.AfterAFaultFunctionsAreSkipped\n"
               "/x/fault_test.cpp:84: Skipped\n"
               "the process runs under compute-sanitizer\n"
               "[  SKIPPED ] HostFuncs.AfterAFaultFunctionsAreSkipped (308 ms)\n")
        self.assertEqual(("skipped", "the process runs under compute-sanitizer"), sanitizer.test_outcome(log))


class Summary(unittest.TestCase):
    def test_skips_not_compared_under_the_tool_group_by_reason_not_by_their_rows(self):
        import json
        import tempfile
        tool = "the process runs under compute-sanitizer --tool memcheck"
        results = []
        with tempfile.TemporaryDirectory() as d:
            for n in (1, 2):
                path = Path(d) / ("f.S.%d.json" % n)
                path.write_text(json.dumps({"skip_kind": "not_compared", "baseline": [
                    {"id": "X-0%d" % n, "key": "k", "status": "not-compared", "detail": tool}]}))
                why = "not compared: %s; recorded: X-0%d/k;" % (tool, n)
                results.append({"entry": "f.S.%d" % n, "gtest": "S.%d" % n, "outcome": "skipped", "errors": 0,
                                "api_errors": [], "why": why, "group": sanitizer.skip_group(path, why), "log": "l"})
            # An ordinary skip keeps its reason.
            self.assertEqual("no GPU", sanitizer.skip_group(Path(d) / "missing.json", "no GPU"))
        ok, lines = sanitizer.summarize("memcheck", results, 1.0, "run")
        self.assertTrue(ok)
        groups = [l for l in lines if l.startswith("  skipped")]
        self.assertEqual(["  skipped (2): not compared: %s [f.S.1, f.S.2]" % tool], groups)


class Lists(unittest.TestCase):
    def test_options_follow_the_lists_and_every_entry_has_a_reason(self):
        plain = sanitizer.tool_options("memcheck", "Harness.LatchHoldsItsStreamUntilOpened")
        self.assertEqual(["--tool", "memcheck", "--error-exitcode", "86", "--check-exit-code", "no"], plain)
        bad_args = sanitizer.tool_options("memcheck", "PriorityFlags.UnknownFlagBitsAreRejected")
        self.assertIn("--report-api-errors", bad_args)
        # Death-test children skip under the tool (requirement death_test_children): none is left untracked.
        child = sanitizer.tool_options("memcheck", "PriorityFlags.NullOutPointersReturnAnErrorCode")
        self.assertNotIn("application-only", child)
        for name, reason in sanitizer.EXPECTED_API_ERRORS.items():
            self.assertRegex(name, r"^\w+\.\w+(/\*)?$")  # Suite.Test, or every instance of a TEST_P
            self.assertTrue(reason.strip(), name)

    def test_listed_tests_exist(self):
        sources = "".join(p.read_text() for p in (ROOT / "tests").glob("*/*_test.c*"))
        for name in sanitizer.EXPECTED_API_ERRORS:
            suite, test = name.split(".")
            macro = "TEST_P" if test.endswith("/*") else "TEST_F"
            self.assertIn("%s(%s, %s)" % (macro, suite, test.replace("/*", "")), sources, name)

    def test_the_families_are_the_labels_of_the_gpu_entries(self):
        listing = {"tests": [
            {"name": "a", "properties": [{"name": "LABELS", "value": ["default_streams", "gpu"]}]},
            {"name": "b", "properties": [{"name": "LABELS", "value": ["unit", "nogpu"]}]},
            {"name": "c", "properties": [{"name": "LABELS", "value": ["gpu", "harness"]}]}]}
        self.assertEqual(("default_streams", "harness"), sanitizer.gpu_families(listing))

    def test_entries_come_from_the_gpu_labels_with_their_environment(self):
        listing = {"tests": [
            {"name": "default_streams.launch_blocking.DefaultStreams.X",
             "command": ["exe", "--gtest_filter=DefaultStreams.X"],
             "properties": [{"name": "LABELS", "value": ["default_streams", "gpu"]},
                            {"name": "ENVIRONMENT", "value": ["CUDA_LAUNCH_BLOCKING=1"]},
                            {"name": "TIMEOUT", "value": 90.0}]},
            {"name": "unit.A.B", "command": ["u"], "properties": [{"name": "LABELS", "value": ["unit", "nogpu"]}]},
            {"name": "harness.Harness.Y", "command": ["h", "--gtest_filter=Harness.Y"],
             "properties": [{"name": "LABELS", "value": ["gpu", "harness"]}]},
        ]}
        entries = sanitizer.gpu_entries(listing, ("default_streams",))
        self.assertEqual(["default_streams.launch_blocking.DefaultStreams.X"], [e["name"] for e in entries])
        self.assertEqual("DefaultStreams.X", entries[0]["gtest"])
        self.assertEqual(["CUDA_LAUNCH_BLOCKING=1"], entries[0]["environment"])
        self.assertEqual(90.0, entries[0]["timeout"])

    def test_discovered_entries_without_a_filter_take_suite_and_test_from_the_ctest_name(self):
        # PRE_TEST discovery runs the test through a wrapper whose command has no --gtest_filter (seen on the
        # H100: the lists did not apply and PRIO-10 hung under memcheck).
        self.assertEqual("PriorityFlags.NullOutPointersReturnAnErrorCode",
                         sanitizer.gtest_name("priority_flags.PriorityFlags.NullOutPointersReturnAnErrorCode",
                                              ["cmake", "-P", "wrapper.cmake"]))
        self.assertEqual("LazyLoadingAcrossDevices.X",
                         sanitizer.gtest_name("events.eager.LazyLoadingAcrossDevices.X", ["cmake"]))


if __name__ == "__main__":
    unittest.main()
