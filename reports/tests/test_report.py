"""Tests of the report (reports/streamcheck_report.py and reports/streamcheck/) on synthetic run folders (standard library only).

Run: python3 -m unittest discover -s reports/tests -v
"""

import json
import re
import tempfile
import unittest
from pathlib import Path

from synthetic import (PLAN, SCRIPT_TEXT, details_of, embedded_data, env_doc, family_of, files_beside, full_data,
                       git_source, gtest_xml, make_run, make_source, observation, opened_page, run_cli, run_script,
                       shared_gpu_fields, write)
from streamcheck import common, model, timeline


class ReportTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-report-test-")
        self.root = Path(self._tmp.name)
        self.source = make_source(self.root / "src")
        self.run_dir = make_run(self.root / "results")
        self.out = self.root / "report.html"

    def tearDown(self):
        self._tmp.cleanup()

    def generate(self, *run_dirs):
        """The CLI's result and the page as a reader sees it with every test's row opened (opened_page)."""
        result = run_cli(*(run_dirs or (self.run_dir,)), "--source", self.source, "-o", self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        return result, opened_page(self.out.read_text(encoding="utf-8"), files_beside(self.out))

    def data(self):
        """The page's data block, each test's record read from its details file (full_data)."""
        return full_data(self.out.read_text(encoding="utf-8"), files_beside(self.out))

    def details(self, ctest):
        """What the test's details file hands the page: {row, html, test}."""
        return details_of((self.out.parent / "details" / (common.slug(ctest) + ".js")).read_text(encoding="utf-8"))

    def row(self, page, ctest):
        """The test's row in the page and the markup of its details."""
        match = re.search(r'<tr id="t-%s" data-status=.*?</tr>' % re.escape(common.slug(ctest)), page, re.S)
        self.assertIsNotNone(match, "no row for %s" % ctest)
        return match.group(0) + self.details(ctest)["html"]

    def assert_refused(self, result, *needles):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)


