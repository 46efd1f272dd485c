"""The small drawing functions of reports/streamcheck/timeline.py on their own: a lane, an item, block records,
an NVTX range, a host event, the time axis and the parts of a block chart, drawn from hand-made input at a
known scale, so that a wrong coordinate or an unescaped name shows here rather than as a changed page."""

import re
import unittest

from synthetic import SCRIPT_TEXT
from streamcheck import block_chart, templates, timeline
from streamcheck.common import h
from streamcheck.timeline import Lanes, Window

HOSTILE = '"><img src=x onerror=alert(1)>' + SCRIPT_TEXT
T0 = 1795317993000000000
NS_PER_PX = 1000   # the windows below: TL_PLOT_W px for TL_PLOT_W * 1000 ns, so 1 px per µs


def window(start=0):
    """A window of TL_PLOT_W µs from T0 + start: x = TL_LABEL_W + (t - T0 - start) / 1000."""
    return Window(T0, T0 + start, T0 + start + timeline.TL_PLOT_W * NS_PER_PX)


def item(start_us, end_us, label="k", kind="kernel", **raw):
    entry = dict(kind=kind, label=label, stream="s", start_ns=T0 + start_us * 1000, end_ns=T0 + end_us * 1000, **raw)
    model = timeline.timeline_model({"items": [entry]})
    return model["items"][0]


def inert(test, markup):
    test.assertNotIn("<img", markup)
    test.assertNotIn("<script", markup)


class Lanes_(unittest.TestCase):
    def test_a_lane_with_a_hostile_name_is_escaped_and_shortened(self):
        out = timeline.draw_lane(22.0, HOSTILE, "stream " + HOSTILE, 20.0, False)
        inert(self, out)
        self.assertIn("<title>stream %s</title>" % h(HOSTILE), out)
        shown = re.search(r'font-weight="600" fill="#24292f">(.*?)</text>', out).group(1)
        self.assertEqual(shown, h(HOSTILE[:timeline.TL_LANE_CHARS - 1] + "\u2026"))
        self.assertNotIn("#f6f8fa", out)
        self.assertIn('<line x1="0" x2="900" y1="42.0" y2="42.0" stroke="#d0d7de"/>', out)

    def test_lanes_stack_down_from_the_axis_and_every_other_one_is_shaded(self):
        lanes = Lanes()
        self.assertEqual(lanes.add("a", "a", 20.0), 22.0)
        self.assertEqual(lanes.add("b", "b", 36.0), 42.0)
        self.assertEqual(lanes.y, 78.0)
        self.assertNotIn("#f6f8fa", lanes.labels[0])
        self.assertTrue(lanes.labels[1].startswith('<rect x="0" y="42.0" width="900" height="36.0" fill="#f6f8fa"/>'))

    def test_a_lane_tooltip_names_the_stream_its_cupti_ids_and_the_copy_direction(self):
        mine = [item(0, 10, kind="memcpy", stream_id=7, copy_kind="HtoD"), item(20, 30, kind="memcpy", stream_id=7)]
        entry = {"stream": "s", "direction": "HtoD"}
        self.assertEqual(timeline.lane_tooltip(entry, mine), "stream s (CUPTI stream 7), HtoD copies: 2 items drawn")


