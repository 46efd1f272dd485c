"""The template mechanism (reports/streamcheck/templates.py) and the page's parts rendered on their own:
sections (sections.py), a test's row (test_row.py) and the shared pieces (page_parts.py), from hand-made
models rather than a run folder."""

import re
import tempfile
import unittest
from pathlib import Path

from synthetic import SCRIPT_TEXT
from streamcheck import model as run_model, page_parts, sections, templates, test_row
from streamcheck.common import InputError, Markup, h
from streamcheck.results import new_test
from streamcheck.templates import TemplateError, attrs, fill, join

HOSTILE = '"><img src=x onerror=alert(1)>' + SCRIPT_TEXT


class Escaping(unittest.TestCase):
    def test_text_is_escaped_by_default(self):
        out = fill("tag", text=HOSTILE)
        self.assertEqual(out, '<span class="tag">%s</span>' % h(HOSTILE))
        self.assertNotIn("<img", out)
        self.assertNotIn("<script", out)

    def test_values_that_are_not_text_are_escaped_as_json(self):
        self.assertEqual(fill("tag", text=None), '<span class="tag">null</span>')
        self.assertEqual(fill("tag", text=["<b>", 1]), '<span class="tag">[&quot;&lt;b&gt;&quot;,1]</span>')
        self.assertEqual(fill("tag", text=3), '<span class="tag">3</span>')

    def test_a_quote_cannot_leave_an_attribute(self):
        out = fill("why", title=HOSTILE, text="x")
        self.assertTrue(out.startswith('<span class="why" title="&quot;&gt;&lt;img'), out)
        self.assertNotIn("<img", out)

    def test_markup_is_taken_as_it_is_and_a_fill_is_markup(self):
        inner = fill("tag", text="a")
        self.assertIsInstance(inner, Markup)
        self.assertEqual(fill("td", text=inner), '<td><span class="tag">a</span></td>')

    def test_markup_joined_with_text_is_text_again(self):
        self.assertIsInstance(fill("tag", text="a") + fill("tag", text="b"), Markup)
        mixed = fill("tag", text="a") + "<i>"
        self.assertNotIsInstance(mixed, Markup)
        self.assertIn("&lt;span", fill("td", text=mixed))

    def test_join_escapes_the_parts_and_the_separator_but_not_markup(self):
        self.assertEqual(join(["<a>", fill("br"), "b"], "&"), "&lt;a&gt;&amp;<br>&amp;b")
        self.assertIsInstance(join([]), Markup)
        self.assertEqual(join([]), "")

    def test_attrs_drop_unset_values_escape_the_rest_and_keep_their_order(self):
        self.assertEqual(attrs(class_="a", title=None, id=""), ' class="a"')
        self.assertEqual(attrs(class_="x y", title='say "hi"'), ' class="x y" title="say &quot;hi&quot;"')
        self.assertEqual(attrs(), "")

    def test_an_attribute_slot_takes_attrs_not_text(self):
        with self.assertRaisesRegex(TemplateError, r"'badge'.*\$attrs.*inside a tag"):
            fill("badge", status="pass", attrs="onclick=alert(1)", text="x")
        self.assertEqual(fill("badge", status="pass", attrs=attrs(title="t"), text="x"),
                         '<span class="st st-pass" title="t">x</span>')

    def test_slots_in_tags_are_found_and_quoted_values_are_not_slots(self):
        fragment = templates.Fragment("f", Path("f.html"), "<a href=\"#$x\" $y title='$z'>$w</a>")
        self.assertEqual(fragment.tag_slots, {"y"})
        self.assertEqual(fragment.names, {"w", "x", "y", "z"})

    def test_the_page_skeleton_escapes_its_values_too(self):
        page = templates.fill_page("page.html", title=HOSTILE, css=Markup(""), heading="h", facts=Markup(""),
                                   banners=Markup(""), nav=Markup(""), sections=Markup(""), footer="f",
                                   data=Markup("{}"), script=Markup(""))
        self.assertIn("<title>%s</title>" % h(HOSTILE), page)
        self.assertNotIn("<img", page)