class TotalsAndSummary(ReportTestCase):
    def test_the_page_goes_into_a_folder_that_does_not_exist_yet(self):
        out = self.out.parent / "new" / "folder" / "report.html"
        result = run_cli(self.run_dir, "--source", self.source, "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(out.is_file())

    def test_summary_line_counts_every_outcome(self):
        result, page = self.generate()
        self.assertEqual(result.stdout.strip(),
                         "report: %s (6 tests: 4 passed, 1 failed, 1 skipped, 0 not judged (shared GPU), 0 not run; "
                         "1 planned test(s) not in this run; 1 IDs uncovered)" % self.out)
        data = self.data()
        # The planned test that no entry of the run listed (PriorityFlags.NeverRan) is not "not run": that is a
        # test an entry was asked to run that has no result, as the gate and JUnit count it.
        self.assertEqual(data["totals"], {"tests": 6, "passed": 4, "failed": 1, "skipped": 1, "shared_gpu": 0,
                                          "notrun": 0, "planned": 1})
        never = next(t for t in data["tests"] if t["gtest_name"] == "PriorityFlags.NeverRan")
        self.assertEqual((never["planned_only"], never["plan_ids"]), (True, ["PRIO-05"]))
        self.assertIn('<span class="st st-planned">planned, not in this run</span>', page)
        self.assertIn("Apart from these: 1 test the plans name that this run never listed", page)

    def test_failure_banner_names_the_failed_test(self):
        _, page = self.generate()
        banner = re.search(r'<div class="banner fail">(.*?)</div>', page, re.S)
        self.assertIsNotNone(banner)
        self.assertIn("1 test FAILED", banner.group(1))
        self.assertIn("priority_flags.PriorityFlags.DriverRangeMatches", banner.group(1))

    def test_no_banner_of_failure_when_nothing_failed(self):
        (self.run_dir / "gtest" / "priority_flags.PriorityFlags.DriverRangeMatches.xml").unlink()
        result, page = self.generate()
        self.assertIn("0 failed", result.stdout)
        self.assertNotIn('class="banner fail"', page)
        self.assertIn("No test failed", page)

    def test_failed_tests_do_not_change_the_exit_status_and_default_output_is_in_the_run(self):
        # As a command, the way ci/run_suite.sh runs it (the other tests call its main()).
        result = run_script(self.run_dir, "--source", self.source)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue((self.run_dir / "report.html").is_file())
        self.assertIn(str(self.run_dir / "report.html"), result.stdout)


class Coverage(ReportTestCase):
    def statuses(self, page):
        data = self.data()
        return {row["id"]: row["status"] for row in data["coverage"]["rows"]}

    def test_each_plan_row_gets_its_status(self):
        _, page = self.generate()
        self.assertEqual(self.statuses(page), {
            "PRIO-01": "pass", "PRIO-02": "fail", "PRIO-03": "skipped", "PRIO-04": "uncovered",
            "PRIO-05": "no-result", "PRIO-07": "differs", "PRIO-08": "retired"})
        for label in ("uncovered", "no-result", "observed-differs", "retired", "FAIL"):
            self.assertIn(label, page)

    def test_family_without_plan_and_unplanned_ids_are_listed(self):
        write(self.run_dir / "gtest" / "instruments.Instruments.TickIsMeasured.xml", gtest_xml(
            "Instruments", "TickIsMeasured",
            properties={"catalog_id": "INST-01", "verdict_kind": "observed", "doc_source": "PTX"}))
        _, page = self.generate()
        data = self.data()
        # unit has a folder but no README; instruments has results but no folder in this source tree.
        self.assertEqual([e["family"] for e in data["coverage"]["no_plan"]], ["instruments", "unit"])
        self.assertIn("no plan", page)
        self.assertEqual([(r["id"], r["status"]) for r in data["coverage"]["unplanned"]], [("INST-01", "pass")])
        self.assertIn("IDs claimed by tests but absent from every plan", page)

    def test_plan_of_tests_without_ids_lists_missing_and_unlisted_tests(self):
        write(self.source / "tests" / "unit" / "README.md",
              "# unit\n\n| Tests | What |\n|---|---|\n| `Handle.*` | ownership |\n| `Spans.Refused` | spans |\n")
        write(self.run_dir / "gtest" / "unit.Clock.Fits.xml", gtest_xml("Clock", "Fits"))
        _, page = self.generate()
        data = self.data()
        self.assertEqual([e["family"] for e in data["coverage"]["no_plan"]], [])
        entry = data["coverage"]["self_tested"][0]
        self.assertEqual((entry["family"], entry["planned"], entry["tests"]), ("unit", 2, 2))
        self.assertIn("listed but no result: Spans.Refused; ran but not listed: unit.Clock.Fits", page)
        self.assertIn("Families without catalog IDs", page)
        self.assertIn("plan: 2 listed tests, no catalog IDs", page)

    def test_skip_reason_of_a_skipped_id_is_shown(self):
        _, page = self.generate()
        row = re.search(r'<tr data-status="skipped"[^>]*id="id-PRIO-03">(.*?)</tr>', page, re.S)
        self.assertIsNotNone(row)
        self.assertIn("stream priorities are not supported on this device", row.group(1))

    def test_plan_parser_reads_the_table_and_ignores_other_text(self):
        rows, note = model.parse_plan(PLAN)
        self.assertIsNone(note)
        self.assertEqual([r["id"] for r in rows],
                         ["PRIO-01", "PRIO-02", "PRIO-03", "PRIO-04", "PRIO-05", "PRIO-07", "PRIO-08"])
        self.assertEqual(rows[0]["tests"], ["PriorityFlags.RangeIsOrdered"])
        self.assertEqual(rows[3]["tests"], [])
        self.assertTrue(rows[6]["retired"])
        self.assertEqual(rows[5]["kind"], "observed")
        rows, note = model.parse_plan("# a plan\n\nno table here\n")
        self.assertEqual(rows, [])
        self.assertIn("no plan table", note)

    def test_several_tests_in_one_cell(self):
        rows, _ = model.parse_plan("| ID | Kind | Source | Tests |\n|---|---|---|---|\n"
                                    "| X-01 | documented | RT | `A.B`, `C.D` |\n")
        self.assertEqual(rows[0]["tests"], ["A.B", "C.D"])


class TestDetails(ReportTestCase):
    def test_skip_reason_is_shown_without_the_file_line_prefix(self):
        _, page = self.generate()
        self.assertIn("<b>skipped:</b> stream priorities are not supported on this device", page)
        data = self.data()
        test = next(t for t in data["tests"] if t["gtest_name"] == "PriorityFlags.ClampsOutOfRange")
        self.assertEqual(test["skip_reason"], "stream priorities are not supported on this device")
        self.assertEqual(test["skip_location"], "/src/fixtures/src/gpu_test.cpp:22")

    def test_every_test_is_a_row_and_a_details_file_with_its_whole_record(self):
        _, page = self.generate()
        raw = self.out.read_text(encoding="utf-8")
        tests = model.build_model(self.run_dir, self.source)["tests"]
        # Each family's file holds its rows and lists its tests; the page holds no row, and lists the families.
        families = [family_of(text) for name, text in sorted(files_beside(self.out).items())
                    if name.startswith("families/")]
        self.assertEqual([f["family"] for f in families], ["f-priority_flags", "f-unit"])
        self.assertEqual([(f["family"], f["file"], f["tests"]) for f in embedded_data(raw)[1]["families"]],
                         [("priority_flags", "families/priority_flags.js", 6), ("unit", "families/unit.js", 1)])
        index = [t for f in families for t in f["tests"]]
        self.assertEqual(sorted(t["ctest_name"] for t in index), sorted(tests))
        self.assertNotIn('<tr id="t-', raw)
        self.assertEqual(sorted(p.name for p in (self.out.parent / "details").iterdir()),
                         sorted(common.slug(name) + ".js" for name in tests))
        for entry in index:
            details = self.details(entry["ctest_name"])
            # Nothing the page's data block held of a test is lost: its record has every field of the model.
            self.assertEqual(set(details["test"]), set(tests[entry["ctest_name"]]))
            self.assertEqual(entry["status"], details["test"]["status"])
            self.assertIn('<tr id="%s" data-status=' % details["row"], page)
        # A row says in a line why its test failed; the details have every failure whole.
        self.assertIn('<td class="small">priority_test.cpp:61: Expected equality of these values: least_ Which is: '
                      '0 seen &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;</td></tr>', page)
        self.assertNotIn("<pre>", raw)

    def test_every_failure_text_is_shown_in_a_pre(self):
        _, page = self.generate()
        blocks = re.findall(r"<pre>(.*?)</pre>", page, re.S)
        self.assertEqual(len(blocks), 2)
        self.assertIn("Expected equality of these values:", blocks[0])
        self.assertIn("second failure &lt;/pre&gt; here", blocks[1])

    def test_script_in_a_failure_message_is_escaped(self):
        _, page = self.generate()
        self.assertNotIn(SCRIPT_TEXT, page)
        self.assertIn("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;", page)
        self.assertNotIn("<b>bold</b>", page)
        raw, _ = embedded_data(page)
        outside = page.replace(raw, "")
        self.assertEqual(outside.count("<script"), 2)  # the data block and the optional filter script

    def test_embedded_json_escapes_every_closing_tag(self):
        _, page = self.generate()
        raw, _ = embedded_data(page)
        self.assertNotIn("</", raw)
        failed = next(t for t in self.data()["tests"] if t["status"] == "failed")
        self.assertIn(SCRIPT_TEXT, failed["failures"][0])
        # The details file is a script of its own: its JSON escapes closing tags as well.
        details = (self.out.parent / "details" / (failed["ctest_name"] + ".js")).read_text(encoding="utf-8")
        self.assertNotIn("</", details)
        self.assertIn("<\\/script>", details)

    def test_no_external_urls(self):
        _, page = self.generate()
        self.assertNotIn("http://", page)
        self.assertNotIn("https://", page)
        self.assertNotRegex(page, r"""(src|href)\s*=\s*["']?(//|[a-z]+:)""")

    def test_failed_first_within_a_family_and_ptds_labelled(self):
        _, page = self.generate()
        family = re.search(r'<details class="family" id="f-priority_flags">(.*?)</details>', page, re.S)
        self.assertIsNotNone(family)
        statuses = re.findall(r'<tr id="t-[^"]+" data-status="(\w+)"', family.group(1))
        # The planned test the run never listed comes last: it is not a result of the run.
        self.assertEqual(statuses, ["failed", "skipped", "passed", "passed", "passed", "planned"])
        self.assertIn('<span class="tag" title="ctest prefix priority_flags.ptds.">ptds</span>', family.group(1))
        self.assertNotIn('id="f-ptds"', page)

    def test_observed_values_baseline_and_mutation(self):
        _, page = self.generate()
        text = self.row(page, "priority_flags.PriorityFlags.SpecialHandles")
        self.assertIn("legacy.priority<i>=</i>0", text)
        self.assertIn("per_thread.flags", text)
        self.assertIn("st-differs", text)
        self.assertIn("first sm_90 value to confirm", text)
        self.assertIn("mutation: PRIO-01", page)
        self.assertIn("set-up 1.5 ms", text)

    def test_header_shows_gpu_versions_and_commit(self):
        _, page = self.generate()
        header = page[page.index("<header>"):page.index("</header>")]
        for needle in ("NVIDIA H200", "CC 9.0", "132 SMs", "580.95.05 (CUDA 13.0) \u00b7 open kernel module 580.95.05",
                       "<dt>CUDA runtime</dt><dd>13.0", "c9f25ae7e95e",
                       "32 ns", "least 0 / greatest -5", "<b>off</b>", "CUPTI tracing is not part of this build yet"):
            self.assertIn(needle, header)
        self.assertIn("INST-01", page[page.index('id="instruments"'):])

    def test_header_without_gpu_shows_the_reason(self):
        run = make_run(self.root / "nogpu", gpu=False, driver=0, release=None)
        _, page = self.generate(run)
        header = page[page.index("<header>"):page.index("</header>")]
        self.assertIn("no GPU:</b> no usable CUDA device: cudaGetDeviceCount -&gt; cudaErrorInsufficientDriver", header)
        self.assertIn("<dt>Driver</dt><dd>none</dd>", header)
        totals = page[page.index('id="totals"'):]
        self.assertIn("\u2717 Nothing was tested on a GPU (no GPU was used: no usable CUDA device", totals)

    def test_version_formatting(self):
        self.assertEqual(common.cuda_version(13000), "13.0")
        self.assertEqual(common.cuda_version(12080), "12.8")
        self.assertEqual(common.cuda_version(0), "none (0)")


class Evidence(ReportTestCase):
    """Observation schema 1.3: fired watchdogs, invalid gate checks, mutation kinds, the baseline rule."""

    def add_test(self, name, doc_fields=None, failures=(), skip=None, properties=None, claims=None,
                 baseline=None, version="1.3.0", suite="Harness", family="harness"):
        """A test of the family with an XML file and an observation file of the given schema version;
        returns its ctest name."""
        ctest = "%s.%s.%s" % (family, suite, name)
        write(self.run_dir / "gtest" / (ctest + ".xml"), gtest_xml(suite, name, failures=failures, skip=skip,
                                                                    properties=properties))
        outcome = "failed" if failures else "skipped" if skip is not None else "passed"
        doc = observation(ctest, "%s.%s" % (suite, name), claims or [], baseline=baseline, outcome=outcome)
        doc["schema_version"] = version
        doc.update(doc_fields or {})
        write(self.run_dir / "observations" / (ctest + ".json"), json.dumps(doc))
        return ctest

    def test_unexpected_watchdog_is_a_failure_tag_with_each_gate(self):
        fired = [{"latch": 0, "held": "s1", "watchdog_ms": 2000, "waited_ns": 2000000000, "expected": False}]
        ctest = self.add_test("GateNobodyOpened", {"watchdog": fired},
                              failures=["/src/fixtures/src/gpu_test.cpp:94\nthe watchdog of latch 0 fired"],
                              properties={"watchdog": "1 latch(es) fired"})
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('data-status="failed"', row)
        self.assertRegex(row, r'<span class="tag watchdog" title="a latch was not opened before its watchdog ended it: '
                              r'the test fails[^"]*">watchdog fired \(unexpected\)</span>')
        self.assertIn("<li>latch 0 holding s1: watchdog 2000 ms, waited 2.000 s; unexpected: the test fails", row)
        self.assertNotIn("watchdog<i>=</i>", row)  # the XML property is evidence, not an observed value
        data = self.data()
        test = next(t for t in data["tests"] if t["ctest_name"] == ctest)
        self.assertEqual(test["watchdog"], fired)

    def test_expected_watchdog_is_told_apart(self):
        # The second as a file older than schema 1.14 has it: its number under "gate".
        fired = [{"latch": 3, "held": "s", "watchdog_ms": 20, "waited_ns": 20480000, "expected": True},
                 {"gate": 4, "held": "", "watchdog_ms": 20, "waited_ns": 20100000, "expected": True}]
        ctest = self.add_test("WatchdogEndsALatchNobodyOpens", {"watchdog": fired})
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('data-status="passed"', row)
        self.assertRegex(row, r'<span class="tag watchdog-expected" title="[^"]*">watchdog fired \(expected\) '
                              r'\u00d72</span>')
        self.assertNotIn('class="tag watchdog"', row)
        self.assertIn("<li>latch 4: watchdog 20 ms, waited 20.10 ms; expected (a test of the watchdog itself)</li>",
                      row)

    def test_an_arrangement_built_again_is_tagged_with_the_discarded_reasons(self):
        retried = self.add_test("HighGridBehindBusyLowStreams", {"observations": {
            "arrangement.attempts": 3, "arrangement.attempt1.not_ready": "grids started <19082 us> later",
            "arrangement.attempt2.not_ready": "grids started 6737 us later"}},
            suite="PrioritySched", family="priority_sched")
        once = self.add_test("EveryPriorityLevelIsDispatchedInOrder", {"observations": {"arrangement.attempts": 1}},
                             suite="PrioritySched", family="priority_sched")
        _, page = self.generate()
        row = self.row(page, retried)
        self.assertIn('data-status="passed"', row)
        self.assertRegex(row, r'<span class="tag retried" title="the last attempt is the one judged; the ones before '
                              r'it proved nothing:\nattempt 1: grids started &lt;19082 us&gt; later\n'
                              r'attempt 2: grids started 6737 us later">arrangement built 3 times</span>')
        self.assertNotIn('class="tag retried"', self.row(page, once))

    def test_invalid_checks_are_listed_and_escaped(self):
        checks = ["absent_while_held: the latch was never held, so it proves nothing",
                  "call_while_held: the call <returned> after the latch was opened, so it proves nothing"]
        ctest = self.add_test("ChecksOnAnOpenedLatchAreInvalid", {"invalid_checks": checks},
                              failures=["/src/tests/harness/harness_test.cpp:90\ninvalid check"],
                              properties={"invalid_check": checks[-1]})
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn("<b>invalid checks (2):</b>", row)
        self.assertIn("<li>absent_while_held: the latch was never held, so it proves nothing</li>", row)
        self.assertIn("the call &lt;returned&gt; after the latch was opened", row)
        self.assertNotIn("<returned>", page.replace(embedded_data(page)[0], ""))
        self.assertNotIn("invalid_check<i>=</i>", row)
        self.assertNotIn("from the XML", row)

    def test_xml_without_observation_file_still_shows_the_evidence(self):
        ctest = "harness.Harness.XmlOnly"
        write(self.run_dir / "gtest" / (ctest + ".xml"), gtest_xml(
            "Harness", "XmlOnly", failures=["x.cpp:1\nfailed"],
            properties={"watchdog": "1 latch(es) fired", "invalid_check": "absent_while_held: proves nothing",
                        "mutation": "HARN-01", "mutation_kind": "expectation", "waited": 7}))
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn(">watchdog: 1 latch(es) fired</span>", row)
        self.assertIn("<b>invalid checks (1):</b> <span class=\"muted\">(the last one, from the XML)</span>", row)
        self.assertIn("mutation: HARN-01 (expectation)", row)
        self.assertIn("waited<i>=</i>7", row)
        for key in ("watchdog", "invalid_check", "mutation_kind", "mutation"):
            self.assertNotIn("%s<i>=</i>" % key, row)

    def test_mutation_kind_is_shown_next_to_the_mutation(self):
        ctest = self.add_test("Mutated", {"mutation": "DFLT-02", "mutation_kind": "arrangement"},
                              failures=["x.cpp:1\nthe mark landed"])
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('<span class="tag mutation" title="the mutation changed what the test sets up, so the '
                      'observation itself must tell the difference">mutation: DFLT-02 (arrangement)</span>', row)

    def test_a_row_under_a_sanitizer_tool_reads_not_compared_and_the_test_is_a_plain_skip(self):
        why = "the process runs under compute-sanitizer --tool racecheck (STREAMCHECK_SANITIZER), which instruments"
        baseline = [{"id": "SCHED-06", "key": "later_grid_waits", "observed": False, "status": "not-compared",
                     "detail": why}]
        ctest = self.add_test("UnderTool", claims=[("SCHED-06", "observed", "RTSS17")], baseline=baseline,
                              version="1.7.0", skip="x.cpp:1\nnot compared: " + why + "; recorded: SCHED-06/k;")
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('<span class="st st-not-compared">not compared (under a tool)</span>', row)
        self.assertNotIn("<b>not judged</b>", row)

    def test_missing_baselines_folder_is_a_failure_row(self):
        baseline = [{"id": "PRIO-07", "key": "legacy.priority", "observed": 0, "status": "no-baseline-dir",
                     "detail": "the source tree /nowhere this binary was built from has no baselines folder"}]
        ctest = self.add_test("WrongSource", claims=[("PRIO-07", "observed", "not stated in docs")],
                              baseline=baseline, failures=["x.cpp:1\ncannot be compared"])
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('<span class="st st-no-baseline-dir">no baselines folder</span>', row)
        self.assertIn("has no baselines folder", row)
        css = page[page.index("<style>"):page.index("</style>")]
        self.assertRegex(css, r"\.st-differs-gating, \.st-no-baseline-dir \{ background: var\(--fail-bg\)")

    def test_an_observed_claim_beside_a_documented_one_is_not_judged_row_by_row(self):
        # The test passed on its documented claim; its observed claim's row had no baseline entry.
        for prefix in ("priority_flags.", "priority_flags.ptds."):
            (self.run_dir / "gtest" / (prefix + "PriorityFlags.SpecialHandles.xml")).unlink()
            (self.run_dir / "observations" / (prefix + "PriorityFlags.SpecialHandles.json")).unlink()
        reason = "no baseline: no entry legacy.priority in /src/baselines/sm_90.json"
        ctest = self.add_test("SpecialHandles", {"unjudged_claims": [{"id": "PRIO-07", "reason": reason}]},
                              claims=[("PRIO-07", "observed", "not stated in docs"), ("PRIO-01", "documented", "RT")],
                              suite="PriorityFlags", family="priority_flags")
        model, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('data-status="passed"', row)
        self.assertIn("<b>PRIO-07 not judged:</b>", row)
        self.assertIn(reason, row)
        coverage = re.search(r'<tr data-status="([a-z-]+)"[^>]*id="id-PRIO-07">(.*?)</tr>', page, re.S)
        self.assertIsNotNone(coverage)
        self.assertEqual("skipped", coverage.group(1))
        self.assertIn("not judged in PriorityFlags.SpecialHandles: " + reason, coverage.group(2))

    def test_a_recorded_claim_is_shown_apart_with_its_values_never_a_pass(self):
        plan = self.source / "tests" / "priority_flags" / "README.md"
        plan.write_text(plan.read_text().replace("| PRIO-07 | Special handles | observed |",
                                                 "| PRIO-07 | Special handles | recorded |"))
        for prefix in ("priority_flags.", "priority_flags.ptds."):
            (self.run_dir / "gtest" / (prefix + "PriorityFlags.SpecialHandles.xml")).unlink()
            (self.run_dir / "observations" / (prefix + "PriorityFlags.SpecialHandles.json")).unlink()
        baseline = [{"id": "PRIO-07", "key": "legacy.priority", "observed": 3, "status": "recorded",
                     "detail": "a recorded value: shown, never judged"}]
        ctest = self.add_test("SpecialHandles", {"skip_kind": "recorded"}, baseline=baseline,
                              skip="x.cpp:1\nrecorded values, not a verdict: PRIO-07/legacy.priority = 3;",
                              claims=[("PRIO-07", "recorded", "not stated in docs")],
                              suite="PriorityFlags", family="priority_flags", version="1.11.0")
        model, page = self.generate()
        coverage = re.search(r'<tr data-status="([a-z-]+)"[^>]*id="id-PRIO-07">(.*?)</tr>', page, re.S)
        self.assertIsNotNone(coverage)
        self.assertEqual("recorded", coverage.group(1))
        self.assertIn("recorded value", coverage.group(2))
        self.assertIn("legacy.priority = 3 (PriorityFlags.SpecialHandles)", coverage.group(2))
        self.assertIn('<span class="st st-recorded">recorded (never judged)</span>', self.row(page, ctest))

    def test_skip_for_want_of_a_baseline_reads_not_judged(self):
        reason = ("not judged: observed value(s) without a baseline, or not measured here: PRIO-07/legacy.priority "
                  "(no file /src/baselines/sm_100.json);")
        baseline = [{"id": "PRIO-07", "key": "legacy.priority", "observed": 0, "status": "no-baseline",
                     "detail": "no file /src/baselines/sm_100.json"},
                    {"id": "PRIO-07", "key": "legacy.flags", "observed": 0, "status": "no-entry",
                     "detail": "no entry in /src/baselines/sm_100.json"}]
        # The plan's test for PRIO-07 (SpecialHandles) is replaced by one that ended on the baseline rule.
        for prefix in ("priority_flags.", "priority_flags.ptds."):
            (self.run_dir / "gtest" / (prefix + "PriorityFlags.SpecialHandles.xml")).unlink()
            (self.run_dir / "observations" / (prefix + "PriorityFlags.SpecialHandles.json")).unlink()
        ctest = self.add_test("SpecialHandles", {"skip_kind": "not_judged"},
                              claims=[("PRIO-07", "observed", "not stated in docs")],
                              baseline=baseline, skip="/src/fixtures/src/gpu_test.cpp:110\n" + reason,
                              suite="PriorityFlags", family="priority_flags")
        _, page = self.generate()
        row = self.row(page, ctest)
        # A problem to look at: "only problems" keeps it, where it hides a skip with its reason.
        self.assertIn('data-status="unjudged"', row)
        self.assertIn('<span class="st st-unjudged" title="skipped: its observed values have no baseline, or could '
                      'not be measured here, so they were not judged">not judged</span>', row)
        self.assertIn("<b>not judged</b>", row)
        self.assertIn(">no baseline</span>", row)
        self.assertIn(">no entry</span>", row)
        self.assertNotIn("<b>skipped:</b>", row)
        totals = page[page.index('<section id="totals">'):page.index('<section id="coverage">')]
        self.assertIn("1 not judged", totals)
        self.assertIn("not judged (observed values without a baseline, or not measured here)", totals)
        coverage = re.search(r'<tr data-status="skipped"[^>]*id="id-PRIO-07">(.*?)</tr>', page, re.S)
        self.assertIsNotNone(coverage)
        self.assertIn("not judged: observed value(s) without a baseline", coverage.group(1))
        # An ordinary skip keeps its label.
        self.assertIn("<b>skipped:</b> stream priorities are not supported on this device", page)

    def test_a_test_beside_another_context_is_not_judged_with_its_failures_kept_as_evidence(self):
        ctest = self.add_test("Shared", shared_gpu_fields(), failures=["x.cpp:40\nmark 3 was absent while held"],
                              claims=[("HARN-01", "documented", "RT")])
        result, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn('data-status="shared_gpu"', row)
        self.assertIn('<span class="st st-shared_gpu" title="it ran beside another context on the GPU, so nothing it '
                      'showed is judged">not judged (shared GPU)</span>', row)
        self.assertIn("<b>not judged (shared GPU)</b></div><div class=\"small\">another process had a context", row)
        self.assertIn("evidence, not a verdict", row)
        self.assertIn("<pre>x.cpp:40\nmark 3 was absent while held</pre>", row)
        totals = page[page.index('<section id="totals">'):page.index('<section id="coverage">')]
        self.assertIn('<div class="counter shared_gpu"><b>1</b>not judged (shared GPU)</div>', totals)
        # Listed among the tests not run or not judged, with its reason; neither a failure nor a skip reason.
        listed = re.search(r'<div class="listed">.*?</div>', totals, re.S).group(0)
        self.assertIn('<a href="#t-%s" class="mono">%s</a> <span class="small">another process had a context'
                      % (ctest, ctest), listed)
        self.assertNotIn(ctest, totals.replace(listed, ""))
        self.assertIn("1 not judged (shared GPU)", result.stdout)

    def test_rows_no_baseline_judged_are_said_and_a_documented_claims_rows_are_not_silent(self):
        detail = "no file /src/baselines/sm_100.json"
        path = self.run_dir / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json"
        doc = json.loads(path.read_text())
        doc["baseline"] = [{"id": "PRIO-01", "key": "least", "observed": 0, "status": "no-baseline", "detail": detail}]
        write(path, json.dumps(doc))
        _, page = self.generate()
        self.assertIn('<div class="banner warn">1 observed row(s) not judged: no baseline for sm_100: this run proves '
                      'its documented behaviors only.</div>', page)
        coverage = re.search(r'<tr data-status="([a-z-]+)"[^>]*id="id-PRIO-01">(.*?)</tr>', page, re.S)
        self.assertEqual("pass", coverage.group(1))  # the documented claim was asserted, and still gates
        self.assertIn("not judged in PriorityFlags.RangeIsOrdered: PRIO-01/least (%s)" % detail, coverage.group(2))

    def test_a_source_tree_at_another_commit_than_the_run_is_said(self):
        made = git_source(self.root / "checkout")
        if made is None:
            self.skipTest("git is not installed")
        self.source, head = made
        _, page = self.generate()
        self.assertIn('<div class="banner warn">The source tree: the plans and baselines are read from %s at commit '
                      '%s, but the run was made at commit c9f25ae7e95e' % (self.source, head[:12]), page)
        doc = json.loads((self.run_dir / "env.json").read_text())
        doc["streamcheck"]["commit"] = head
        write(self.run_dir / "env.json", json.dumps(doc))
        _, page = self.generate()
        self.assertNotIn("The source tree:", page)

    def test_observation_of_schema_1_2_without_the_new_fields_renders(self):
        doc = observation("harness.Harness.Old", "Harness.Old", [("HARN-01", "documented", "RT")],
                          {"waited": 5}, mutation="HARN-01")
        doc["schema_version"] = "1.2.0"
        write(self.run_dir / "gtest" / "harness.Harness.Old.xml", gtest_xml(
            "Harness", "Old", properties={"catalog_id": "HARN-01", "verdict_kind": "documented",
                                          "doc_source": "RT", "mutation": "HARN-01"}))
        write(self.run_dir / "observations" / "harness.Harness.Old.json", json.dumps(doc))
        result, page = self.generate()
        self.assertIn("7 tests", result.stdout)
        row = self.row(page, "harness.Harness.Old")
        self.assertIn('data-status="passed"', row)
        self.assertIn('<span class="tag mutation">mutation: HARN-01</span>', row)
        self.assertNotIn("watchdog", row)
        self.assertNotIn("invalid checks", row)
        data = self.data()
        test = next(t for t in data["tests"] if t["ctest_name"] == "harness.Harness.Old")
        self.assertEqual((test["watchdog"], test["invalid_checks"], test["mutation_kind"]), ([], [], None))

    def test_wrongly_shaped_evidence_is_an_error_not_a_traceback(self):
        self.add_test("Bad", {"watchdog": ["latch 0"]})
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, "harness.Harness.Bad.json", '"watchdog"')

    def write_baseline(self, entries, schema_version="1.1.0"):
        write(self.source / "baselines" / "sm_90.json", json.dumps(
            {"schema": "streamcheck.baseline", "schema_version": schema_version, "arch": "sm_90",
             "devices": ["NVIDIA H200"], "entries": entries}))

    def test_baseline_file_adds_gating_reason_driver_flip_and_finding(self):
        self.write_baseline({"PRIO-07": {
            "legacy.priority": {"expected": 0, "gating": True, "why": "catalog H200", "driver_may_flip": False,
                                "gating_reason": "default-stream work inherits it"},
            "per_thread.flags": {"expected": 1, "gating": False, "why": "H200 run", "driver_may_flip": True,
                                 "gating_reason": "recorded only",
                                 "finding": "PG 4.3.1 says <all> streams synchronize; observed: not so"}}})
        _, page = self.generate()
        header = page[page.index("<header>"):page.index("</header>")]
        self.assertIn(str(self.source / "baselines" / "sm_90.json"), header)
        self.assertIn("schema 1.1.0", header)
        row = self.row(page, "priority_flags.PriorityFlags.SpecialHandles")
        self.assertIn('<span class="why" title="default-stream work inherits it">gating</span>', row)
        self.assertIn('<span class="why" title="recorded only">not gating</span>', row)
        self.assertIn('title="per_thread.flags (sm_90.json)\nwhy: H200 run\ndriver may flip: yes"', row)
        self.assertIn("driver may flip: no", row)
        self.assertEqual(row.count(">driver may flip</span>"), 1)
        self.assertIn('<span class="tag finding" title="PG 4.3.1 says &lt;all&gt; streams synchronize; observed: '
                      'not so">finding</span>', row)
        # The run compared per_thread.flags with 0; the file in the source tree says 1 now.
        self.assertIn('sm_90.json in the source tree now expects <span class="mono">1</span>', row)
        self.assertEqual(row.count("in the source tree"), 1)

    def test_gating_reason_of_the_row_is_shown_without_a_baseline_file(self):
        baseline = [{"id": "HARN-02", "key": "k", "observed": True, "expected": True, "gating": True,
                     "gating_reason": "the suite relies on it", "status": "match"}]
        ctest = self.add_test("Reasoned", claims=[("HARN-02", "observed", "none")], baseline=baseline)
        _, page = self.generate()
        self.assertIn('<span class="why" title="the suite relies on it">gating</span>', self.row(page, ctest))
        self.assertIn("no baselines folder in the source tree", page[page.index("<header>"):page.index("</header>")])

    def test_invalid_baseline_file_is_refused(self):
        write(self.source / "baselines" / "sm_90.json", '{"schema": "streamcheck.baseline", ')
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, "sm_90.json", "invalid JSON")


