"""The fleet verdict (reports/streamcheck_fleet.py, streamcheck/fleet.py, fleet_page.py) over the recorded gate
runs of two hosts (../shared/data/fleet, skipped with the reason where absent) and copies of them with changed
values, drivers and failures; a synthetic fleet of 100 hosts x 275 tests for size and rendering; and the fleet
engines (ci/fleet_node.sh, ci/slurm/, the GitHub, GitLab and Kubernetes templates) with stand-ins for srun,
sbatch and the gate."""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import quoteattr

from synthetic import REPORTS, env_doc, write
from streamcheck.fleet import fleet_view, load_fleet, noise_band, value_change

ROOT = REPORTS.parent
CLI = REPORTS / "streamcheck_fleet.py"
RECORDED = ROOT.parent / "shared" / "data" / "fleet"
HOSTS = ("h200x2-host", "h100x1-host")
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
H100_RUN = "20261127T233115Z-1886"
# Tests and values of the recorded H100 run the copies change.
COPY_TEST = "copy_overlap.CopyOverlap.CopiesMemsetsAndKernelsOfOneStreamRunInOrder"
GAP_TEST = "priority_sched.PrioritySched.GraphRunsAtItsNodePriorityWithTheFlag"


def fleet_cli(*args, env=None):
    return subprocess.run([sys.executable, str(CLI)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300, env=env)


def edit_json(path, change):
    doc = json.loads(Path(path).read_text())
    change(doc)
    Path(path).write_text(json.dumps(doc))


def set_values(run, test, **values):
    """Observed values of a test of a recorded run (its observation file's, which replace the XML's)."""
    edit_json(Path(run) / "observations" / (test + ".json"), lambda d: d["observations"].update(values))


def set_driver(run, release):
    edit_json(Path(run) / "env.json", lambda d: d["driver"].update(version=release))


def fail_test(run, ctest):
    """A GoogleTest failure added to the test's <testcase> in whichever XML of the run holds it."""
    suite, name = ctest.split(".")[-2:]
    opening = re.compile(r'(<testcase name="%s"[^>]*classname="%s"[^>]*>)' % (re.escape(name), re.escape(suite)))
    for xml in sorted((Path(run) / "gtest").glob("*.xml")):
        text = xml.read_text()
        if opening.search(text):
            failure = '<failure message="injected" type=""><![CDATA[/src/x.cpp:1\ninjected failure]]></failure>'
            xml.write_text(opening.sub(lambda m: m.group(1) + failure, text, count=1))
            return
    raise AssertionError("no XML holds %s" % ctest)


def extract(archive, dest):
    with tarfile.open(archive) as tar:
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return dest


@unittest.skipUnless(all((RECORDED / (h + ".tgz")).is_file() for h in HOSTS),
                     "the recorded fleet data (%s: h200x2-host.tgz, h100x1-host.tgz) is absent" % RECORDED)
class RecordedFleet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._base = tempfile.TemporaryDirectory(prefix="streamcheck-fleet-data-")
        cls.base = Path(cls._base.name)
        for host in HOSTS:
            extract(RECORDED / (host + ".tgz"), cls.base / host)

    @classmethod
    def tearDownClass(cls):
        cls._base.cleanup()

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-fleet-test-")
        self.addCleanup(self._tmp.cleanup)
        self.root = Path(self._tmp.name)

    def fleet(self, name, **hosts):
        """A fleet folder: host name -> recorded host it copies."""
        for host, recorded in hosts.items():
            shutil.copytree(self.base / recorded, self.root / name / host)
        return self.root / name

    def h100s(self, name, count=4, h200=True):
        hosts = {"h100-%s" % c: "h100x1-host" for c in "abcdefgh"[:count]}
        if h200:
            hosts["h200"] = "h200x2-host"
        return self.fleet(name, **hosts)

    def test_recorded_hosts_pass_and_group_by_gpu(self):
        fleet = self.fleet("now", **{h: h for h in HOSTS})
        out = self.root / "out"
        out.mkdir()
        done = fleet_cli(fleet, "-o", out / "fleet.html", "--markdown", out / "fleet.md", "--junit", out / "fleet.xml")
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertIn("NVIDIA H200 \u00b7 driver 580.159.04 (CUDA 13.0) \u00b7 toolkit 13.0.88: 1 host", done.stdout)
        self.assertIn("NVIDIA H100 80GB HBM3 \u00b7 driver 580.159.04", done.stdout)
        page = (out / "fleet.html").read_text()
        for anchor in ("verdict", "groups", "tests", "values"):
            self.assertIn('<section id="%s">' % anchor, page)
        self.assertIn("Every host passed its gate.", page)
        self.assertIn("## streamcheck Fleet: passed", (out / "fleet.md").read_text())
        suites = ET.parse(out / "fleet.xml").getroot().findall("testsuite")
        self.assertEqual(sorted(HOSTS), sorted(s.get("name") for s in suites))
        h200 = next(s for s in suites if s.get("name") == "h200x2-host")
        classes = {c.get("classname").split(".")[1] for c in h200.iter("testcase")}
        self.assertTrue({"GPU 0", "GPU 1", "GPUs 0,1"} <= classes, classes)

    def test_a_failure_on_one_host_is_the_fleets_verdict(self):
        fleet = self.h100s("now", 3)
        fail_test(fleet / "h100-b" / H100_RUN, COPY_TEST)
        out = self.root / "fleet.xml"
        done = fleet_cli(fleet, "--junit", out)
        self.assertEqual(1, done.returncode, done.stdout + done.stderr)
        self.assertIn("behind it: h100-b", done.stdout)
        view = fleet_view(load_fleet(fleet))
        self.assertEqual([{"test": COPY_TEST, "failed": ["h100-b"], "unjudged": []}], view["tests"])
        suite = re.search(r'<testsuite name="h100-b" tests="\d+" failures="(\d+)"', out.read_text())
        self.assertEqual("1", suite.group(1))

    def test_an_untrustworthy_host_outranks_a_regression(self):
        fleet = self.h100s("now", 3, h200=False)
        fail_test(fleet / "h100-a" / H100_RUN, COPY_TEST)
        edit_json(fleet / "h100-b" / H100_RUN / "env.json", lambda d: d["run"].update(finished_utc=None))
        (fleet / "h100-c" / "gate.exit").write_text("0\n")
        (fleet / "empty-host").mkdir()
        done = fleet_cli(fleet)
        self.assertEqual(2, done.returncode, done.stdout + done.stderr)
        self.assertIn("behind it: empty-host, h100-b\n", done.stdout)
        self.assertIn("fleet: empty-host: exit 2: no run folder under", done.stdout)
        self.assertIn("fleet: h100-a: exit 1: GPU 0: %s: documented behavior COPY-01 failed" % COPY_TEST, done.stdout)
        # A host whose gate said worse than its run folders (a GPU whose ctest made no run) counts as it said.
        (fleet / "h100-c" / "gate.exit").write_text("2\n")
        host = next(h for h in load_fleet(fleet)["hosts"] if h["name"] == "h100-c")
        self.assertEqual(2, host["code"])
        self.assertIn("the host's gate exited 2", host["untrustworthy"][0])

    def test_run_folders_below_an_artifacts_own_folders(self):
        fleet = self.root / "now"
        runs = fleet / "h100-a" / "build" / "results" / "runs"
        shutil.copytree(self.base / "h100x1-host", runs)
        (runs.parent / "latest").symlink_to(runs / H100_RUN)
        host, = load_fleet(fleet)["hosts"]
        self.assertEqual([H100_RUN], [j["run"]["id"] for j in host["runs"]])

    def test_a_value_apart_from_its_group_names_its_host(self):
        fleet = self.h100s("now", 4)
        set_values(fleet / "h100-c" / H100_RUN, GAP_TEST, **{"fill.blocks": 300})
        for host in ("h100-a", "h100-b", "h100-c"):
            set_values(fleet / host / H100_RUN, COPY_TEST, note="same")
        set_values(fleet / "h100-d" / H100_RUN, COPY_TEST, words_checked="1048576", note="other")
        for host, gap in (("h100-a", 49000), ("h100-b", 50100), ("h100-c", 48800), ("h100-d", 51000)):
            set_values(fleet / host / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": gap})
        view = fleet_view(load_fleet(fleet))
        h100 = next(s for k, s in view["spreads"].items() if k[0].startswith("NVIDIA H100"))
        apart = {(r["test"], r["key"]): r["apart"] for r in h100["apart"]}
        self.assertEqual([("h100-c", 300.0)], apart[(GAP_TEST, "fill.blocks")])
        self.assertEqual([("h100-d", "other")], apart[(COPY_TEST, "note")])
        # A number in the XML's text and the same number in the observation file are one value.
        self.assertNotIn((COPY_TEST, "words_checked"), apart)
        self.assertNotIn((GAP_TEST, "blocks.widest_gap_ns"), apart)  # within 5 MAD of the median
        self.assertEqual("number", h100["apart"][0]["kind"])  # numbers first
        # Two H200 samples (its GPUs) cannot say which one is off: the group names no one.
        h200 = next(s for k, s in view["spreads"].items() if k[0] == "NVIDIA H200")
        self.assertEqual([], h200["apart"])
        done = fleet_cli(fleet, "-o", self.root / "fleet.html")
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn("h100-c: 300", (self.root / "fleet.html").read_text())

    def test_changes_since_the_previous_fleet_run(self):
        old = self.h100s("old", 4)
        for host, gap in (("h100-a", 100), ("h100-b", 110), ("h100-c", 90), ("h100-d", 105)):
            set_values(old / host / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": gap})
        new = self.root / "new"
        shutil.copytree(old, new)
        set_driver(new / "h100-d" / H100_RUN, "580.200.01")
        fail_test(new / "h100-b" / H100_RUN, COPY_TEST)
        # Within the value's own spread (MAD 5: a band of 37.1), though 35 % of it: noise.
        set_values(new / "h100-a" / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": 135})
        set_values(new / "h100-a" / H100_RUN, COPY_TEST, copy_bytes=33554432 * 2)  # every host had one value
        set_values(new / "h100-c" / H100_RUN, GAP_TEST, **{"fill.blocks": 280})  # 264 -> 280: 1.2 bands
        set_values(new / "h100-c" / H100_RUN, COPY_TEST, note="a text every host agreed on, changed")
        set_values(old / "h100-c" / H100_RUN, COPY_TEST, note="a text")
        for host in ("h100-a", "h100-b", "h100-d"):
            for fleet in (old, new):
                set_values(fleet / host / H100_RUN, COPY_TEST, note="a text")
        (new / "h100-new").mkdir()
        shutil.rmtree(new / "h200")
        changes = fleet_view(load_fleet(new), load_fleet(old))["changes"]
        self.assertEqual([("driver", "580.159.04 (CUDA 13.0)", "580.200.01 (CUDA 13.0)", ["h100-d"])],
                         [(e["what"], e["old"], e["new"], e["hosts"]) for e in changes["environment"]])
        self.assertEqual([("h100-b", 0, 1)], [(h["host"], h["old"], h["new"]) for h in changes["verdicts"]["hosts"]])
        self.assertEqual([(COPY_TEST, "passed", "failed", ["h100-b"])],
                         [(t["test"], t["old"], t["new"], t["hosts"]) for t in changes["verdicts"]["tests"]])
        self.assertEqual((["h100-new"], ["h200"]), (changes["verdicts"]["added"], changes["verdicts"]["removed"]))
        order = [(v["test"], v["key"], v["kind"]) for v in changes["values"]]
        self.assertEqual([(COPY_TEST, "copy_bytes", "number"), (GAP_TEST, "fill.blocks", "number"),
                          (COPY_TEST, "note", "text")], order)
        self.assertEqual(1, changes["noise"])
        done = fleet_cli(new, "--previous", old, "-o", self.root / "fleet.html", "--markdown", self.root / "fleet.md")
        self.assertEqual(2, done.returncode)  # h100-new holds no run
        page = (self.root / "fleet.html").read_text()
        self.assertLess(page.index("Driver and toolkit"), page.index("Verdicts"))
        self.assertLess(page.index("Verdicts"), page.index("Observed values beyond their noise"))
        summary = (self.root / "fleet.md").read_text()
        self.assertIn("580.200.01", summary)
        self.assertIn("h200: in the previous fleet run, absent from this one", summary)
        self.assertIn("1 host gone (h200)", done.stdout)


    def test_a_group_too_small_borrows_the_fleets_spread(self):
        old = self.fleet("old", **{"h100-%s" % c: "h100x1-host" for c in "abc"})
        set_driver(old / "h100-c" / H100_RUN, "580.200.01")  # a group of one
        for host, gap in (("h100-a", 80), ("h100-b", 120), ("h100-c", 100)):
            set_values(old / host / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": gap})
        new = self.root / "new"
        shutil.copytree(old, new)
        # Fleet-wide: median 100, MAD 20, a band of 148; 5 % of 100 would call 130 real.
        set_values(new / "h100-c" / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": 130})
        changes = fleet_view(load_fleet(new), load_fleet(old))["changes"]
        self.assertEqual(([], 1), (changes["values"], changes["noise"]))
        set_values(new / "h100-c" / H100_RUN, GAP_TEST, **{"blocks.widest_gap_ns": 400})
        changes = fleet_view(load_fleet(new), load_fleet(old))["changes"]
        self.assertEqual([(GAP_TEST, "blocks.widest_gap_ns")], [(v["test"], v["key"]) for v in changes["values"]])


# The synthetic fleet: GPU models and drivers of its groups, and its families (11 x 25 = 275 tests a host).
GROUPS = (("NVIDIA H100 80GB HBM3", "580.159.04"), ("NVIDIA H100 80GB HBM3", "580.95.05"),
          ("NVIDIA H200", "580.159.04"), ("NVIDIA A100-SXM4-80GB", "570.172.08"))
FAMILIES = ("streams", "priorities", "default_streams", "host_funcs", "events", "capture", "mempool",
            "copy_overlap", "priority_sched", "instruments", "harness")
TESTS_PER_FAMILY = 25


def fast_xml(suite, cases):
    """A fast-mode GoogleTest XML: one <testcase> per (name, properties, failure) with its properties."""
    body = []
    for name, props, failure in cases:
        children = "<properties>%s</properties>" % "".join(
            "<property name=%s value=%s/>" % (quoteattr(k), quoteattr(str(v))) for k, v in props.items())
        if failure:
            children += '<failure message="regressed" type=""><![CDATA[/src/t.cpp:9\n%s]]></failure>' % failure
        body.append('<testcase name=%s file="/src/t.cpp" line="9" status="run" result="completed" time="0.010" '
                    'classname=%s>%s</testcase>' % (quoteattr(name), quoteattr(suite), children))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="%d" name="AllTests">\n<testsuite name=%s '
            'tests="%d">\n%s\n</testsuite>\n</testsuites>\n' % (len(cases), quoteattr(suite), len(cases),
                                                                 "\n".join(body)))


def synthetic_host(fleet, index, rng):
    """A host of the synthetic fleet with one passing fast-mode run: its group by index, values with a spread,
    every 17th host with two failures and a value far from its group."""
    gpu, release = GROUPS[index % len(GROUPS)]
    run_id = "20260301T000000Z-%d" % index
    run = fleet / ("node%03d" % index) / run_id
    doc = env_doc(run_id, release=release)
    doc["gpu"]["name"] = gpu
    doc["tracing"] = {"enabled": True}
    write(run / "env.json", json.dumps(doc))
    odd = index % 17 == 5
    for family in FAMILIES:
        suite = "".join(p.capitalize() for p in family.split("_"))
        cases = [("BehaviorNumber%02dHoldsOnEveryHostOfTheFleet" % i,
                  {"blocks": 264, "mode": "cudaSuccess", "duration_us": round(rng.gauss(500, 10), 3),
                   "rate_gbps": round(rng.gauss(50, 1) * (3 if odd and i == 3 else 1), 4),
                   "detail": "had not returned after %d us" % rng.randint(150000, 160000)},
                  "expected 1, saw 0" if odd and i < 2 else None) for i in range(TESTS_PER_FAMILY)]
        write(run / "gtest" / (family + ".fast.xml"), fast_xml(suite, cases))
    return run


def synthetic_fleet(root, hosts=100, seed=46):
    rng = random.Random(seed)
    for index in range(hosts):
        synthetic_host(Path(root), index, rng)
    return Path(root)


def render_ms(page):
    """Milliseconds from navigation to the end of layout of a page in headless Chromium: a copy of it measures
    itself (performance.now() after forcing layout at the load event) into its title."""
    probe = Path(page).with_name("probe.html")
    script = ("<script>addEventListener('load',function(){document.body.offsetHeight;"
              "document.title='rendered:'+performance.now();});</script></body>")
    probe.write_text(Path(page).read_text().replace("</body>", script), encoding="utf-8")
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"<title>rendered:([\d.]+)</title>", done.stdout)
    assert found, "the page did not measure itself: %s" % done.stderr[-500:]
    return float(found.group(1))


class Scale(unittest.TestCase):
    """100 hosts x 275 tests: the page stays one file of at most 2 MB, renders in at most 2 s where Chromium is
    installed, and the verdict names the hosts behind it."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-fleet-scale-")
        cls.root = Path(cls._tmp.name)
        cls.fleet = synthetic_fleet(cls.root / "fleet")
        cls.page = cls.root / "fleet.html"
        started = time.monotonic()
        cls.done = fleet_cli(cls.fleet, "-o", cls.page, "--junit", cls.root / "fleet.xml",
                             "--markdown", cls.root / "fleet.md")
        cls.seconds = time.monotonic() - started

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_verdict_and_hosts_behind_it(self):
        self.assertEqual(1, self.done.returncode, self.done.stdout[-2000:] + self.done.stderr)
        bad = ["node%03d" % i for i in range(100) if i % 17 == 5]
        self.assertIn("behind it: %s" % ", ".join(bad), self.done.stdout)
        self.assertLess(self.seconds, 120, "the fleet verdict of 100 hosts took %.1f s" % self.seconds)
        suites = re.findall(r'<testsuite name="(node\d+)" tests="(\d+)"', (self.root / "fleet.xml").read_text())
        self.assertEqual(100, len(suites))
        self.assertTrue(all(n == "276" for _, n in suites))  # 275 tests and HostIsTrustworthy

    def test_page_is_at_most_2_mb_and_names_the_hosts_apart(self):
        size = self.page.stat().st_size
        self.assertLessEqual(size, 2 * 1024 * 1024, "the page of 100 hosts is %d bytes" % size)
        page = self.page.read_text()
        self.assertIn("node005: 1", page)  # rate_gbps three times its group's: apart
        self.assertLessEqual(len((self.root / "fleet.md").read_text()), 64 * 1024)

    @unittest.skipIf(BROWSER is None, "chromium is not installed (Debian: apt-get install chromium): the page's "
                                      "rendering time is not measured")
    def test_page_renders_in_at_most_2_s(self):
        ms = render_ms(self.page)
        self.assertLessEqual(ms, 2000, "the page of 100 hosts took %.0f ms to render" % ms)


# ------------------------------------------------------------------------------------------------
# The engines: ci/fleet_node.sh under the Slurm scripts, with stand-ins for srun, sbatch, hostname and the gate
# ------------------------------------------------------------------------------------------------
FAKE_SRUN = """#!/usr/bin/env bash
# srun: one task per node of FAKE_NODES at once, as the node it names (hostname reads FAKE_HOST); exits with the
# highest of the tasks' statuses, as srun does.
echo "srun $*" >>"$FAKE_LOG"
while [ "${1#--}" != "$1" ]; do shift; done
pids=()
for node in $FAKE_NODES; do
  CUDA_VISIBLE_DEVICES=0,1 FAKE_HOST=$node "$@" >"$FAKE_LOG.$node" 2>&1 &
  pids+=($!)
done
worst=0
for pid in "${pids[@]}"; do
  wait "$pid"; rc=$?
  [ "$rc" -gt "$worst" ] && worst=$rc
done
exit "$worst"
"""
FAKE_SBATCH = """#!/usr/bin/env bash
# sbatch --parsable: records its arguments, prints a job ID and a cluster, runs nothing.
n=$(( $(wc -l <"$FAKE_LOG" 2>/dev/null || echo 0) + 1001 ))
echo "sbatch $*" >>"$FAKE_LOG"
echo "$n;cluster"
"""
FAKE_HOSTNAME = '#!/bin/sh\necho "$FAKE_HOST"\n'
FAKE_GATE = """#!/usr/bin/env bash
# ci/gate.sh: a run folder in BUILD_DIR/results/runs/ copied from FAKE_TEMPLATES/rc<N> (N: FAKE_RC_<host>, 0 by
# default), its last line naming it as the gate's does, and exit N; with no such template, no run folder at all.
build=$1
rc_var=FAKE_RC_$FAKE_HOST
rc=${!rc_var:-0}
echo "gate stand-in on $FAKE_HOST CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
if [ ! -d "$FAKE_TEMPLATES/rc$rc" ]; then
  echo "gate: NOT TRUSTWORTHY: this gate produced no run folder (ctest status 1); see above"
  exit "$rc"
fi
run=$build/results/runs/20260301T000000Z-$FAKE_HOST
mkdir -p "$(dirname "$run")" && cp -r "$FAKE_TEMPLATES/rc$rc" "$run"
echo "gate: results in $run (exit $rc)"
exit "$rc"
"""


def small_run(run, failing=False):
    """A run the gate judges 0 (or 1, failing): one GPU family of three tests, tracing on."""
    doc = env_doc(run.name)
    doc["tracing"] = {"enabled": True}
    write(run / "env.json", json.dumps(doc))
    cases = [("Behavior%d" % i, {"value": 10 + i}, "expected 1, saw 0" if failing and i == 0 else None)
             for i in range(3)]
    write(run / "gtest" / "streams.fast.xml", fast_xml("Streams", cases))
    return run


def yaml_or_none():
    try:
        import yaml  # noqa: F401 (PyYAML, where installed)
    except ImportError:
        return None
    return yaml


class Slurm(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="streamcheck-fleet-slurm-")
        self.addCleanup(self._tmp.cleanup)
        self.root = Path(self._tmp.name)
        self.bin = self.root / "bin"
        for name, text in (("srun", FAKE_SRUN), ("sbatch", FAKE_SBATCH), ("hostname", FAKE_HOSTNAME)):
            write(self.bin / name, text)
            (self.bin / name).chmod(0o755)
        # A source tree of the scripts under test, the report beside them, and a stand-in for its ci/gate.sh.
        self.src = self.root / "src"
        shutil.copytree(ROOT / "ci" / "slurm", self.src / "ci" / "slurm")
        shutil.copy(ROOT / "ci" / "fleet_node.sh", self.src / "ci" / "fleet_node.sh")
        write(self.src / "ci" / "gate.sh", FAKE_GATE)
        (self.src / "reports").symlink_to(ROOT / "reports")
        (self.root / "node-local").mkdir()
        small_run(self.root / "templates" / "rc0")
        small_run(self.root / "templates" / "rc1", failing=True)
        self.log = self.root / "log"
        self.fleet = self.root / "shared" / "fleet-1"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CUDA_", "GITHUB_"))}
        self.env.update(PATH="%s:%s" % (self.bin, os.environ.get("PATH", "")), FAKE_LOG=str(self.log),
                        FAKE_TEMPLATES=str(self.root / "templates"), FAKE_NODES="n1 n2 n3",
                        SLURM_SUBMIT_DIR=str(self.src),
                        TMPDIR=str(self.root / "node-local"))
        bash4 = subprocess.run(["bash", "-c", "mapfile -t x < /dev/null"], capture_output=True, timeout=30)
        if bash4.returncode != 0:
            self.skipTest("bash 4 (mapfile) is missing")

    def bash(self, script, *args, **extra):
        return subprocess.run(["bash", str(self.src / "ci" / "slurm" / script)] + [str(a) for a in args],
                              capture_output=True, text=True, timeout=120, env=dict(self.env, **extra))

    def test_submit_makes_the_verdict_depend_on_the_gate_job(self):
        done = self.bash("submit.sh", 3, self.fleet, self.root, "--", "--gres=gpu:8", "--partition=gpu")
        self.assertEqual(0, done.returncode, done.stderr)
        gate_call, verdict_call = self.log.read_text().splitlines()
        for part in ("--nodes=3", "--gres=gpu:8", "--partition=gpu", "--chdir=%s" % self.src,
                     "ci/slurm/fleet-gate.sbatch %s" % self.fleet):
            self.assertIn(part, gate_call)
        self.assertIn("--dependency=afterany:1001 ", verdict_call)
        self.assertIn("--partition=gpu", verdict_call)
        self.assertNotIn("--gres", verdict_call)  # the verdict needs no GPU
        self.assertIn("ci/slurm/fleet-verdict.sbatch %s %s" % (self.fleet, self.root), verdict_call)
        self.assertIn("gate job 1001 on 3 node(s), verdict job 1002", done.stdout)
        self.assertNotEqual(0, self.bash("submit.sh", 3, self.fleet).returncode)  # no --gres

    def test_each_node_gates_into_its_folder_and_the_verdict_is_the_worst(self):
        done = self.bash("fleet-gate.sbatch", self.fleet, FAKE_RC_n2="1")
        self.assertEqual(1, done.returncode, done.stdout + done.stderr)
        self.assertIn("srun --ntasks-per-node=1", self.log.read_text())
        for node, rc in (("n1", "0"), ("n2", "1"), ("n3", "0")):
            self.assertEqual(rc, (self.fleet / node / "gate.exit").read_text().strip())
            self.assertTrue((self.fleet / node / ("20260301T000000Z-" + node) / "env.json").is_file())
            node_log = Path("%s.%s" % (self.log, node)).read_text()
            self.assertIn("CUDA_VISIBLE_DEVICES=unset", node_log)  # Slurm's, unset: a run per GPU
            self.assertIn("fleet_node: 1 run folder(s) of this gate copied to %s/%s" % (self.fleet, node), node_log)
        self.assertTrue((self.root / "node-local" / "streamcheck-build-n1" / "results").is_dir())
        verdict = self.bash("fleet-verdict.sbatch", self.fleet)
        self.assertEqual(1, verdict.returncode, verdict.stdout + verdict.stderr)
        self.assertIn("behind it: n2", verdict.stdout)
        junit = (self.fleet / "fleet-junit.xml").read_text()
        self.assertEqual(["n1", "n2", "n3"], re.findall(r'<testsuite name="(n\d)"', junit))
        self.assertTrue((self.fleet / "fleet.html").is_file() and (self.fleet / "fleet-summary.md").is_file())

    def test_a_node_without_a_run_makes_the_fleet_untrustworthy(self):
        done = self.bash("fleet-gate.sbatch", self.fleet, FAKE_RC_n3="2")
        self.assertEqual(2, done.returncode, done.stdout + done.stderr)
        self.assertEqual("2", (self.fleet / "n3" / "gate.exit").read_text().strip())
        previous = self.root / "shared" / "fleet-0"
        shutil.copytree(self.fleet, previous)
        verdict = self.bash("fleet-verdict.sbatch", self.fleet, previous)
        self.assertEqual(2, verdict.returncode, verdict.stdout + verdict.stderr)
        self.assertIn("fleet: n3: exit 2: no run folder under", verdict.stdout)
        self.assertIn("since %s" % previous, verdict.stdout)


class Templates(unittest.TestCase):
    """The GitHub Actions, GitLab and Kubernetes templates: they parse (with PyYAML where installed), they run the
    scripts this tree has, and their parts fit together (matrix, artifacts, dependent job, GPUs per pod)."""

    def text(self, name):
        return (ROOT / "ci" / name).read_text()

    def load(self, name):
        yaml = yaml_or_none()
        if yaml is None:
            self.skipTest("PyYAML is not installed: the templates' structure is checked by their text only")
        return yaml.safe_load(self.text(name))

    def test_the_scripts_they_run_exist(self):
        for name in ("fleet-github-actions.yml", "fleet-gitlab-ci.yml", "k8s/fleet-gate-job.yaml",
                     "k8s/fleet-verdict-job.yaml"):
            text = self.text(name)
            self.assertNotIn("\t", text, name)
            for script in re.findall(r"\b((?:ci|reports)/[\w./-]+\.(?:sh|py))\b", text):
                self.assertTrue((ROOT / script).is_file(), "%s runs %s, which is missing" % (name, script))

    def test_the_matrix_and_the_expected_hosts_agree(self):
        for name, pattern in (("fleet-github-actions.yml", r"runner: \[(.*)\]"),
                              ("fleet-gitlab-ci.yml", r"RUNNER: \[(.*)\]")):
            text = self.text(name)
            runners = [r.strip() for r in re.search(pattern, text).group(1).split(",")]
            self.assertIn("--hosts %s " % ",".join(runners), text, name)

    def test_github_actions(self):
        doc = self.load("fleet-github-actions.yml")
        gate, fleet = doc["jobs"]["gate"], doc["jobs"]["fleet"]
        self.assertFalse(gate["strategy"]["fail-fast"])
        self.assertIn("${{ matrix.runner }}", gate["runs-on"])
        steps = " ".join(str(s) for s in gate["steps"])
        self.assertIn('ci/fleet_node.sh build "fleet/${{ matrix.runner }}"', steps)
        upload = gate["steps"][-1]
        self.assertEqual(("actions/upload-artifact@v4", "fleet/", "always()"),
                         (upload["uses"], upload["with"]["path"], upload["if"]))
        self.assertEqual(("gate", "always()"), (fleet["needs"], fleet["if"]))
        download = fleet["steps"][1]["with"]
        self.assertEqual(("streamcheck-fleet-*", True, "fleet"),
                         (download["pattern"], download["merge-multiple"], download["path"]))
        self.assertIn("reports/streamcheck_fleet.py fleet", fleet["steps"][2]["run"])

    def test_gitlab(self):
        doc = self.load("fleet-gitlab-ci.yml")
        gate, fleet = doc["streamcheck-fleet-gate"], doc["streamcheck-fleet"]
        self.assertEqual(["$RUNNER"], gate["tags"])
        self.assertTrue(gate["parallel"]["matrix"][0]["RUNNER"])
        self.assertEqual(["fleet/"], gate["artifacts"]["paths"])
        self.assertEqual([{"job": "streamcheck-fleet-gate", "artifacts": True}], fleet["needs"])
        self.assertEqual([2], fleet["allow_failure"]["exit_codes"])
        self.assertEqual("fleet-report/fleet-junit.xml", fleet["artifacts"]["reports"]["junit"])

    def test_kubernetes(self):
        job = self.load("k8s/fleet-gate-job.yaml")
        self.assertEqual(("batch/v1", "Job", "Indexed"),
                         (job["apiVersion"], job["kind"], job["spec"]["completionMode"]))
        pod = job["spec"]["template"]["spec"]
        container, = pod["containers"]
        self.assertGreater(container["resources"]["limits"]["nvidia.com/gpu"], 0)
        self.assertIn('ci/fleet_node.sh /build "/fleet/runs/$NODE_NAME"', container["args"][0])
        self.assertEqual("spec.nodeName", container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"])
        self.assertEqual("kubernetes.io/hostname", pod["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"])
        claim = {v["name"]: v for v in pod["volumes"]}["fleet"]["persistentVolumeClaim"]["claimName"]
        verdict = self.load("k8s/fleet-verdict-job.yaml")["spec"]["template"]["spec"]
        self.assertEqual(claim, verdict["volumes"][0]["persistentVolumeClaim"]["claimName"])
        self.assertEqual(["python3", "/fleet/src/reports/streamcheck_fleet.py", "/fleet/runs"],
                         verdict["containers"][0]["command"])


class Rules(unittest.TestCase):
    def test_noise_band(self):
        self.assertIsNone(noise_band([1.0, 2.0]))
        self.assertAlmostEqual(5 * 1.4826 * 1.0, noise_band([9.0, 10.0, 11.0, 10.0, 10.0, 12.0, 8.0]), places=6)
        self.assertEqual(5.0, noise_band([100.0, 100.0, 100.0]))  # the floor: 5 % of the median

    def test_value_change(self):
        before = [("a", 100), ("b", 110), ("c", 90)]
        self.assertFalse(value_change(100, 140, before)["real"])
        self.assertTrue(value_change(100, 200, before)["real"])
        self.assertTrue(value_change(100, 106, [("a", 100)])["real"])  # no spread known: compare.py's 5 %
        self.assertIsNone(value_change("1", 1, before))
        self.assertFalse(value_change("x", "y", [("a", "x"), ("b", "z"), ("c", "x")])["real"])
        self.assertTrue(value_change("x", "y", [("a", "x"), ("b", "x"), ("c", "x")])["real"])


if __name__ == "__main__":
    unittest.main()