class Errors(unittest.TestCase):
    def test_unknown_fragment_is_a_clear_error(self):
        with self.assertRaisesRegex(TemplateError, "no fragment 'no_such_fragment'"):
            fill("no_such_fragment")
        self.assertTrue(issubclass(TemplateError, InputError))  # one line on stderr, not a traceback

    def test_a_placeholder_without_a_value_is_an_error_not_an_empty_string(self):
        with self.assertRaisesRegex(TemplateError, r"fragments\.html: fragment 'tag' filled without a value for \$text"):
            fill("tag")

    def test_a_value_without_a_placeholder_is_an_error(self):
        with self.assertRaisesRegex(TemplateError, "no placeholder for: colour"):
            fill("tag", text="a", colour="red")

    def test_a_page_skeleton_without_a_value_is_an_error(self):
        with self.assertRaisesRegex(TemplateError, r"page\.html: the page filled without a value for .*\$css"):
            templates.fill_page("page.html", title="t")

    def test_a_stray_dollar_is_an_error(self):
        with self.assertRaisesRegex(TemplateError, r"f\.html: fragment 'f': a \$ that is neither.*'costs \$5'"):
            templates.Fragment("f", Path("f.html"), "costs $5")

    def test_fragment_files_are_split_at_markers_and_a_name_may_be_defined_once(self):
        original = templates.TEMPLATE_DIR
        with tempfile.TemporaryDirectory(prefix="streamcheck-templates-test-") as tmp:
            for name in templates.FRAGMENT_FILES:
                (Path(tmp) / name).write_text("<!-- about this file -->\n<!-- fragment %s -->\n<p>\n$x</p>\n\n"
                                              % name.split(".")[0], encoding="utf-8")
            (Path(tmp) / "test_row.html").write_text("<!-- fragment fragments -->\n<b></b>\n", encoding="utf-8")
            templates.TEMPLATE_DIR = Path(tmp)
            templates.fragments.cache_clear()
            try:
                pieces = dict(templates.split_fragments(Path("x"), (Path(tmp) / "sections.html").read_text()))
                self.assertEqual(pieces, {"sections": "<p>\n$x</p>"})
                with self.assertRaisesRegex(TemplateError, "'fragments' is also defined in"):
                    templates.fragments()
            finally:
                templates.TEMPLATE_DIR = original
                templates.fragments.cache_clear()

    def test_every_fragment_fills_with_hostile_text_and_stays_inert(self):
        for name, fragment in templates.fragments().items():
            with self.subTest(fragment=name):
                values = {k: attrs(title=HOSTILE) if k in fragment.tag_slots else HOSTILE for k in fragment.names}
                out = fill(name, **values)
                self.assertNotIn("<img", out)
                self.assertNotIn("<script", out)


def a_test(ctest, status="passed", **fields):
    test = new_test(ctest, None)  # Suite.Test: the last two parts of the ctest name
    test.update(status=status, **fields)
    return test


def a_model(*tests, **parts):
    by_name = {t["ctest_name"]: t for t in tests}
    model = {"tests": by_name, "instruments": {}, "plans": {}, "totals": run_model.totals_of(by_name),
             "baseline": {"path": None, "version": None, "note": None, "entries": {}}, "problems": [],
             "run": {"id": "r1", "dir": "/runs/r1", "env": {}, "notes": []}}
    model.update(parts)
    return model