class BadInput(ReportTestCase):
    def test_missing_env_json(self):
        (self.run_dir / "env.json").unlink()
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, "env.json", str(self.run_dir))

    def test_missing_run_folder(self):
        result = run_script(self.root / "nowhere", "--source", self.source, "-o", self.out)  # as a command
        self.assert_refused(result, "no such run folder")

    def test_invalid_xml_names_the_file(self):
        bad = self.run_dir / "gtest" / "unit.Broken.Test.xml"
        write(bad, '<?xml version="1.0"?>\n<testsuites><testsuite name="Broken">')
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, str(bad), "invalid XML")

    def test_invalid_observation_json_names_the_file(self):
        bad = self.run_dir / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json"
        write(bad, '{"schema": "streamcheck.observation", ')
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, str(bad), "invalid JSON")

    def test_wrongly_shaped_env_json_is_an_error_not_a_traceback(self):
        doc = env_doc("r")
        doc["gpu"] = "NVIDIA H200"
        write(self.run_dir / "env.json", json.dumps(doc))
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, "env.json", '"gpu"')

    def test_env_json_of_another_schema_is_refused(self):
        doc = env_doc("r")
        doc["schema_version"] = "2.0.0"
        write(self.run_dir / "env.json", json.dumps(doc))
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assert_refused(result, "schema version 2.0.0")