class Items(unittest.TestCase):
    def test_an_item_is_drawn_at_its_start_with_its_duration_as_width(self):
        out = timeline.draw_item(item(100, 350), 24.0, window())
        self.assertIn('<rect x="212.00" y="24.0" width="250.00" height="13" fill="#8cb8f2" stroke="#1f5fae" '
                      'stroke-width="1"/>', out)
        self.assertIn('<text x="215.0" y="34.0" fill="#0b1f33">k</text>', out)
        self.assertTrue(out.startswith('<g class="item kernel"><title>k \u2014 kernel\nstream s\n'), out)

    def test_the_window_moves_the_item_and_clips_it_to_the_plot(self):
        out = timeline.draw_item(item(100, 350), 24.0, window(start=200 * NS_PER_PX))
        self.assertIn('<rect x="112.00" y="24.0" width="150.00"', out)

    def test_a_short_unlabelled_item_is_one_pixel_wide_faded_and_dashed(self):
        out = timeline.draw_item(item(10, 10, label=""), 24.0, window())
        self.assertIn('width="1.00" height="13" fill="#8cb8f2" stroke="#1f5fae" stroke-width="0.5" '
                      'fill-opacity="0.45" stroke-dasharray="2 1"/></g>', out)
        self.assertNotIn("<text", out)

    def test_hostile_labels_and_kinds_stay_text(self):
        out = timeline.draw_item(item(0, 800, label=HOSTILE, kind=HOSTILE, name=HOSTILE), 24.0, window())
        inert(self, out)
        self.assertIn(">%s</text>" % h(HOSTILE), out)
        self.assertTrue(out.startswith('<g class="item %s">' % h(timeline.slug(HOSTILE))), out)

    def test_a_label_that_does_not_fit_is_left_out(self):
        self.assertNotIn("<text", timeline.draw_item(item(0, 5, label="a_long_kernel_name"), 24.0, window()))


class Blocks(unittest.TestCase):
    def blocks(self, n, **extra):
        return [dict({"t0_ns": T0 + 1000 * b, "t1_ns": T0 + 1000 * b + 500, "sm_begin": b, "sm_end": b}, **extra)
                for b in range(n)]

    def plan(self, n, **extra):
        kernel = item(0, 1000, blocks=self.blocks(n, **extra))
        stats = {"skipped": 0, "merged": 0}
        plan, n_rows = timeline.plan_blocks([kernel], stats)
        return plan[0], n_rows, stats

    def test_few_blocks_are_a_rect_each_with_its_own_tooltip(self):
        (kernel, good, rows, total), n_rows, _ = self.plan(3, max_gap_ns=64)
        self.assertEqual((n_rows, total, rows), (1, 3, [0, 0, 0]))
        out = timeline.draw_blocks(kernel, good, rows, total, 40.0, window())
        self.assertEqual(len(out), 3)
        self.assertEqual(out[1], '<rect class="block" x="113.00" y="40.0" width="1.00" height="3" fill="#0b3d91">'
                                 '<title>k \u2014 block 2 of 3\nSM 1\nstart +1.000 \u00b5s, duration 500 ns\n'
                                 'largest gap between stamps 64 ns</title></rect>')

    def test_many_blocks_are_one_path_and_counted_as_merged(self):
        (kernel, good, rows, total), _, _ = self.plan(100)
        win = window()
        out = timeline.draw_blocks(kernel, good, rows, total, 40.0, win)
        self.assertEqual(len(out), 1)
        self.assertTrue(out[0].startswith('<path class="blocks" fill="#0b3d91" d="M112.0 40.0h'), out[0])
        self.assertEqual(win.stats, {"skipped": 0, "merged": 100})

    def test_the_drawing_s_block_budget_holds_across_kernels(self):
        (kernel, good, rows, total), _, _ = self.plan(5)
        win = window()
        win.blocks_left = 2
        self.assertEqual(len(timeline.draw_blocks(kernel, good, rows, total, 40.0, win)), 2)
        self.assertEqual(win.stats["skipped"], 3)

    def test_records_without_a_start_are_skipped_and_a_kernel_without_blocks_plans_nothing(self):
        kernel = item(0, 1000, blocks=[{"t0_ns": None}, 3, {"t0_ns": T0, "sm_begin": HOSTILE}])
        stats = {"skipped": 0, "merged": 0}
        plan, n_rows = timeline.plan_blocks([kernel, item(0, 5)], stats)
        self.assertEqual((len(plan), n_rows, stats["skipped"]), (1, 1, 2))
        _, good, rows, total = plan[0]
        inert(self, "".join(timeline.draw_blocks(kernel, good, rows, total, 40.0, window())))
        self.assertEqual(timeline.plan_blocks([], stats), ([], 0))