class Sections(unittest.TestCase):
    def test_totals_name_each_failed_test_and_count_skip_reasons(self):
        model = a_model(a_test("fam.A.Broken", "failed"), a_test("fam.A.Fine"),
                        a_test("fam.A.Skip1", "skipped", skip_reason=HOSTILE),
                        a_test("fam.A.Skip2", "skipped", skip_reason=HOSTILE))
        out = sections.totals_section(model)
        self.assertTrue(out.startswith('<section id="totals"><h2>Totals</h2><div class="banner fail">'), out)
        self.assertIn('\u2717 1 test FAILED<ul><li><a href="#t-fam.A.Broken" class="mono">fam.A.Broken</a> '
                      '<span class="small"></span></li></ul>', out)
        self.assertIn('<div class="counter"><b>4</b>tests</div>', out)
        self.assertIn('<div class="counter skipped"><b>2</b>skipped</div>', out)
        # A total of none has no colour: "0 not run" is not a warning.
        self.assertIn('<div class="counter none"><b>0</b>not run</div>', out)
        self.assertIn('<tr><td>%s</td><td>2</td><td class="small"><a href="#f-fam">fam</a> (2)</td></tr>' % h(HOSTILE),
                      out)
        self.assertNotIn("<img", out)

    def test_totals_name_a_bounded_number_of_tests_and_count_the_rest_by_family(self):
        broken = [a_test("%s.A.Broken%02d" % (family, n), "failed", failures=["x.cpp:1\nwhy %d" % n])
                  for family in ("fam", "other") for n in range(sections.LISTED_TESTS)]
        unjudged = [a_test("fam.A.Unjudged%02d" % n, "skipped", skip_kind="not_judged", skip_reason="no baseline")
                    for n in range(sections.LISTED_TESTS + 2)]
        out = sections.totals_section(a_model(*broken, *unjudged, a_test("fam.A.Gone", "notrun")))
        failed = re.search(r'<div class="banner fail">(.*?)</div>', out).group(1)
        self.assertEqual(failed.count('<li><a href="#t-fam.A.Broken'), sections.LISTED_TESTS)
        self.assertIn('<a href="#t-fam.A.Broken00" class="mono">fam.A.Broken00</a> <span class="small">x.cpp:1: why 0'
                      '</span>', failed)
        self.assertIn('<li><span class="small">%d more, in <a href="#f-other">other</a> (%d)</span></li></ul>'
                      % (sections.LISTED_TESTS, sections.LISTED_TESTS), failed)
        # Apart: the tests not run or not judged, the one not run first, with their status.
        listed = re.search(r'<div class="listed"><b>(.*?)</b><ul>(.*?)</ul></div>', out)
        self.assertEqual(listed.group(1), "%d tests not run or not judged" % (sections.LISTED_TESTS + 3))
        self.assertTrue(listed.group(2).startswith('<li><span class="st st-notrun">not run</span> '
                                                   '<a href="#t-fam.A.Gone"'), listed.group(2))
        self.assertIn('<li><span class="small">3 more, in <a href="#f-fam">fam</a> (3)</span></li>', listed.group(2))

    def test_coverage_names_a_few_tests_of_an_id_and_counts_more(self):
        tests = [a_test("fam.A.T%d" % n, "failed" if n == 0 else "passed") for n in range(5)]
        row = {"family": "fam", "planned": ["A.T%d" % n for n in range(5)] + ["A.Gone"],
               "results": {"A.T%d" % n: ["fam.A.T%d" % n] for n in range(5)}}
        out = sections.planned_tests_cell(row, {t["ctest_name"]: t for t in tests})
        self.assertEqual(out, '6 tests in <a href="#f-fam">fam</a>: <span class="st st-failed">1 FAIL</span> '
                              '<span class="st st-passed">4 pass</span> '
                              '<span class="st st-no-result">1 no result</span>')
        few = dict(row, planned=row["planned"][:sections.COVERAGE_NAMED])
        self.assertEqual(sections.planned_tests_cell(few, {t["ctest_name"]: t for t in tests}).count("<code>"),
                         sections.COVERAGE_NAMED)
        lines = sections.detail_lines(["x" * 500] + ["line"] * sections.COVERAGE_DETAIL_LINES)
        self.assertEqual(len(lines), sections.COVERAGE_DETAIL_LINES + 1)
        self.assertEqual(len(lines[0]), test_row.SHORT_REASON_CHARS)
        self.assertEqual(lines[-1], "1 more")

    def test_a_family_is_a_line_and_its_rows_are_apart(self):
        tests = [a_test("fam.A.Fine"), a_test("fam.A.Broken", "failed")]
        model = a_model(*tests, a_test("other.B.Fine"))
        self.assertEqual(list(sections.tests_by_family(model)), ["fam", "other"])
        ordered = sections.tests_by_family(model)["fam"]
        self.assertEqual([t["ctest_name"] for t in ordered], ["fam.A.Broken", "fam.A.Fine"])
        out = sections.families_section(model)
        self.assertIn('<details class="family" id="f-fam"><summary><h3>fam</h3>', out)
        self.assertIn("<tbody></tbody>", out)
        self.assertNotIn("<tr id=", out)
        rows = sections.family_rows(ordered)
        self.assertTrue(rows.startswith('<tr id="t-fam.A.Broken" data-status="failed"'), rows)

    def test_totals_of_a_run_without_failures_or_results(self):
        self.assertIn('<div class="banner ok">\u2713 No test failed</div>',
                      sections.totals_section(a_model(a_test("fam.A.Fine"))))
        nothing = a_model(a_test("fam.A.Listed", "notrun"), a_test("fam.A.Planned", "notrun", planned_only=True))
        self.assertIn("No test produced a result in this run (1 test not run, 1 planned test not in this run).",
                      sections.totals_section(nothing))

    def test_instruments_link_their_test_and_list_their_figures(self):
        test = a_test("instruments.Instruments.Tick")
        model = a_model(test, instruments={
            "INST-01": {"test": "instruments.Instruments.Tick", "figures": {"tick_ns": 32, HOSTILE: "<b>"}},
            "INST-02": {"test": None, "figures": "not an object"}})
        out = sections.instruments_section(model)
        self.assertIn('<tr><td class="mono"><b>INST-01</b></td><td><a href="#t-instruments.Instruments.Tick" '
                      'class="mono">Instruments.<wbr>Tick</a> <span class="st st-passed">pass</span></td>', out)
        self.assertIn("<span>tick_ns<i>=</i>32</span>", out)
        self.assertIn("<span>%s<i>=</i>&lt;b&gt;</span>" % h(HOSTILE), out)
        self.assertIn('<td>\u2014</td><td><span class="muted">\u2014</span></td>', out)
        self.assertEqual(sections.instruments_section(a_model()),
                         '<section id="instruments"><h2>Instruments</h2><p class="muted">No instrument records '
                         '(they are written by the GPU instrument tests).</p></section>')

    def test_timelines_say_why_tests_have_none(self):
        off = a_test("fam.A.Off", timeline={"tracing": {"enabled": False, "reason": HOSTILE}})
        out = sections.timelines_section(a_model(off, a_test("fam.A.None")))
        self.assertIn("No test recorded a timeline", out)
        self.assertIn("1 test with tracing off (%s); 1 test without a timeline record." % h(HOSTILE), out)

    def test_environment_tables_mark_rows_that_differ_between_runs(self):
        runs = [{"id": "a", "dir": "/a", "env": {"host": {"name": "x"}}},
                {"id": "b", "dir": "/b", "env": {"host": {"name": HOSTILE}}}]
        out = page_parts.environment_tables(runs)
        self.assertIn('<tr class="diff-row"><td class=\'mono\'>name</td><td class=\'mono\'>x</td>'
                      '<td class=\'mono\'>%s</td></tr>' % h(HOSTILE), out)
        self.assertIn('<div><h3>Build</h3><p class="muted">not recorded</p></div>', out)