# A CUPTI-like clock: nanoseconds near 1.8e18, beyond a double's exact range, so that lost precision shows.
T0 = 1795317993000000000


def tl_item(kind, label, stream, start_us, duration_ns, **extra):
    item = {"kind": kind, "label": label, "stream": stream, "stream_id": 16, "correlation_id": 1,
            "start_ns": T0 + int(start_us * 1000), "end_ns": T0 + int(start_us * 1000) + duration_ns, "name": ""}
    if kind == "kernel":
        item["name"] = "_Z11spin_kernelPv"
    else:
        item.update({"bytes": 8388608, "copy_kind": "HtoD" if kind == "memcpy" else "", "src_kind": "pinned",
                     "dst_kind": "device"})
    item.update(extra)
    return item


def timeline_doc(items=None, ranges=None, host_events=None, tracing=True, reason=None, unlabelled=1):
    if not tracing:
        return {"tracing": {"enabled": False, "reason": reason}}
    return {"tracing": {"enabled": True, "cupti_library": "libcupti.so", "cupti_api_version": 130001,
                        "nvtx_routed": True, "nvtx_detail": "NVTX_INJECTION64_PATH"},
            "clock": "cupti",
            "clock_map": {"valid": True, "globaltimer_to_cupti_offset_ns": -100433, "residual_ns": 1280,
                          "samples": 16},
            "items": items or [], "ranges": ranges or [], "host_events": host_events or [],
            "unlabelled_records": unlabelled, "dropped_records_in_process": 0}