class RangesAndHost(unittest.TestCase):
    def a_range(self, start_us, end_us, name="r", **raw):
        entry = dict(name=name, start_ns=T0 + start_us * 1000, end_ns=T0 + end_us * 1000 if end_us else 0, **raw)
        return timeline.timeline_model({"ranges": [entry]})["ranges"][0]

    def test_a_range_clipped_on_the_left_is_marked_so_and_an_open_one_is_dashed(self):
        r = self.a_range(0, 0, name="setup")
        out = timeline.draw_range(r, T0 + 500 * 1000, 40.0, window(start=100 * NS_PER_PX))
        self.assertTrue(out.startswith('<g class="range open"><title>NVTX range setup\n'), out)
        self.assertIn('<rect x="112.00" y="40.0" width="400.00" height="13" fill="#e4d8fb" stroke="#6639ba" '
                      'stroke-dasharray="4 2"/>', out)
        self.assertIn(">\u25c2 setup (open)</text>", out)

    def test_a_range_outside_the_window_draws_nothing(self):
        self.assertEqual(timeline.draw_range(self.a_range(0, 50), T0 + 50000, 40.0, window(start=100 * NS_PER_PX)), "")

    def test_a_hostile_range_name_and_domain_stay_text(self):
        out = timeline.draw_range(self.a_range(0, 700, name=HOSTILE, domain=HOSTILE), T0 + 700000, 40.0, window())
        inert(self, out)
        self.assertIn("NVTX range %s (domain %s)" % (h(HOSTILE), h(HOSTILE)), out)

    def test_no_ranges_and_no_host_events_open_no_lane(self):
        lanes = Lanes()
        self.assertEqual(timeline.nvtx_lane(lanes, window(), [], T0), [])
        self.assertEqual(timeline.host_lane(lanes, window(), []), [])
        self.assertEqual((lanes.y, lanes.labels), (float(timeline.TL_AXIS_H), []))

    def test_a_host_moment_is_a_tick_and_a_guide_line(self):
        event = {"s": T0 + 300 * 1000, "e": None, "label": HOSTILE}
        guide, tick = timeline.draw_host_event(event, 60.0, window())
        self.assertEqual(guide, '<line x1="412.00" x2="412.00" y1="22" y2="60.0" stroke="#cf222e" '
                                'stroke-opacity="0.35" stroke-dasharray="3 3"/>')
        inert(self, tick)
        self.assertIn('<path d="M412.00 69.0l-4 -6h8z" fill="#cf222e"/>', tick)
        self.assertIn("<title>host: %s\nat +300.000 \u00b5s</title>" % h(HOSTILE), tick)
        self.assertIn('<text x="416.0" y="74.0" fill="#cf222e">%s</text>' % h(HOSTILE), tick)

    def test_a_host_interval_is_also_a_bar_clipped_to_the_window_and_a_label_past_the_edge_is_left_out(self):
        event = {"s": T0 + 770 * 1000, "e": T0 + 780 * 1000, "label": "a label too long for the room left"}
        bar, _, tick = timeline.draw_host_event(event, 60.0, window())   # the window ends at 772 µs
        self.assertTrue(bar.startswith('<rect class="host-interval" x="882.00" y="63.0" width="2.00" '
                                       'height="15.0"'), bar)
        self.assertNotIn("<text", tick)
        self.assertIn(", for 10.00 \u00b5s</title>", tick)


