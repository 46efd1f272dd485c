"""The report opened in headless Chromium (Debian package chromium): it renders with no console message (no
script error, no refused load), its sections and a timeline are in the DOM, and its script ran.

Skips with its reason when chromium is not installed, unless STREAMCHECK_REQUIRE_CHROMIUM=1 (set by .ci/run,
which installs it): then a missing browser is a failure."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from synthetic import SCRIPT_TEXT, gtest_xml, make_run, make_source, observation, run_cli, write

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("STREAMCHECK_REQUIRE_CHROMIUM") == "1"
SECTIONS = ("totals", "coverage", "families", "timelines", "instruments", "environment")


def open_in_browser(page):
    """(DOM after scripts ran, console lines) of a page."""
    result = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                             "--v=0", "--dump-dom", Path(page).resolve().as_uri()],
                            capture_output=True, text=True, timeout=120)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    return result.stdout, console


@unittest.skipIf(BROWSER is None and not REQUIRED,
                 "chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")
class Browser(unittest.TestCase):
    def setUp(self):
        if BROWSER is None:
            self.fail("STREAMCHECK_REQUIRE_CHROMIUM=1 but no chromium on PATH")
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-browser-test-")
        self.root = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_the_harness_sees_a_script_error(self):
        page = self.root / "bad.html"
        page.write_text('<!DOCTYPE html><html><body><section id="totals"></section>'
                        '<script>throw new Error("deliberate");</script></body></html>', encoding="utf-8")
        dom, console = open_in_browser(page)
        self.assertIn('id="totals"', dom)
        self.assertTrue(any("deliberate" in line for line in console), console)

    def test_report_renders_with_no_console_message(self):
        source = make_source(self.root / "src")
        run = make_run(self.root / "results")
        ctest = "harness.Timeline.Drawn"
        write(run / "gtest" / (ctest + ".xml"), gtest_xml("Timeline", SCRIPT_TEXT))
        doc = observation(ctest, "Timeline.Drawn", [])
        doc["timeline"] = {"tracing": {"enabled": True}, "clock": "cupti", "items": [
            {"kind": "kernel", "label": SCRIPT_TEXT, "stream": "s1", "start_ns": 1000, "end_ns": 9000},
            {"kind": "memcpy", "label": "copy", "stream": "s2", "start_ns": 3000, "end_ns": 5000, "copy_kind": "HtoD"}],
            "ranges": [{"name": "</svg>", "start_ns": 0, "end_ns": 10000}], "host_events": []}
        doc["block_chart"] = {"priority_least": 0, "priority_greatest": -5, "grids": [
            {"label": "low", "priority": 0, "records": [[b * 10, b * 10 + 900, b % 132, b % 132, 0]
                                                        for b in range(3000)]}]}
        write(run / "observations" / (ctest + ".json"), json.dumps(doc))
        out = self.root / "report.html"
        result = run_cli(run, "--source", source, "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        dom, console = open_in_browser(out)
        self.assertEqual(console, [])
        for section in SECTIONS:
            self.assertIn('<section id="%s">' % section, dom)
        self.assertRegex(dom, r'<details class="tl" id="tl-harness\.Timeline\.Drawn">')
        # The drawing is a document of its own beside the page, shown in a frame: valid SVG that renders.
        self.assertIn('<iframe class="tl-frame" src="timelines/tl-harness.Timeline.Drawn.svg"', dom)
        drawing = self.root / "timelines" / "tl-harness.Timeline.Drawn.svg"
        self.assertEqual("{http://www.w3.org/2000/svg}svg", ET.parse(drawing).getroot().tag)
        svg_dom, svg_console = open_in_browser(drawing)
        self.assertEqual(svg_console, [])
        self.assertIn('<g class="item kernel">', svg_dom)
        # The block chart is a document of its own beside the page too, with its image; it renders.
        self.assertIn('<iframe class="tl-frame" src="blocks/tl-harness.Timeline.Drawn.svg"', dom)
        chart = self.root / "blocks" / "tl-harness.Timeline.Drawn.svg"
        self.assertEqual("{http://www.w3.org/2000/svg}svg", ET.parse(chart).getroot().tag)
        chart_dom, chart_console = open_in_browser(chart)
        self.assertEqual(chart_console, [])
        self.assertIn("data:image/png;base64,", chart_dom)  # the block chart's image
        self.assertRegex(dom, r'<div id="filters">')  # the script ran: the filter bar is shown
        # Hostile text stays text: outside the (inert) data block, no element came from it.
        outside = re.sub(r'<script type="application/json" id="data">.*?</script>', "", dom, flags=re.S)
        self.assertNotIn("<script>alert", outside)
        self.assertEqual(len(re.findall(r"<script\b", outside)), 1)

    def test_comparison_renders_with_no_console_message(self):
        source = make_source(self.root / "src")
        old = make_run(self.root / "old", "20260101T000000Z-1")
        new = make_run(self.root / "new", "20260102T000000Z-2", driver=13010)
        out = self.root / "diff.html"
        result = run_cli(old, new, "--source", source, "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        dom, console = open_in_browser(out)
        self.assertEqual(console, [])
        for section in ("environment", "status", "baseline", "added-removed"):
            self.assertIn('<section id="%s">' % section, dom)


if __name__ == "__main__":
    unittest.main()