class TestRow(unittest.TestCase):
    def test_row_of_a_failed_test_with_a_variant_and_a_claim(self):
        test = a_test("fam.ptds.A.Broken", "failed", failures=["x.cpp:1\n" + HOSTILE], duration_ms=2.0,
                      claims=[{"id": "PRIO-01", "kind": "observed", "source": "guide"}])
        out = test_row.test_row(test)
        self.assertTrue(out.startswith('<tr id="t-fam.ptds.A.Broken" data-status="failed" class="row-failed">'), out)
        self.assertIn('<span class="tag" title="ctest prefix fam.ptds.">ptds</span>', out)
        self.assertIn('<a href="#id-PRIO-01" class="mono">PRIO-01</a>', out)
        # The row says why in a line; the details have the failure whole.
        self.assertIn('<td class="small">x.cpp:1: %s</td></tr>' % h(HOSTILE), out)
        details = test_row.test_details(test)
        self.assertIn("<pre>x.cpp:1\n%s</pre>" % h(HOSTILE), details)
        self.assertIn('<td class="mono">fam.ptds.A.Broken</td>', details)
        self.assertIn("<td>observed</td><td class=\"small\">guide</td>", details)
        self.assertNotIn("<img", out + details)

    def test_the_rows_reason_is_one_line_of_at_most_its_length(self):
        long = a_test("fam.A.Skipped", "skipped", skip_reason="why " * 100)
        reason = test_row.short_reason(long)
        self.assertEqual(len(reason), test_row.SHORT_REASON_CHARS)
        self.assertTrue(reason.endswith("\u2026"))
        gated = a_test("fam.A.Gated", "failed", baseline=[{"id": "PRIO-01", "key": "levels", "observed": 5,
                                                          "expected": 6, "status": "differs-gating"}])
        self.assertEqual(test_row.short_reason(gated), "baseline PRIO-01/levels differs: observed 5, expected 6")
        self.assertEqual(test_row.short_reason(a_test("fam.A.Fine")), "")

    def test_row_of_a_test_not_judged_for_a_shared_gpu_escapes_its_reason_and_keeps_its_failures(self):
        test = a_test("fam.A.Beside", "skipped", skip_kind="shared_gpu", failures=["x.cpp:1\nlost"],
                      gpu_sharing={"shared": True, "reason": HOSTILE})
        out = test_row.test_row(test)
        self.assertTrue(out.startswith('<tr id="t-fam.A.Beside" data-status="shared_gpu">'), out)
        self.assertIn(">not judged (shared GPU)</span>", out)
        self.assertIn('<td class="small">%s</td>' % h(HOSTILE), out)
        details = test_row.test_details(test)
        self.assertIn('<div><b>not judged (shared GPU)</b></div><div class="small">%s</div>' % h(HOSTILE), details)
        self.assertIn("<pre>x.cpp:1\nlost</pre>", details)
        self.assertNotIn("<img", out + details)

    def test_baseline_line_takes_why_and_finding_from_the_baseline_file(self):
        known = {"path": "/src/baselines/sm_90.json", "entries": {"PRIO-01": {"levels": {
            "why": "measured", "driver_may_flip": True, "finding": HOSTILE, "expected": 6}}}}
        row = {"id": "PRIO-01", "key": "levels", "status": "differs", "observed": 5, "expected": 6, "gating": False}
        out = test_row.baseline_list([row], ["PRIO-01"], known)
        self.assertIn('<span class="st st-differs">differs</span> <span class="mono why" title="levels (sm_90.json)'
                      '\nwhy: measured\ndriver may flip: yes">levels</span> = <span class="mono">5</span>', out)
        self.assertIn('(expected <span class="mono">6</span>, not gating, <span class="why"', out)
        self.assertIn('<span class="tag finding" title="%s">finding</span>' % h(HOSTILE), out)
        self.assertEqual(test_row.baseline_list([], ["PRIO-01"]), '<span class="muted">\u2014</span>')


if __name__ == "__main__":
    unittest.main()