class Axis(unittest.TestCase):
    def test_ticks_are_round_offsets_from_t0_in_one_unit(self):
        # On a clock near 0: at CUPTI's ~1.8e18 ns, t0 + a tick's offset is a double and ticks move by up to
        # 256 ns (a fraction of a pixel here).
        out = timeline.time_axis(Window(0, 0, timeline.TL_PLOT_W * NS_PER_PX), 100)
        self.assertTrue(out.startswith('<text x="4" y="14" fill="#57606a">time (\u00b5s)</text>'), out)
        labels = re.findall(r'text-anchor="middle" fill="#57606a">([^<]*)<', out)
        self.assertEqual(labels, ["0", "200", "400", "600"])   # 772 µs wide: a step of 200 µs
        self.assertIn('<line x1="312.00" x2="312.00" y1="18" y2="100" stroke="#d8dee4"/>', out)
        self.assertTrue(out.endswith('<line x1="112.0" x2="884.0" y1="22" y2="22" stroke="#8c959f"/>'), out)

    def test_tick_decimals_show_the_step_exactly(self):
        self.assertEqual([timeline.tick_decimals(v) for v in (2.0, 0.5, 0.25, 0.125, 1 / 3.0)], [0, 1, 2, 3, 6])

    def test_an_empty_model_draws_the_axis_and_nothing_else(self):
        svg, stats = timeline.timeline_svg(timeline.timeline_model({}), 0, 1, HOSTILE)
        inert(self, svg)
        self.assertIn('height="23" viewBox="0 0 900 23" role="img" aria-label="%s"' % h(HOSTILE), svg)
        self.assertNotIn("<g ", svg)
        self.assertEqual(stats, {"skipped": 0, "merged": 0})


class BlockChart(unittest.TestCase):
    def test_records_are_checked_and_blocks_take_the_lowest_free_slot_of_their_sm(self):
        rows, bad = block_chart.chart_records([{"records": [[0, 10, 1], [5, 20, 1, 1, 64], [12, 30, 1], [1, 0, 2],
                                                         ["a", 1, 2], [0, float("nan"), 1], None]}])
        self.assertEqual(bad, 4)
        placed, sm_ids, per_sm = block_chart.place_blocks(rows)
        self.assertEqual([p[4] for p in placed], [0, 1, 0])   # (12, 30) reuses slot 0, free since 10
        self.assertEqual((sm_ids, per_sm), ([1], 2))

    def test_grid_labels_are_escaped_in_the_shapes_and_the_legend(self):
        grids = [{"label": HOSTILE, "priority": 0, "process": HOSTILE, "records": [[0, 10, 0], [10, 20, 1]]}]
        rows, _ = block_chart.chart_records(grids)
        placed, sm_ids, per_sm = block_chart.place_blocks(rows)
        svg = block_chart.block_chart_svg(grids, placed, sm_ids, per_sm, ["#2e86c1"])
        legend = block_chart.block_chart_legend(grids, placed, ["#2e86c1"])
        for out in (svg, legend):
            inert(self, out)
        self.assertEqual(svg.count('<path fill="#2e86c1" fill-opacity="0.85"'), 1)
        self.assertIn("<title>%s, priority 0, 2 blocks</title>" % h(HOSTILE), svg)
        self.assertIn("%s (priority 0, %s, 2 blocks)" % (h(HOSTILE), h(HOSTILE)), legend)
        self.assertIn('<text x="2" y="16" font-size="10">SM 0</text>', svg)

    def test_a_raster_plot_is_one_image_with_every_grid_in_its_tooltip(self):
        grids = [{"label": "a", "priority": 0}, {"label": HOSTILE, "priority": -1}]
        paths = {0: [(6.0, 46.0, 50.0)], 1: [(10.0, 46.0, 60.0)]}
        out = block_chart.block_chart_plot(grids, paths, ["#2e86c1", "#c0392b"], True, 46, 6, 8, 3.6)
        inert(self, out)
        self.assertTrue(out.startswith('<image x="46" y="6" width="906" height="8" preserveAspectRatio="none" '
                                       'href="data:image/png;base64,'), out)
        self.assertIn("<title>a, priority 0, 1 block; %s, priority -1, 1 block</title>" % h(HOSTILE), out)


class Fragments(unittest.TestCase):
    def test_the_drawing_s_fragments_are_one_line_each(self):
        # An SVG's elements follow each other without white space; a line break in a fragment would add one.
        for name, fragment in templates.fragments().items():
            if fragment.origin.name == "timeline.svg.html":
                with self.subTest(fragment=name):
                    self.assertNotIn("\n", fragment.template.template)


if __name__ == "__main__":
    unittest.main()
