"""Templates (reports/streamcheck/templates.py, reports/templates/) and the drawing helpers of
reports/streamcheck/timeline.py, without a run folder."""

import base64
import re
import unittest
from pathlib import Path

import synthetic  # noqa: F401  (puts reports/ on the path)
from streamcheck import block_chart, templates, timeline
from streamcheck.common import InputError

PACKAGE = Path(timeline.__file__).resolve().parent


class Templates(unittest.TestCase):
    def test_every_fragment_the_code_fills_exists_and_every_fragment_is_used(self):
        code = "".join(p.read_text(encoding="utf-8") for p in PACKAGE.glob("*.py"))
        used = set(re.findall(r'\bfill\("(\w+)"', code))
        self.assertEqual(used, set(templates.fragments()))

    def test_unknown_fragment_is_a_one_line_error(self):
        with self.assertRaises(InputError):
            templates.fill("no_such_fragment")

    def test_page_templates_load_nothing_from_outside(self):
        for name in ("page.html", "report.css", "report.js") + templates.FRAGMENT_FILES:
            text = templates.template_text(name)
            self.assertNotRegex(text, r"(src|href)\s*=\s*[\"']?(//|[a-z]+:)", name)
            self.assertNotIn("@import", text)
            self.assertNotIn("url(", text)
        self.assertIn("Content-Security-Policy", templates.template_text("page.html"))
        self.assertIn("default-src 'none'", templates.template_text("page.html"))


class Drawing(unittest.TestCase):
    def test_coalesce_joins_bars_that_touch_within_half_a_pixel(self):
        bars = [(5, 0.0, 10.0), (5, 10.3, 20.0), (5, 21.0, 22.0), (9, 0.0, 3.0), (5, 2.0, 4.0)]
        self.assertEqual(timeline.coalesce(bars), [(5, 0.0, 20.0), (5, 21.0, 22.0), (9, 0.0, 3.0)])

    def test_bar_path_draws_one_rectangle_per_joined_bar(self):
        self.assertEqual(timeline.bar_path([(1, 2.0, 5.0), (1, 5.1, 8.0)], 3), "M2.0 1.0h6.0v3h-6.0z")

    def kernel_with_blocks(self, n):
        t0 = 1000000000
        blocks = [{"t0_ns": t0 + 1000 * (i // 132), "t1_ns": t0 + 1000 * (i // 132) + 990, "max_gap_ns": 32 + i % 7,
                   "sm_begin": i % 132, "sm_end": i % 132} for i in range(n)]
        item = {"kind": "kernel", "label": "grid", "stream": "s", "stream_id": 7, "start_ns": t0,
                "end_ns": t0 + 1000 * (n // 132 + 1), "blocks": blocks}
        return {"tracing": {"enabled": True}, "clock": "cupti", "items": [item], "ranges": [], "host_events": []}

    def test_many_blocks_are_one_shape_with_one_tooltip(self):
        html = timeline.timeline_html(self.kernel_with_blocks(5000), "tl-x", "traces/x.json")
        self.assertEqual(html.count('<rect class="block"'), 0)
        self.assertEqual(html.count('<path class="blocks"'), 1)
        self.assertIn("grid \u2014 5000 blocks on 132 SMs", html)
        self.assertRegex(html, r"\d+ block records drawn as one shape per kernel")
        self.assertLess(len(html), 40000)

    def test_few_blocks_keep_a_tooltip_each(self):
        html = timeline.timeline_html(self.kernel_with_blocks(30), "tl-x", "traces/x.json")
        self.assertEqual(html.count('<rect class="block"'), 30)
        self.assertNotIn('<path class="blocks"', html)

    def test_block_chart_joins_back_to_back_blocks_of_a_slot(self):
        records = [[i * 1000, i * 1000 + 1000, sm, sm, 40] for sm in range(4) for i in range(300)]
        chart = {"grids": [{"label": "low", "priority": 0, "records": records}], "priority_least": 0,
                 "priority_greatest": -5, "max_blocks_per_sm": 32}
        html = block_chart.block_chart_html(chart)
        path = re.search(r' d="([^"]*)"', html).group(1)
        self.assertEqual(path.count("M"), 4)  # one bar per SM slot
        self.assertIn("1200 blocks of 1 grid, 4 SMs", html)

    def test_block_chart_marks_each_partitions_sms_with_its_colour(self):
        records = [[0, 1000, sm, sm, 40] for sm in range(16)]
        chart = {"grids": [{"label": "g", "priority": 0, "records": records}], "priority_least": 0,
                 "priority_greatest": -5, "partitions": [{"label": "green A", "sms": list(range(8))},
                                                         {"label": "green B", "sms": [8, 9, 10, 11, 13]},
                                                         {"label": "bad", "sms": "all"}, 7]}
        html = block_chart.block_chart_html(chart)
        strips = re.findall(r'<rect x="40" y="[\d.]+" width="4" height="[\d.]+" fill="(#[0-9a-f]+)"><title>([^<]*)<', html)
        # SMs 0-7 in one run, 8-11 in another, 13 alone (12 is in no partition); wrong shapes are left out.
        self.assertEqual([(block_chart.BC_PARTITIONS[0], "green A"), (block_chart.BC_PARTITIONS[1], "green B"),
                          (block_chart.BC_PARTITIONS[1], "green B")], strips)
        self.assertIn("partition green A (8 SMs)", html)
        self.assertIn("partition green B (5 SMs)", html)
        self.assertNotIn("partition bad", html)

    def test_block_chart_of_many_blocks_is_a_small_image(self):
        records = [[(b // 132) * 20000 + g * 1000, (b // 132) * 20000 + 19000, b % 132, b % 132, 64]
                   for g in range(2) for b in range(132 * 16)]
        grids = [{"label": "g%d" % g, "priority": -5 * g, "records": records[g::2]} for g in range(2)]
        html = block_chart.block_chart_html({"grids": grids, "priority_least": 0, "priority_greatest": -5})
        uri = re.search(r'<image [^>]*href="data:image/png;base64,([^"]+)"', html)
        self.assertIsNotNone(uri)
        png = base64.b64decode(uri.group(1))
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertNotIn("<path", html)
        self.assertLess(len(html), 16000)
        self.assertIn("g1 (priority -5, 2112 blocks)", html)


if __name__ == "__main__":
    unittest.main()
