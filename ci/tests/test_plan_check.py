"""ci/plan_check.py: each disagreement between the tests and their plans is found, and a tree that agrees has
none."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci" / "plan_check.py"

PLAN = """# plan
| ID | Kind | Source | Tests | Checks |
|---|---|---|---|---|
| X-01 | documented | RT | `Fam.One` | a |
| X-02 | documented / observed | RT | `Fam.Two*` | b |
| X-03 | observed | RT | `Fam.Gone` | c |
"""

AGREES = """TEST_F(Fam, One) {
  const sc::claim x01("X-01");
  body();
}
TEST_F(Fam, TwoA) {
  const sc::claim x02("X-02", sc::verdict_kind::observed);
}
TEST_F(Fam, Gone) { const sc::claim x03("X-03"); }
"""


def check(test_text, plan=PLAN):
    with tempfile.TemporaryDirectory() as root:
        family = Path(root, "tests", "fam")
        family.mkdir(parents=True)
        (family / "README.md").write_text(plan)
        (family / "fam_test.cpp").write_text(test_text)
        done = subprocess.run([sys.executable, str(SCRIPT), root], capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout


class PlanCheck(unittest.TestCase):
    def test_a_tree_that_agrees_has_no_disagreement(self):
        self.assertEqual((0, "plan_check: 3 claim(s) in 3 test(s) read; 0 disagreement(s) with the plans\n"),
                         check(AGREES))

    def test_every_disagreement_is_named(self):
        cases = {
            'const sc::claim x01("X-01", sc::verdict_kind::documented, "RT");': "gives a source",
            'const sc::claim x01("X-01", sc::verdict_kind::documented);': "which its plan row says already",
            'const sc::claim x01("X-01", sc::verdict_kind::observed);': "is claimed observed, its plan says documented",
            'const sc::claim x01("X-09");': "X-09 is claimed, but no plan has a row for it",
            'body();\n  const sc::claim x01("X-01");': "does not open with its claims",
            'const sc::claim x01("X-01");\n#include "sc/runner/process.hpp"': "a header of the runner",
            'const sc::claim x01("X-01");\n  sc::detail::ledger_mark();': "calls sc::detail::ledger_mark",
        }
        for claim, said in cases.items():
            with self.subTest(claim=claim):
                rc, out = check(AGREES.replace('const sc::claim x01("X-01");', claim))
                self.assertEqual(1, rc, out)
                self.assertIn(said, out)
        rc, out = check(AGREES.replace('"X-02", sc::verdict_kind::observed', '"X-02"'))
        self.assertEqual(1, rc, out)
        self.assertIn("X-02's plan row names documented and observed: the claim must say which", out)
        rc, out = check(AGREES.replace("TEST_F(Fam, Gone) { const sc::claim x03(\"X-03\"); }\n", ""))
        self.assertEqual(1, rc, out)
        self.assertIn("X-03's Tests cell names Fam.Gone, which matches no test", out)

    def test_a_parameterized_test_is_named_with_its_instances(self):
        # A TEST_P body is Suite.Test/*, the name its plan gives every instance; its claim opens it like any.
        plan = PLAN.replace("`Fam.Gone`", "`Modes.Gone/*`")
        param = AGREES.replace("TEST_F(Fam, Gone)", "TEST_P(Modes, Gone)")
        self.assertEqual((0, "plan_check: 3 claim(s) in 3 test(s) read; 0 disagreement(s) with the plans\n"),
                         check(param, plan))


if __name__ == "__main__":
    unittest.main()