def two_streams_timeline():
    """Two kernels (one with per-block records) on s1 and s2, a copy after the second, a zero-length memset,
    the test's NVTX range with a nested one, an open range and a host moment."""
    blocks = [{"t0_ns": T0 + 10000 + 5 * i, "t1_ns": T0 + 2010000 + 5 * i, "max_gap_ns": 96, "sm_begin": 2 * i,
               "sm_end": 2 * i} for i in range(3)]
    return timeline_doc(
        items=[tl_item("kernel", "k1", "s1", 10, 2000000, blocks=blocks),
               tl_item("kernel", "k2", "s2", 70, 2000000, stream_id=17),
               tl_item("memcpy", "copy", "s2", 2075, 150000, stream_id=17),
               tl_item("memset", "", "cupti:15", 5, 0, stream_id=15)],
        ranges=[{"name": "Timeline.Test", "domain": "streamcheck", "start_ns": T0, "end_ns": T0 + 3000000},
                {"name": "enqueue", "domain": "streamcheck", "start_ns": T0 + 8000, "end_ns": T0 + 140000},
                {"name": "still-open", "domain": "streamcheck", "start_ns": T0 + 2500000, "end_ns": 0}],
        host_events=[{"kind": "host", "label": "enqueued", "start_ns": T0 + 141000, "end_ns": T0 + 141000}])


def copies_timeline():
    """Schema 1.4: a 1 ms kernel on s1 and a 300 us one on s2 (overlapping it), a 400 us HtoD copy on s1 whose
    first 200 us the first kernel overlaps, a DtoH copy on s2 and a memset on a copy-only stream; the copies carry
    their channel, except the DtoH one (a channel CUPTI did not report)."""
    return timeline_doc(items=[
        tl_item("kernel", "k1", "s1", 0, 1000000, channel_id=1, channel_type="compute"),
        tl_item("kernel", "k2", "s2", 100, 300000, stream_id=17),
        tl_item("memcpy", "upload", "s1", 800, 400000, bytes=20000000, channel_id=3, channel_type="async_memcpy"),
        tl_item("memcpy", "download", "s2", 1300, 100000, stream_id=17, copy_kind="DtoH", src_kind="device",
                dst_kind="pageable"),
        tl_item("memset", "fill", "cupti:9", 1500, 50000, stream_id=9, src_kind="unknown", channel_id=4,
                channel_type="async_memcpy")])


def lane_titles(svg):
    return re.findall(r'<g class="lane-label"><title>[^<]*</title><text [^>]*>([^<]*)</text></g>', svg)


