"""ci/run_suite.sh with stand-ins for nvidia-smi, cmake and ctest: which runs --every-gpu makes, with which
GPUs visible, and what it exits with, including for a run in which nothing was tested on a GPU."""

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from synthetic import make_run

ROOT = Path(__file__).resolve().parents[2]

FAKE_CTEST = r"""#!/usr/bin/env bash
# Records its call, makes a results folder named after its GPUs as sc_env begin does (unless FAKE_NO_RESULTS
# names those GPUs), and exits as FAKE_RC_<GPUs> says. Calls may come at once: nothing is shared between them.
key=${CUDA_VISIBLE_DEVICES-unset}
key=${key//,/_}
echo "CVD=${CUDA_VISIBLE_DEVICES-unset} ORDER=${CUDA_DEVICE_ORDER-unset} ARGS=$*" >> "$FAKE_LOG.$key"
if [ "${FAKE_NO_RESULTS:-}" != "$key" ]; then
  mkdir -p results/runs/run-$key results/invocations
  [ -n "${FAKE_TEMPLATE:-}" ] && cp -r "$FAKE_TEMPLATE/." results/runs/run-$key/
  ln -sfn ../runs/run-$key "results/invocations/$$-$(awk '{print $22}' /proc/$$/stat)"
fi
echo "100% tests passed, 0 tests failed out of 1 (GPUs $key)"
rc_var=FAKE_RC_$key
exit ${!rc_var:-0}
"""


