"""ci/mutation_check.py and ci/family_time.py read runs through the report's results reader; ci/lock_timeline.py
samples who holds a GPU lock."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from synthetic import env_doc, gtest_xml, make_run, write

CI = Path(__file__).resolve().parents[2] / "ci"


def ci(script, *args):
    return subprocess.run([sys.executable, str(CI / script)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=60)


class CiScripts(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-ci-test-")
        self.root = Path(self._tmp.name)
        self.run_dir = make_run(self.root / "results")

    def tearDown(self):
        self._tmp.cleanup()

    def mutate(self, catalog_id):
        doc = env_doc(self.run_dir.name)
        doc["environment"]["STREAMCHECK_MUTATE"] = catalog_id
        write(self.run_dir / "env.json", json.dumps(doc))

    def test_mutation_killed_by_exactly_its_own_test(self):
        self.mutate("PRIO-02")
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("mutation PRIO-02: killed", result.stdout)

    def test_surviving_mutation_and_collateral_failure(self):
        self.mutate("PRIO-01")
        result = ci("mutation_check.py", self.run_dir, "PRIO-01")
        self.assertEqual(result.returncode, 1)
        self.assertIn("NOT KILLED", result.stdout)
        self.assertIn("survived: priority_flags.PriorityFlags.RangeIsOrdered", result.stdout)
        self.assertIn("other failures: priority_flags.PriorityFlags.DriverRangeMatches", result.stdout)

    def test_tests_not_run_after_a_claiming_test_ended_the_process_are_no_collateral(self):
        # Fast mode: the claiming test failed on a watchdog and ended its process; the test after it never ran.
        self.mutate("PRIO-02")
        reason = "priority_flags.PriorityFlags.DriverRangeMatches left the process unusable: a watchdog fired"
        write(self.run_dir / "gtest" / "priority_flags.PriorityFlags.After.xml",
              gtest_xml("PriorityFlags", "After", failures=["not run: " + reason], notrun=True))
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("mutation PRIO-02: killed", result.stdout)
        self.assertIn("1 other test(s) not run after a claiming test ended the process", result.stdout)
        # A claiming test that never ran is not judged; with no other claiming test, nothing is.
        write(self.run_dir / "gtest" / "priority_flags.PriorityFlags.DriverRangeMatches.xml",
              gtest_xml("PriorityFlags", "DriverRangeMatches", failures=["not run: an earlier test broke it"],
                        properties={"catalog_id": "PRIO-02"}, notrun=True))
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("did not run; nothing judged", result.stdout)

    def test_unreadable_file_makes_the_mutation_run_prove_nothing(self):
        self.mutate("PRIO-02")
        write(self.run_dir / "observations" / "harness.Harness.Cut.json", "{")
        result = ci("mutation_check.py", self.run_dir, "PRIO-02")
        self.assertEqual(result.returncode, 1)
        self.assertIn("could not be read", result.stdout)
        self.assertNotIn("Traceback", result.stderr)

    def test_family_time_uses_the_fixture_times_of_the_observation_files(self):
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/>'
                     '<testcase name="unit.Handle.OwnedHandleIsReleasedOnce" time="0.1"/>'
                     '<testcase name="streamcheck.run.begin" time="1"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(l for l in result.stdout.splitlines() if l.startswith("priority_flags"))
        # 0.5 s of ctest time, 3.25 ms in the fixture of which 1.5 ms set-up.
        self.assertEqual(line.split()[:6], ["priority_flags", "1", "0.50", "0.50", "0.00", "0.00"])
        self.assertIn("(no observation files: host tests)", result.stdout)

    def set_steps(self, steps, first):
        path = self.run_dir / "observations" / "priority_flags.PriorityFlags.RangeIsOrdered.json"
        doc = json.loads(path.read_text())
        doc["schema_version"] = "1.6.0"
        doc["setup_steps_ms"] = steps
        doc["first_in_process"] = first
        write(path, json.dumps(doc))

    def test_family_time_splits_set_up_into_its_steps(self):
        self.set_steps([["device_count", 100.0], ["context", 120.5], ["clock_offset", 3.5]], True)
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = {l.split()[0]: l.split()[1:] for l in result.stdout.splitlines() if l.strip()}
        self.assertIn("set-up", rows)
        # First test of its process: 1 test, total, median; no later tests.
        self.assertEqual(rows["context"], ["1", "120.5", "120.50", "-"])
        self.assertEqual(rows["device_count"][:2], ["1", "100.0"])
        self.assertEqual(list(rows).index("device_count") + 2, list(rows).index("clock_offset"))

    def test_malformed_set_up_steps_leave_the_file_out_and_say_why(self):
        self.set_steps([["context", "fast"]], False)
        junit = self.root / "junit.xml"
        write(junit, '<testsuite><testcase name="priority_flags.PriorityFlags.RangeIsOrdered" time="0.5"/></testsuite>')
        result = ci("family_time.py", junit, self.run_dir)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("skipping", result.stderr)
        self.assertIn("setup_steps_ms", result.stderr)
        self.assertNotIn("set-up step", result.stdout)
        self.assertNotIn("Traceback", result.stderr)



HOLDER = """
import fcntl, sys, time
with open(sys.argv[1], "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    time.sleep(float(sys.argv[2]))
"""


class LockTimeline(unittest.TestCase):
    """ci/lock_timeline.py against two processes that hold a lock file one after the other (no GPU)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-lock-test-")
        self.folder = Path(self._tmp.name)
        self.lock = self.folder / ("streamcheck-gpu-" + "ab" * 16 + ".lock")

    def tearDown(self):
        self._tmp.cleanup()

    def test_each_holder_its_time_and_the_gap_between(self):
        script = ("import subprocess, sys, time\n"
                  "h = %r\n"
                  "time.sleep(0.1)\n"
                  "subprocess.run([sys.executable, '-c', h, %r, '0.4'])\n"
                  "time.sleep(0.2)\n"
                  "subprocess.run([sys.executable, '-c', h, %r, '0.3'])\n"
                  "sys.exit(3)\n") % (HOLDER, str(self.lock), str(self.lock))
        out = self.folder / "figures.json"
        self.lock.touch()  # as a test process leaves it: the file outlives its holders
        result = ci("lock_timeline.py", "--lock-dir", self.folder, "--json", out, "--", sys.executable, "-c", script)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)  # the command's status
        figures = json.loads(out.read_text())
        gpu = figures["gpus"]["ab" * 16]
        held = [h["held_s"] for h in gpu["holds"]]
        self.assertEqual(len(held), 2, result.stdout)
        # Reason for the bounds: the holders keep the lock for 0.4 s and 0.3 s (taken after their interpreter
        # started, let go when the with block ends); the sampling, every 0.5 ms but later on a loaded machine,
        # may see a take or a release late, so either way by up to 0.1 s.
        self.assertTrue(0.3 <= held[0] <= 0.5 and 0.2 <= held[1] <= 0.4, held)
        self.assertGreater(gpu["idle_s"], 0.15, gpu)
        self.assertIn("python", gpu["holds"][0]["what"])
        self.assertIn("held %.3f s in 2 hold(s) by 2 process(es)" % gpu["held_s"], result.stdout)

    def test_no_lock_held_and_usage(self):
        result = ci("lock_timeline.py", "--lock-dir", self.folder, "--", sys.executable, "-c", "pass")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no process of the suite held a GPU lock", result.stdout)
        self.assertEqual(ci("lock_timeline.py", "--lock-dir", self.folder).returncode, 2)
        self.assertEqual(ci("lock_timeline.py", "--", "/nonexistent/program").returncode, 2)

    def test_sigterm_ends_the_command_and_still_reports(self):
        tool = subprocess.Popen([sys.executable, str(CI / "lock_timeline.py"), "--lock-dir", str(self.folder), "--",
                                 sys.executable, "-c", "import time; time.sleep(30)"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        tool.send_signal(signal.SIGTERM)
        out, err = tool.communicate(timeout=20)
        self.assertEqual(tool.returncode, 128 + signal.SIGTERM, out + err)  # the command's, ended by SIGTERM
        self.assertIn("interrupted by SIGTERM", out)


class LockHolders(unittest.TestCase):
    """ci/lock_timeline.py's reading of /proc/locks, on given text."""

    def setUp(self):
        sys.path.insert(0, str(CI))
        import lock_timeline
        self.lt = lock_timeline
        self.key = (os.makedev(0xfe, 0), 100)
        self.locks = {self.key: "U"}

    def test_exact_match_waiters_and_other_kinds_of_lock(self):
        text = ("1: POSIX  ADVISORY  WRITE 11 fe:00:100 0 EOF\n"
                "2: FLOCK  ADVISORY  WRITE 123 fe:00:100 0 EOF\n"
                "2: -> FLOCK  ADVISORY  WRITE 124 fe:00:100 0 EOF\n"
                "3: FLOCK  ADVISORY  WRITE 999 00:2a:100 0 EOF\n")
        self.assertEqual({"U": 123}, self.lt.holders(text, self.locks, confirm=lambda pid, key: True))

    def test_inode_alone_only_when_the_process_has_the_file_open(self):
        text = "1: FLOCK  ADVISORY  WRITE 999 00:2a:100 0 EOF\n1: FLOCK  ADVISORY  WRITE 555 00:2b:100 0 EOF\n"
        self.assertEqual({"U": 555}, self.lt.holders(text, self.locks, confirm=lambda pid, key: pid == 555))
        self.assertEqual({}, self.lt.holders(text, self.locks, confirm=lambda pid, key: False))

    def test_device_field(self):
        self.assertEqual((os.makedev(0xfe, 0x1), 42), self.lt.parse_device("fe:01:42"))
        self.assertIsNone(self.lt.parse_device("garbage"))


class ResourceSpec(unittest.TestCase):
    """cmake/gpu_resource_spec.cmake.in (run by ctest at each start): nvidia-smi's GPU list, kept in the build
    folder under a key of the boot, the driver, its GPUs and the device files."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-spec-test-")
        self.dir = Path(self._tmp.name)
        self.build = self.dir / "build"
        self.build.mkdir()
        template = (CI.parent / "cmake" / "gpu_resource_spec.cmake.in").read_text()
        self.script = self.build / "gpu_resource_spec.cmake"
        # What ctest reads: the spec file the script names (none: no spec).
        self.script.write_text(template.replace("@CMAKE_BINARY_DIR@", str(self.build)) +
                               'message("spec file: ${CTEST_RESOURCE_SPEC_FILE}")\n')
        self.kept = self.build / "gpu_resource_ids.txt"
        self.root = self.dir / "root"
        write(self.root / "proc/sys/kernel/random/boot_id", "boot-1\n")
        write(self.root / "proc/driver/nvidia/version", "NVRM version: 580.0\n")
        for bus in ("0000:01:00.0", "0000:02:00.0"):
            write(self.root / "proc/driver/nvidia/gpus" / bus / "information", "x\n")
        write(self.root / "dev/nvidia0", "")
        write(self.root / "dev/nvidia1", "")
        write(self.root / "dev/nvidiactl", "")
        self.bin = self.dir / "bin"
        self.calls = self.dir / "calls"
        self.smi(["0", "1"])

    def tearDown(self):
        self._tmp.cleanup()

    def smi(self, lines, rc=0, folder=None):
        """A stand-in nvidia-smi that counts its calls and prints the given lines."""
        folder = folder or self.bin
        folder.mkdir(exist_ok=True)
        fake = folder / "nvidia-smi"
        fake.write_text("#!/bin/sh\necho x >> '%s'\nprintf '%s'\nexit %d\n"
                        % (self.calls, "".join(line + "\\n" for line in lines), rc))
        fake.chmod(0o755)

    def ctest_start(self, path_first=None, **env):
        """Runs the script as ctest does; returns the spec's GPU ids (None: no spec) and nvidia-smi's calls."""
        environ = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "STREAMCHECK_GPU_SLOTS")}
        path = [str(p) for p in (path_first, self.bin) if p is not None]
        environ.update(PATH=":".join(path + [os.environ["PATH"]]), STREAMCHECK_RESOURCE_SPEC_ROOT=str(self.root))
        environ.update(env)
        before = len(self.calls.read_text().splitlines()) if self.calls.exists() else 0
        result = subprocess.run(["cmake", "-P", str(self.script)], env=environ, capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        lines = result.stderr.splitlines()
        self.assertEqual(1, len(lines), result.stderr)
        after = len(self.calls.read_text().splitlines()) if self.calls.exists() else 0
        spec = lines[0][len("spec file: "):]
        ids = [g["id"] for g in json.loads(Path(spec).read_text())["local"][0]["gpus"]] if spec else None
        return ids, after - before

    def test_asked_once_then_kept(self):
        self.assertEqual((["0", "1"], 1), self.ctest_start())
        self.assertEqual((["0", "1"], 0), self.ctest_start())
        self.assertEqual((["0"], 0), self.ctest_start(CUDA_VISIBLE_DEVICES="1"))
        self.assertEqual([self.kept.name], [p.name for p in self.build.glob("gpu_resource_ids*")])

    def test_runs_started_together_read_their_own_spec(self):
        self.ctest_start()
        environ = dict(os.environ, PATH="%s:%s" % (self.bin, os.environ["PATH"]),
                       STREAMCHECK_RESOURCE_SPEC_ROOT=str(self.root))
        runs = []
        for i in range(24):
            env = dict(environ, CUDA_VISIBLE_DEVICES=["0", "0,1"][i % 2], STREAMCHECK_GPU_SLOTS=str(1 + i % 3))
            runs.append((env, subprocess.Popen(["cmake", "-P", str(self.script)], env=env, stderr=subprocess.PIPE,
                                               text=True)))
        for env, run in runs:
            _, err = run.communicate(timeout=60)
            self.assertEqual(0, run.returncode, err)
            gpus = json.loads(Path(err.strip()[len("spec file: "):]).read_text())["local"][0]["gpus"]
            self.assertEqual(len(env["CUDA_VISIBLE_DEVICES"].split(",")), len(gpus))
            self.assertEqual({int(env["STREAMCHECK_GPU_SLOTS"])}, {g["slots"] for g in gpus})
        self.assertEqual(6, len(list(self.build.glob("gpu_resource_spec-*.json"))))
        self.assertEqual([], [p.name for p in self.build.glob("gpu_resource_spec-*.json.*")])

    def test_visible_devices_as_cuda_counts_them(self):
        for visible, ids in (("1", ["0"]), ("1,0", ["0", "1"]), ("0,2,1", ["0"]), ("5", None), ("", None),
                             (" 1 , 0 ", ["0", "1"]), ("0,,1", ["0"]), ("GPU-aa,MIG-bb", ["0", "1"]),
                             ("0,1,GPU-aa,7", ["0", "1", "2"]), ("1gpu,0", ["0", "1"]), ("0,-1,1", ["0"]),
                             ("1,01", None), ("1,0,1", None), ("x,0", None)):
            self.assertEqual(ids, self.ctest_start(CUDA_VISIBLE_DEVICES=visible)[0], visible)

    def test_files_outside_the_key_keep_it(self):
        self.ctest_start()
        for name in ("nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps/nvidia-cap1"):
            write(self.root / "dev" / name, "")
        self.assertEqual((["0", "1"], 0), self.ctest_start())

    def test_asked_again_when_the_gpus_change(self):
        self.ctest_start()
        self.smi(["0", "1", "2"])
        write(self.root / "dev/nvidia2", "")
        write(self.root / "proc/driver/nvidia/gpus/0000:03:00.0/information", "x\n")
        self.assertEqual((["0", "1", "2"], 1), self.ctest_start())
        self.assertEqual((["0", "1", "2"], 0), self.ctest_start())
        write(self.root / "proc/sys/kernel/random/boot_id", "boot-2\n")
        self.assertEqual((["0", "1", "2"], 1), self.ctest_start())
        write(self.root / "proc/driver/nvidia/version", "NVRM version: 590.0\n")
        self.assertEqual((["0", "1", "2"], 1), self.ctest_start())
        (self.root / "dev/nvidia2").unlink()
        self.assertEqual((["0", "1", "2"], 1), self.ctest_start())
        other = self.dir / "other-bin"
        self.smi(["0", "1", "2"], folder=other)
        self.assertEqual((["0", "1", "2"], 1), self.ctest_start(path_first=other))
        self.assertEqual((["0", "1", "2"], 0), self.ctest_start(path_first=other))

    def test_one_gpu_kept_and_read_back(self):
        write(self.root / "proc/driver/nvidia/gpus/0000:01:00.0/information", "x\n")
        for extra in self.root.glob("proc/driver/nvidia/gpus/0000:02*"):
            (extra / "information").unlink()
            extra.rmdir()
        self.smi(["", "0\r", ""])
        self.assertEqual((["0"], 1), self.ctest_start())
        self.assertEqual((["0"], 0), self.ctest_start())

    def test_read_once_per_run_whatever_the_folders_including_it(self):
        twice = self.build / "twice.cmake"
        twice.write_text('include("%s")\ninclude("%s")\n' % (self.script, self.script))
        self.smi([], rc=9)  # never kept: each reading would ask
        environ = dict(os.environ, PATH="%s:%s" % (self.bin, os.environ["PATH"]),
                       STREAMCHECK_RESOURCE_SPEC_ROOT=str(self.root))
        subprocess.run(["cmake", "-P", str(twice)], env=environ, check=True, capture_output=True, timeout=60)
        self.assertEqual(1, len(self.calls.read_text().splitlines()))

    def test_another_cgroup_asks_again(self):
        write(self.root / "proc/self/cgroup", "0::/job_1\n")
        self.ctest_start()
        self.assertEqual((["0", "1"], 0), self.ctest_start())
        write(self.root / "proc/self/cgroup", "0::/job_2\n")
        self.assertEqual((["0", "1"], 1), self.ctest_start())

    def test_a_damaged_spec_is_written_again(self):
        self.ctest_start()
        for spec in self.build.glob("gpu_resource_spec-*.json"):
            spec.write_text("")
        self.assertEqual((["0", "1"], 0), self.ctest_start())

    def test_brackets_and_semicolons_in_an_answer_split_no_line(self):
        self.smi(["[N/A", "0", "1;2", "1"])
        self.assertEqual((["0", "1"], 1), self.ctest_start())
        self.assertFalse(self.kept.exists())

    def test_a_failed_query_is_not_kept(self):
        self.smi([], rc=9)
        self.assertEqual((None, 1), self.ctest_start())
        self.assertEqual((None, 1), self.ctest_start())
        self.smi(["0", "1"])
        self.assertEqual((["0", "1"], 1), self.ctest_start())
        self.assertEqual((["0", "1"], 0), self.ctest_start())

    def test_a_garbled_answer_is_used_once(self):
        self.smi(["0", "1", "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error"])
        self.assertEqual((["0", "1"], 1), self.ctest_start())
        self.assertEqual((["0", "1"], 1), self.ctest_start())
        self.assertFalse(self.kept.exists())

    def test_fewer_than_the_driver_lists_is_not_kept(self):
        self.smi(["0"])  # as under cgroup device rules: the files of both GPUs stay, one may be used
        self.assertEqual((["0"], 1), self.ctest_start())
        self.assertEqual((["0"], 1), self.ctest_start())
        self.assertFalse(self.kept.exists())

    def test_a_damaged_file_is_asked_over(self):
        key = None
        for text in ("", "abc", "set(_sc_cached_key \"abc", "0" * 64 + " 0,1", "f" * 64 + " 0,1 end\n",
                     "KEY  end\n", "KEY 0,,1 end\n"):
            if "KEY" in text:
                text = text.replace("KEY", key)
            self.kept.write_text(text)
            self.assertEqual((["0", "1"], 1), self.ctest_start(), text)
            self.assertEqual((["0", "1"], 0), self.ctest_start(), text)
            key = self.kept.read_text().split()[0]
        line = self.kept.read_text()
        self.kept.write_text(line[:line.index(",") + 1])  # the right key, cut short after "0,"
        self.assertEqual((["0", "1"], 1), self.ctest_start())


if __name__ == "__main__":
    unittest.main()