class Timelines(ReportTestCase):
    def add_test(self, name, timeline, family="harness", suite="Timeline", version="1.1.0"):
        """A passed test of the given family whose observation file holds the timeline; returns its ctest name."""
        ctest = "%s.%s.%s" % (family, suite, name)
        write(self.run_dir / "gtest" / (ctest + ".xml"), gtest_xml(suite, name))
        doc = observation(ctest, "%s.%s" % (suite, name), [])
        doc["schema_version"] = version
        doc["timeline"] = timeline
        write(self.run_dir / "observations" / (ctest + ".json"), json.dumps(doc))
        return ctest

    def drawing(self, page, ctest):
        """The test's timeline as its details have it, each drawing's frame replaced by the file it shows."""
        match = re.search(r'<details class="tl" id="tl-%s">(.*?)</details>' % re.escape(ctest), page, re.S)
        self.assertIsNotNone(match, "no timeline for %s" % ctest)
        return re.sub(r'<iframe class="tl-frame" data-src="([^"]+)"[^>]*></iframe>',
                      lambda m: (self.out.parent / m.group(1)).read_text(encoding="utf-8"), match.group(1))

    @staticmethod
    def rects(svg, cls):
        """(x, width) of the first <rect> in each element of the class."""
        return [(float(x), float(w)) for x, w in re.findall(
            r'<g class="%s"><title>.*?</title><rect x="([-\d.]+)" y="[\d.]+" width="([\d.]+)"' % cls, svg, re.S)]

    def test_each_drawn_timeline_is_written_whole_as_a_chrome_trace_the_page_links(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        off = self.add_test("Off", timeline_doc(tracing=False, reason="no CUPTI"))
        result, page = self.generate()
        trace_file = self.out.parent / "traces" / (ctest + ".json")
        self.assertIn('<a href="traces/%s.json">the whole trace</a>' % ctest, self.drawing(page, ctest))
        self.assertFalse((self.out.parent / "traces" / (off + ".json")).exists(), "nothing drawn, no trace")
        self.assertIn("Chrome traces in", result.stdout)
        doc = json.loads(trace_file.read_text())
        events = doc["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
        work = [e for e in events if e["ph"] != "M"]
        for e in work:
            self.assertTrue({"name", "ph", "pid", "tid", "ts"} <= set(e), e)
        by_name = {e["name"]: e for e in work}
        # Microseconds from the first record, exact although CUPTI's clock is near 1.8e18 ns.
        self.assertEqual((by_name["Timeline.Test"]["ts"], by_name["Timeline.Test"]["dur"]), (0.0, 3000.0))
        self.assertEqual((by_name["k2"]["ts"], by_name["k2"]["dur"]), (70.0, 2000.0))
        self.assertEqual(names[(1, by_name["k2"]["tid"])], "stream s2")
        self.assertEqual(names[(1, by_name["copy"]["tid"])], "stream s2 \u00b7 HtoD")
        # Every block record on its SM's thread, none left out; the open range runs to the last record.
        blocks = [e for e in work if e["cat"] == "block"]
        self.assertEqual(sorted(names[(2, e["tid"])] for e in blocks), ["SM 0", "SM 2", "SM 4"])
        self.assertEqual(by_name["still-open (open)"]["ts"] + by_name["still-open (open)"]["dur"], 3000.0)
        self.assertEqual((by_name["enqueued"]["ph"], by_name["enqueued"]["ts"]), ("i", 141.0))
        self.assertNotIn("blocks", by_name["k1"]["args"], "blocks are events of their own, not arguments")

    def test_svg_is_drawn_collapsed_in_the_tests_details_and_counted_under_timelines(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        details = self.details(ctest)["html"]
        self.assertIn('<details class="tl" id="tl-%s"><summary>' % ctest, details)  # collapsed: no open
        self.assertNotIn('id="tl-', self.out.read_text(encoding="utf-8"), "the page itself holds no timeline")
        svgs = re.findall(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S)
        # One drawing: the items fill most of the span here, so there is no zoom (see the zoom test).
        self.assertEqual(len(svgs), 1)
        self.assertIn('width="900"', svgs[0])
        self.assertNotIn("http://", page)  # inline SVG in HTML needs no namespace
        nav = page[page.index('<nav class="toc">'):page.index("</nav>")]
        self.assertIn('<a href="#timelines">Timelines</a>', nav)
        section = page[page.index('<section id="timelines">'):]
        section = section[:section.index("</section>")]
        self.assertIn("1 test drew a timeline: each is in its test's details", section)
        self.assertIn("4 items on 3 streams, 3 NVTX ranges, 1 host event", details)
        # Tests without a timeline record are counted, not listed.
        self.assertIn("without a timeline record", section)
        self.assertNotIn("RangeIsOrdered", section)

    def test_host_functions_are_drawn_as_intervals_in_the_host_lane(self):
        tl = two_streams_timeline()
        tl["host_events"].append({"kind": "host", "label": "host:reader", "start_ns": T0 + 2010000,
                                  "end_ns": T0 + 2410000})
        ctest = self.add_test("HostInterval", tl)
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        bars = re.findall(r'<rect class="host-interval" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*>'
                          r'<title>([^<]*)</title>', svg)
        self.assertEqual(len(bars), 1, "the host function with an end is one bar; the moment is not")
        x, width, title = bars[0]
        self.assertGreater(float(width), 10.0)  # 400 us of a 3 ms span in 900 px
        self.assertIn("host: host:reader", title)
        self.assertIn("400", title)  # its duration
        kernel_x = [float(v) for v in re.findall(r'<g class="item kernel"><title>k1 .*?</title><rect x="([\d.]+)"',
                                                 svg, re.S)]
        self.assertLess(kernel_x[0], float(x))  # drawn on the same time axis, after the kernel it follows

    def test_lanes_are_the_stream_names_then_nvtx_and_host(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        # Kernel lanes by their stream's first start, then copy lanes (streams in the same order), NVTX, host.
        self.assertEqual(lane_titles(svg), ["s1", "s2", "cupti:15 \u00b7 memset", "s2 \u00b7 HtoD", "NVTX", "host"])
        self.assertIn("<title>stream s2 (CUPTI stream 17): 1 item drawn</title>", svg)
        self.assertIn("<title>stream s2 (CUPTI stream 17), HtoD copies: 1 item drawn</title>", svg)
        # The item's label is written inside its bar when it fits; kernels, copies and memsets differ in colour.
        self.assertRegex(svg, r'(?s)<g class="item kernel"><title>k1 \u2014 kernel\n.*?</title><rect [^>]*/>'
                              r'<text [^>]*>k1</text></g>')
        fills = {kind: re.search(r'<g class="item %s"><title>.*?</title><rect [^>]*fill="(#\w+)"' % kind, svg,
                                 re.S).group(1) for kind in ("kernel", "memcpy", "memset")}
        self.assertEqual(len(set(fills.values())), 3)

    def test_copy_tooltip_carries_bytes_and_memory_kinds(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        tips = re.findall(r'<g class="item memcpy"><title>(.*?)</title>', self.drawing(page, ctest), re.S)
        self.assertTrue(tips)
        tip = tips[0]
        self.assertTrue(tip.startswith("copy \u2014 memcpy\nstream s2"), tip)
        self.assertIn("8,388,608 B (8 MiB), HtoD, memory pinned \u2192 device", tip)
        # Offsets are exact to the nanosecond although the clock's values exceed a double's precision.
        self.assertIn("start +2.075000 ms, duration 150.0 \u00b5s", tip)

    def test_copies_get_lanes_under_all_kernel_lanes_one_per_stream_and_direction(self):
        ctest = self.add_test("Copies", copies_timeline(), version="1.4.0")
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        # A copy-only stream (cupti:9) gets only its copy lane.
        self.assertEqual(lane_titles(svg), ["s1", "s2", "s1 \u00b7 HtoD", "s2 \u00b7 DtoH", "cupti:9 \u00b7 memset"])
        self.assertIn("<title>stream s2 (CUPTI stream 17), DtoH copies: 1 item drawn</title>", svg)
        self.assertIn("<title>stream cupti:9 (CUPTI stream 9), memsets: 1 item drawn</title>", svg)

        def bar(label):
            x, y, width = re.search(r'<g class="item \w+"><title>%s \u2014 .*?</title><rect x="([\d.]+)" '
                                    r'y="([\d.]+)" width="([\d.]+)"' % label, svg, re.S).groups()
            return float(x), float(y), float(width)

        k1, k2, upload, download, fill = (bar(n) for n in ("k1", "k2", "upload", "download", "fill"))
        # Kernels above every copy; the upload under k1, on the same time axis (it starts at 800 of k1's 1000 us).
        self.assertLess(max(k1[1], k2[1]), min(upload[1], download[1], fill[1]))
        self.assertLess(upload[1], download[1])
        self.assertLess(download[1], fill[1])
        self.assertAlmostEqual(upload[0], k1[0] + 0.8 * k1[2], places=1)
        self.assertEqual(svg.count('<g class="item '), 5)

    def test_copy_tooltip_has_channel_bandwidth_and_kernel_overlap(self):
        ctest = self.add_test("Copies", copies_timeline(), version="1.4.0")
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        tip = re.search(r'<g class="item memcpy"><title>(upload .*?)</title>', drawing, re.S).group(1)
        self.assertIn("20,000,000 B (19.07 MiB), HtoD, memory pinned \u2192 device", tip)
        self.assertIn("\nchannel async_memcpy 3\n", tip)
        self.assertIn("\nbandwidth 50.0 GB/s\n", tip)  # 2e7 B in 400 us
        # k1 ends 200 us into the 400 us copy: half of it overlapped.
        self.assertIn("\noverlapped by kernels: 50 % of its interval (200.0 \u00b5s of 400.0 \u00b5s)", tip)
        # The DtoH copy has no channel fields (unknown): no channel line, still bandwidth and overlap.
        tip = re.search(r'<g class="item memcpy"><title>(download .*?)</title>', drawing, re.S).group(1)
        self.assertNotIn("channel", tip)
        self.assertIn("DtoH, memory device \u2192 pageable", tip)
        self.assertIn("bandwidth 83.9 GB/s", tip)
        self.assertIn("overlapped by kernels: 0 % of its interval", tip)
        # A memset has a destination only.
        tip = re.search(r'<g class="item memset"><title>(fill .*?)</title>', drawing, re.S).group(1)
        self.assertIn("8,388,608 B (8 MiB), memory device\nchannel async_memcpy 4\nbandwidth 168 GB/s", tip)
        # Kernels show their channel too, but neither bandwidth nor overlap.
        tip = re.search(r'<g class="item kernel"><title>(k1 .*?)</title>', drawing, re.S).group(1)
        self.assertIn("\nchannel compute 1\n", tip)
        self.assertNotIn("bandwidth", tip)
        self.assertNotIn("overlapped", tip)

    def test_summary_line_counts_copies_and_their_overlap_with_kernels(self):
        ctest = self.add_test("Copies", copies_timeline(), version="1.4.0")
        _, page = self.generate()
        summary = re.search(r"<summary>(.*?)</summary>", self.drawing(page, ctest), re.S).group(1)
        # 200 us of 550 us of copy time under a kernel.
        self.assertIn("5 items on 3 streams, 0 NVTX ranges, 3 copies, 36.4 % of copy time overlapped by kernels",
                      summary)
        # Overlapping kernels count once; a copy fully under them is 100 %.
        doc = timeline_doc(items=[tl_item("kernel", "a", "s1", 0, 500000), tl_item("kernel", "b", "s2", 100, 500000),
                                  tl_item("memcpy", "c", "s3", 200, 300000)])
        model = timeline.timeline_model(doc)
        self.assertEqual(model["copies"], {"count": 1, "time_ns": 300000, "overlap_ns": 300000})
        self.assertIn("1 copy, 100 % of copy time overlapped by kernels", timeline.timeline_summary(model))
        # Without copies the line is as before.
        model = timeline.timeline_model(timeline_doc(items=[tl_item("kernel", "a", "s1", 0, 500)]))
        self.assertNotIn("cop", timeline.timeline_summary(model))
        self.assertEqual(common.fmt_pct(1, 3000), "<0.1 %")
        self.assertEqual(common.fmt_pct(2999, 3000), ">99.9 %")

    def test_observation_1_4_is_read_like_1_3(self):
        ctest = self.add_test("Copies", copies_timeline(), version="1.4.0")
        old = self.add_test("Older", copies_timeline(), version="1.3.0")
        result, page = self.generate()
        self.assertEqual(result.stderr, "")
        self.assertFalse("schema version" in page or "not supported (this generator" in page)
        self.assertIn("8 tests", result.stdout)
        for name in (ctest, old):
            self.assertIn('<tr id="t-%s" data-status="passed"' % name, page)
            self.assertEqual(self.drawing(page, name).count('<g class="item '), 5)
        data = self.data()
        test = next(t for t in data["tests"] if t["ctest_name"] == ctest)
        self.assertEqual(test["timeline"]["items"][2]["channel_type"], "async_memcpy")

    def test_copy_without_channel_fields_is_still_drawn(self):
        item = tl_item("memcpy", "plain", "s", 0, 1000, copy_kind="DtoD")
        self.assertNotIn("channel_id", item)
        ctest = self.add_test("NoChannel", timeline_doc(items=[item]), version="1.4.0")
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        self.assertEqual(lane_titles(svg), ["s \u00b7 DtoD"])
        (x, width), = self.rects(svg, "item memcpy")
        self.assertGreaterEqual(width, 1.0)
        tip = re.search(r'<g class="item memcpy"><title>(.*?)</title>', svg, re.S).group(1)
        self.assertNotIn("channel", tip)
        self.assertIn("overlapped by kernels: 0 % of its interval", tip)

    def test_long_stream_names_keep_the_copy_direction_in_the_lane_title(self):
        self.assertEqual(timeline.lane_title("s2", " \u00b7 HtoD"), "s2 \u00b7 HtoD")
        self.assertEqual(timeline.lane_title("a_rather_long_stream", " \u00b7 memset"), "a_rathe\u2026 \u00b7 memset")
        self.assertEqual(len(timeline.lane_title("a_rather_long_stream", " \u00b7 memset")), timeline.TL_LANE_CHARS)
        self.assertEqual(timeline.lane_title("a_rather_long_stream"), "a_rather_long_st\u2026")

    def test_zero_length_item_is_at_least_one_pixel_wide_and_x_starts_at_t0(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        (x, width), = self.rects(svg, "item memset")
        self.assertGreaterEqual(width, 1.0)
        self.assertIn("duration 0 ns", svg)
        # The test's own range starts at t0: x is the left edge of the plot; the span is 3 ms over the plot.
        x_range = float(re.search(r'<g class="range"><title>NVTX range Timeline.Test.*?</title><rect x="([\d.]+)"',
                                  svg, re.S).group(1))
        self.assertAlmostEqual(x_range, timeline.TL_LABEL_W, places=2)
        self.assertAlmostEqual(x, timeline.TL_LABEL_W + 5000 * timeline.TL_PLOT_W / 3000000.0, places=1)

    def test_blocks_are_bars_under_their_kernel(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        blocks = re.findall(r'<rect class="block" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="(\d+)"[^>]*>'
                            r'<title>(.*?)</title>', svg, re.S)
        self.assertEqual(len(blocks), 3)
        kernel_y = float(re.search(r'<g class="item kernel"><title>k1.*?</title><rect x="[\d.]+" y="([\d.]+)"',
                                   svg, re.S).group(1))
        self.assertTrue(all(float(y) > kernel_y for y, _, _ in blocks))
        self.assertEqual(len({y for y, _, _ in blocks}), 3)  # concurrent blocks: one row each
        self.assertTrue(all(int(height) < timeline.TL_ROW_H for _, height, _ in blocks))
        self.assertIn("k1 \u2014 block 2 of 3\nSM 2\nstart +10.005 \u00b5s, duration 2.000 ms", blocks[1][2])

    def test_nested_ranges_get_sub_rows_and_an_open_range_runs_to_the_end(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        svg = re.search(r"<svg\b.*?</svg>", self.drawing(page, ctest), re.S).group(0)
        ranges = re.findall(r'<g class="range( open)?"><title>(.*?)</title><rect x="([\d.]+)" y="([\d.]+)" '
                            r'width="([\d.]+)"([^>]*)/>', svg, re.S)
        by_name = {title.split("\n")[0].split()[2]: (is_open, float(x), float(y), float(w), rest)
                   for is_open, title, x, y, w, rest in ranges}
        self.assertNotEqual(by_name["Timeline.Test"][2], by_name["enqueue"][2])  # nested: another row
        is_open, x, _, width, rest = by_name["still-open"]
        self.assertEqual(is_open, " open")
        self.assertIn("stroke-dasharray", rest)
        self.assertAlmostEqual(x + width, timeline.TL_LABEL_W + timeline.TL_PLOT_W, places=1)
        self.assertIn("still-open (open)", svg)
        self.assertIn("open: no end when collected", svg)

    def test_clock_line_under_the_drawing(self):
        ctest = self.add_test("TwoStreams", two_streams_timeline())
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        line = re.search(r'<div class="tl-clock small">(.*?)</div>', drawing, re.S)
        self.assertIsNotNone(line)
        text = re.sub(r"<[^>]+>", "", line.group(1))
        for needle in ("clock cupti", "offset -100433 ns", "residual 1280 ns (16 samples)", "4 items",
                       "1 unlabelled"):
            self.assertIn(needle, text)
        self.assertLess(drawing.index("</svg>"), drawing.index('class="tl-clock'))
        self.assertNotIn("no single offset", text)

    def test_clock_line_says_when_the_clocks_contradicted_each_other(self):
        doc = two_streams_timeline()
        doc["clock_map"]["consistent"] = False
        ctest = self.add_test("Contradicting", doc)
        _, page = self.generate()
        line = re.search(r'<div class="tl-clock small">(.*?)</div>', self.drawing(page, ctest), re.S)
        self.assertIn("the calibration kernels allowed no single offset", re.sub(r"<[^>]+>", "", line.group(1)))

    def test_zoom_on_the_items_when_the_tests_range_dwarfs_them(self):
        doc = two_streams_timeline()
        doc["ranges"][0]["start_ns"] = T0 - 200000000  # the fixture's set-up: 200 ms before the work
        ctest = self.add_test("LongSetUp", doc)
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        svgs = re.findall(r"<svg\b.*?</svg>", drawing, re.S)
        self.assertEqual(len(svgs), 2)
        self.assertIn("zoom on the labelled items", drawing)
        # The zoom on the test's own work comes first, then the whole test (mostly the fixture's set-up).
        self.assertLess(drawing.index("zoom on the labelled items"), drawing.index("whole test:"))
        self.assertIn("time (ms)", svgs[1])
        # In the zoom, k1 (2 ms of the ~2.3 ms window) is wide enough for its label.
        (x, width), = self.rects(svgs[0], "item kernel")[:1]
        self.assertGreater(width, 0.7 * timeline.TL_PLOT_W)

    def test_tracing_off_shows_the_reason_and_no_drawing(self):
        ctest = self.add_test("Untraced", timeline_doc(tracing=False, reason="libcupti could not be loaded <off>"))
        _, page = self.generate()
        row = self.row(page, ctest)
        self.assertIn("no timeline: tracing off (libcupti could not be loaded &lt;off&gt;)", row)
        self.assertNotIn("<svg", row)
        self.assertNotIn('id="tl-%s"' % ctest, page)
        self.assertIn("1 test with tracing off (libcupti could not be loaded &lt;off&gt;)", page)

    def test_traced_test_with_nothing_recorded_gets_a_note_and_no_drawing(self):
        ctest = self.add_test("Quiet", timeline_doc(unlabelled=0))
        _, page = self.generate()
        self.assertNotIn('id="tl-%s"' % ctest, page)
        self.assertIn("timeline: tracing on, nothing recorded", page)
        self.assertNotIn("<svg", page)

    def test_more_than_200_items_are_capped_with_a_note(self):
        items = [tl_item("kernel", "launch %d" % i, "s", i, 500) for i in range(250)]
        ctest = self.add_test("ManyLaunches", timeline_doc(items=items))
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        for svg in re.findall(r"<svg\b.*?</svg>", drawing, re.S):
            self.assertEqual(svg.count('<g class="item '), timeline.TL_MAX_ITEMS)
            self.assertIn("<title>launch 199 \u2014", svg)
            self.assertNotIn("<title>launch 200 \u2014", svg)
        self.assertIn("50 of 250 items not drawn (at most 200 items per test, the first by start time)", drawing)
        self.assertIn("250 items on 1 stream", drawing)

    def test_streams_beyond_the_lane_cap_are_said(self):
        items = [tl_item("memset", "m%d" % i, "cupti:%d" % i, i, 100) for i in range(timeline.TL_MAX_LANES + 2)]
        ctest = self.add_test("ManyStreams", timeline_doc(items=items))
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        self.assertIn("2 of 50 items not drawn", drawing)
        # Memsets have lanes of their own: the cap counts lanes; these two streams had nothing else.
        self.assertIn("2 lanes beyond the first 48 not drawn; 2 streams with nothing drawn", drawing)
        svg = re.search(r"<svg\b.*?</svg>", drawing, re.S).group(0)
        self.assertEqual(len(lane_titles(svg)), timeline.TL_MAX_LANES)

    def test_copy_lanes_count_against_the_lane_cap(self):
        # One stream with a kernel and 49 copy-only streams: the kernel lane is first and the cap counts every lane.
        items = [tl_item("kernel", "k", "s", 0, 100)] + [
            tl_item("memcpy", "c%d" % i, "c%d" % i, i + 1, 100) for i in range(timeline.TL_MAX_LANES)]
        ctest = self.add_test("ManyCopyLanes", timeline_doc(items=items), version="1.4.0")
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        svg = re.search(r"<svg\b.*?</svg>", drawing, re.S).group(0)
        titles = lane_titles(svg)
        self.assertEqual(len(titles), timeline.TL_MAX_LANES)
        self.assertEqual(titles[:2], ["s", "c0 \u00b7 HtoD"])
        self.assertIn("1 of 49 items not drawn", drawing)
        self.assertIn("1 lane beyond the first 48 not drawn; 1 stream with nothing drawn", drawing)

    def test_all_text_is_escaped(self):
        evil = SCRIPT_TEXT
        doc = timeline_doc(
            items=[tl_item("kernel", evil, "s<1>&", 1, 1000, name="k<T>"),
                   tl_item("memcpy", "c", "s2", 3, 1000, src_kind="<pinned>", dst_kind='"dev"')],
            ranges=[{"name": evil, "domain": "<d>", "start_ns": T0, "end_ns": T0 + 10000}],
            host_events=[{"kind": "host", "label": "</svg><b>x</b>", "start_ns": T0 + 2000}])
        ctest = self.add_test("Escaping", doc)
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        self.assertNotIn(evil, page.replace(embedded_data(page)[0], ""))
        self.assertIn("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;", drawing)
        self.assertIn("s&lt;1&gt;&amp;", drawing)
        self.assertIn("memory &lt;pinned&gt; \u2192 &quot;dev&quot;", drawing)
        self.assertIn("&lt;/svg&gt;&lt;b&gt;x&lt;/b&gt;", drawing)
        self.assertNotIn("<b>x</b>", page)
        self.assertEqual(drawing.count("<svg"), drawing.count("</svg>"))
        raw, _ = embedded_data(page)
        outside = page.replace(raw, "")
        self.assertEqual(outside.count("<script"), 2)  # still only the data block and the filter script
        test = next(t for t in self.data()["tests"] if t["ctest_name"] == ctest)
        self.assertEqual(test["timeline"]["items"][0]["label"], evil)

    def test_malformed_entries_are_skipped_not_fatal(self):
        doc = timeline_doc(items=[tl_item("kernel", "ok", "s", 1, 1000), {"kind": "kernel", "start_ns": "soon"}, 7],
                           ranges="not a list")
        ctest = self.add_test("Malformed", doc)
        _, page = self.generate()
        drawing = self.drawing(page, ctest)
        self.assertIn("3 entries without a numeric start_ns ignored", drawing)
        self.assertEqual(drawing.count('<g class="item '), 1)

    def test_time_formats_and_ticks(self):
        self.assertEqual(common.fmt_ns(850), "850 ns")
        self.assertEqual(common.fmt_ns(1440), "1.440 \u00b5s")
        self.assertEqual(common.fmt_ns(228074315, signed=True, exact=True), "+228.074315 ms")
        self.assertEqual(timeline.axis_unit(3000000), (1e6, "ms"))
        self.assertEqual(timeline.axis_unit(150000), (1e3, "\u00b5s"))
        self.assertEqual(timeline.tick_step(3000000), 500000)
        self.assertEqual(timeline.tick_step(228000000), 50000000)
        self.assertEqual(timeline.pack_rows([(0, 10), (2, 5), (5, 8), (10, 12)], 5), [0, 1, 1, 0])
        self.assertEqual(timeline.pack_rows([(0, 10), (1, 9), (2, 8)], 2), [0, 1, None])


if __name__ == "__main__":
    unittest.main()


class BlockCharts(ReportTestCase):
    def add_chart(self, name, chart):
        ctest = "priority_sched.PrioritySched.%s" % name
        write(self.run_dir / "gtest" / (ctest + ".xml"), gtest_xml("PrioritySched", name))
        doc = observation(ctest, "PrioritySched.%s" % name, [("SCHED-01", "observed", "RTSS17")])
        doc["schema_version"] = "1.5.0"
        doc["block_chart"] = chart
        write(self.run_dir / "observations" / (ctest + ".json"), json.dumps(doc))
        return ctest

    @staticmethod
    def chart(grids, **extra):
        doc = {"clock": "globaltimer", "base_ns": 1000, "sms": 2, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
               "priority_least": 0, "priority_greatest": -5, "grids": grids}
        doc.update(extra)
        return doc

    def test_blocks_are_drawn_per_sm_and_slot_coloured_by_priority(self):
        low = {"label": "low", "stream": "low", "process": "", "priority": 0, "threads": 1024,
               "records": [[0, 1000, 0, 0, 40], [0, 1000, 0, 0, 40], [0, 1000, 1, 1, 40], [1000, 2000, 1, 1, 40]]}
        high = {"label": "high", "stream": "high", "process": "child:high", "priority": -5, "threads": 1024,
                "records": [[1001, 2000, 0, 0, 32]]}
        self.add_chart("Saturate", self.chart([low, high]))
        _, page = self.generate()
        part = page[page.index("<b>Blocks</b>"):]
        part = part[:part.index("</details>")]
        self.assertIn("5 blocks of 2 grids, 2 SMs, at most 2 blocks at once on one SM (limit 32)", part)
        self.assertIn("#2e86c1", part)  # lowest priority: blue
        self.assertIn("#c0392b", part)  # highest priority: red
        self.assertIn("high (priority -5, child:high, 1 block)", part)
        # The drawing is a document of its own beside the page, shown in a frame (the page's size).
        frame = re.search(r'<iframe class="tl-frame" data-src="(blocks/[^"]+\.svg)"', part)
        self.assertIsNotNone(frame, part)
        drawing = (self.out.parent / frame.group(1)).read_text(encoding="utf-8")
        self.assertEqual(2, drawing.count("<path "))
        self.assertIn('xmlns="http://www.w3.org/2000/svg"', drawing)
        # The records are drawn, not copied into the page's data block.
        data = self.data()
        test = [t for t in data["tests"] if t["ctest_name"].endswith("Saturate")][0]
        self.assertEqual({"grids": 2, "records": 5, "records_in": "the observation file"}, test["block_chart"])

    def test_hostile_labels_and_malformed_rows_do_not_break_the_page(self):
        bad = {"label": "<script>alert(1)</script>", "priority": "high", "records": [[5, 1], "x", [1, 2, "sm"], [0, 9, 3]]}
        self.add_chart("Hostile", self.chart([bad, "not a grid"], priority_least=None))
        result, page = self.generate()
        self.assertNotIn("<script>alert(1)</script>", page)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt; (priority high", page)
        self.assertIn("3 malformed rows left out", page)
        self.assertIn("#888888", page)

    def test_a_chart_without_usable_rows_says_so(self):
        self.add_chart("Empty", self.chart([{"label": "g", "records": []}]))
        _, page = self.generate()
        self.assertIn("block chart: no usable block records", page)

    def test_a_chart_that_is_not_an_object_is_an_input_error(self):
        self.add_chart("Wrong", ["not", "an", "object"])
        result = run_cli(self.run_dir, "--source", self.source, "-o", self.out)
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("block_chart", result.stderr + (self.out.read_text() if self.out.exists() else ""))

    def test_timeline_block_records_are_counted_not_copied_into_the_data_block(self):
        item = {"kind": "kernel", "label": "k", "stream": "s", "stream_id": 7, "start_ns": 0, "end_ns": 2000,
                "correlation_id": 1, "name": "spin",
                "blocks": [{"t0_ns": 10, "t1_ns": 900, "max_gap_ns": 32, "sm_begin": 0, "sm_end": 0, "nsmid": 132}] * 3}
        ctest = "priority_sched.PrioritySched.WithTimeline"
        write(self.run_dir / "gtest" / (ctest + ".xml"), gtest_xml("PrioritySched", "WithTimeline"))
        doc = observation(ctest, "PrioritySched.WithTimeline", [])
        doc["schema_version"] = "1.5.0"
        doc["timeline"] = timeline_doc(items=[item])
        write(self.run_dir / "observations" / (ctest + ".json"), json.dumps(doc))
        _, page = self.generate()
        data = self.data()
        test = [t for t in data["tests"] if t["ctest_name"] == ctest][0]
        self.assertEqual(3, test["timeline"]["items"][0]["blocks"])