class EveryGpu(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-run-suite-test-")
        self.addCleanup(self._tmp.cleanup)  # also when set-up skips
        tmp = Path(self._tmp.name)
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.build = tmp / "build"
        self.build.mkdir()
        (self.build / "CMakeCache.txt").write_text("# stand-in\n")
        self.log = tmp / "ctest.log"
        self.fake("ctest", FAKE_CTEST)
        self.fake("cmake", "#!/bin/sh\nexit 0\n")
        self.fake("nvidia-smi", "#!/bin/sh\nprintf '0\\n1\\n'\n")
        # python3 stays the real one: the report of an empty folder fails, and run_suite carries on.
        # run_suite.sh needs bash 4 (mapfile), and the stand-ins a folder whose files may be executed.
        try:
            bash4 = subprocess.run(["bash", "-c", "mapfile -t x < /dev/null"], capture_output=True, timeout=30)
            runs = subprocess.run([str(self.bin / "nvidia-smi")], capture_output=True, timeout=30)
        except OSError as error:
            self.skipTest("cannot run the stand-ins here: %s" % error)
        if bash4.returncode != 0 or runs.returncode != 0:
            self.skipTest("bash 4 (mapfile) or an executable temporary folder is missing")

    def fake(self, name, text):
        path = self.bin / name
        path.write_text(text)
        path.chmod(0o755)

    def run_suite(self, every_gpu=True, **extra):
        env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
        env.update({"PATH": "%s:%s" % (self.bin, env.get("PATH", "")), "FAKE_LOG": str(self.log)})
        env.update(extra)
        options = ["--every-gpu"] if every_gpu else []
        done = subprocess.run(["bash", str(ROOT / "ci" / "run_suite.sh")] + options + [str(self.build)],
                              capture_output=True, text=True, timeout=120, env=env)
        logs = self.log.parent.glob(self.log.name + ".*")
        calls = sorted(line for log in logs for line in log.read_text().splitlines())
        return done, calls

    def test_one_run_per_gpu_and_the_two_gpu_tests_on_a_pair(self):
        done, calls = self.run_suite()
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual(3, len(calls), calls)
        self.assertIn("CVD=0 ORDER=PCI_BUS_ID", calls[0])
        self.assertIn("CVD=0,1 ORDER=PCI_BUS_ID", calls[1])
        self.assertIn("CVD=1 ORDER=PCI_BUS_ID", calls[2])
        self.assertIn("-L ^two_gpus$", calls[1])
        self.assertIn("-LE ^two_gpus$", calls[0])
        self.assertIn("-LE ^two_gpus$", calls[2])
        self.assertIn("run_suite: GPUs 0,1 (tests that need two GPUs): ctest status 0", done.stdout)
        self.assertIn("100% tests passed, 0 tests failed out of 1 (GPUs 0_1)", done.stdout)

    def test_every_run_gets_its_page_and_each_later_gpu_a_comparison_with_the_first(self):
        template = Path(self._tmp.name) / "template"
        make_run(template)
        done, _ = self.run_suite(FAKE_TEMPLATE=str(template / "20260101T000000Z-1"))
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        runs = self.build / "results" / "runs"
        for key in ("0", "1", "0_1"):
            self.assertTrue((runs / ("run-" + key) / "report.html").exists(), key)
        self.assertTrue((runs / "run-1" / "compare-run-0.html").exists())
        said = [line.split("/")[-1] for line in done.stdout.splitlines() if line.startswith("run_suite: results folder")]
        self.assertEqual(["run-0", "run-1", "run-0_1"], said)

    def test_every_gpu_is_in_a_pair(self):
        self.fake("nvidia-smi", "#!/bin/sh\nprintf '0\\n1\\n2\\n'\n")
        done, calls = self.run_suite()
        self.assertEqual(0, done.returncode, done.stderr)
        pairs = sorted(c.split()[0] for c in calls if "," in c.split()[0])
        self.assertEqual(["CVD=0,1", "CVD=2,0"], pairs)

    def test_the_gpus_runs_start_together_and_the_pairs_after_them(self):
        # A GPU's stand-in waits until both GPUs' runs have been called, then says it ended; the pair's stand-in
        # fails unless both had ended when it was called.
        wait = ('if [ "$key" = 0_1 ]; then [ -f "$FAKE_LOG.end.0" ] && [ -f "$FAKE_LOG.end.1" ] || exit 9; else\n'
                'for _ in $(seq 100); do [ $(cat $FAKE_LOG.0 $FAKE_LOG.1 2>/dev/null | wc -l) -ge 2 ] && break; '
                'sleep 0.1; done\n[ $(cat $FAKE_LOG.0 $FAKE_LOG.1 | wc -l) -ge 2 ] || exit 9\n'
                'touch "$FAKE_LOG.end.$key"; fi\nrc_var=')
        self.fake("ctest", FAKE_CTEST.replace("rc_var=", wait))
        done, calls = self.run_suite()
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertEqual(3, len(calls), calls)

    def test_the_worst_status_is_the_exit_status(self):
        done, calls = self.run_suite(FAKE_RC_1="8")
        self.assertEqual(8, done.returncode, done.stderr)
        self.assertEqual(3, len(calls), "a failing GPU does not stop the other runs")

    def test_a_run_without_a_new_results_folder_fails(self):
        done, _ = self.run_suite(FAKE_NO_RESULTS="1")
        self.assertEqual(1, done.returncode, done.stderr)
        self.assertIn("GPU 1: ctest made no results folder", done.stderr)

    def test_a_caller_set_device_list_is_refused(self):
        done, calls = self.run_suite(CUDA_VISIBLE_DEVICES="1")
        self.assertEqual(2, done.returncode)
        self.assertIn("unset it", done.stderr)
        self.assertEqual([], calls)

    def test_one_gpu_makes_no_two_gpu_run(self):
        self.fake("nvidia-smi", "#!/bin/sh\nprintf '0\\n'\n")
        done, calls = self.run_suite()
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual(1, len(calls), calls)

    def test_nothing_tested_on_a_gpu_is_exit_2_and_said(self):
        template = Path(self._tmp.name) / "template"
        make_run(template, gpu=False, driver=0, release=None)
        done, _ = self.run_suite(False, FAKE_TEMPLATE=str(template / "20260101T000000Z-1"))
        self.assertEqual(2, done.returncode, done.stdout + done.stderr)
        self.assertIn("report: nothing was tested on a GPU (no GPU was used: no usable CUDA device", done.stdout)
        self.assertIn("run_suite: nothing was tested on a GPU (no GPU was used", done.stderr)

    def test_a_run_that_tested_on_a_gpu_keeps_ctests_status(self):
        template = Path(self._tmp.name) / "template"
        make_run(template)
        done, _ = self.run_suite(False, FAKE_TEMPLATE=str(template / "20260101T000000Z-1"))
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertNotIn("nothing was tested", done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
