#!/usr/bin/env python3
"""The ctest entries of a build, made when ctest reads the build folder (sc_entries.cmake runs this script and
includes what it writes), from the tests each test executable lists and the mode STREAMCHECK_MODE names then:

- isolated (unset): one entry per test, <family>.[<build>.][<variant>.]<Suite>.<Test>, one process per test;
- fast: one entry per executable and environment variant, <executable's name>.[<build>.][<variant>.]fast, one
  process (resuming after a test that ends it: runner/include/sc/runner/resume.hpp) for the tests of every
  family it holds, and an entry of its own for each test a family calls ISOLATED.

A test's family is the folder of its source file (GoogleTest lists it). Which tests a pattern selects is what the
executable lists under --gtest_filter=<pattern>: GoogleTest's own filter language. STREAMCHECK_FAMILIES (a comma
list) keeps the entries of those families only (the mutation job runs one family at a time).

    entries.py CONFIG OUTPUT

CONFIG: the JSON file StreamcheckFamily.cmake writes (executables, families); OUTPUT: the CMake file to write.
A problem (an executable that cannot list its tests, a pattern that selects nothing, a two-GPU test that is not
ISOLATED, an unknown mode) becomes an entry that fails with its text.
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

FAST_TIMEOUT = 900  # seconds for a fast entry; a test's own entry has its family's TIMEOUT
SKIP_RETURN_CODE = 77  # no test of the process failed and none passed (runner/include/sc/runner/process.hpp)


class ListingError(Exception):
    pass


def listed(exe: str, pattern: str) -> List[Tuple[str, str]]:
    """(Suite.Test, family) of each test `exe` lists under the filter `pattern`, kept beside the executable in
    <exe>.listed/ until it is rebuilt."""
    kept = Path(exe + ".listed") / (hashlib.md5(pattern.encode()).hexdigest() + ".json")
    if not Path(exe).exists():
        raise ListingError("%s is not built (cmake --build first)" % exe)
    if not kept.exists() or kept.stat().st_mtime < Path(exe).stat().st_mtime:
        kept.parent.mkdir(exist_ok=True)
        out = kept.with_suffix(".%d.tmp" % os.getpid())  # renamed into place: a ctest run beside reads it whole
        try:
            done = subprocess.run([exe, "--gtest_list_tests", "--gtest_filter=" + pattern, "--gtest_output=json:%s" % out],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ListingError("%s --gtest_list_tests failed: %s" % (exe, e))
        if done.returncode != 0 or not out.exists():
            out.unlink(missing_ok=True)
            raise ListingError("%s --gtest_list_tests failed (%d): %s" % (exe, done.returncode, done.stderr.strip()))
        os.replace(out, kept)
    doc = json.loads(kept.read_text())
    return [("%s.%s" % (suite["name"], test["name"]), Path(test.get("file", "")).parent.name)
            for suite in doc.get("testsuites", []) for test in suite.get("testsuite", [])]


def selected(exe: str, family: str, patterns: List[str]) -> List[str]:
    """The tests of `family` in `exe` that any of `patterns` selects (none for no pattern)."""
    if not patterns:
        return []
    return [name for name, f in listed(exe, ":".join(patterns)) if f == family]


class Entries:
    """The add_test and set_tests_properties calls, written as CMake."""

    def __init__(self, config: Dict):
        self.config = config
        self.lines: List[str] = []

    def failing(self, name: str, text: str, labels: List[str]) -> None:
        self.lines.append("add_test(%s %s %s -P %s)" % (quote(name), quote(self.config["cmake"]),
                                                         quote("-DSC_FAIL=" + text), quote(self.config["fail_script"])))
        self.lines.append("set_tests_properties(%s PROPERTIES LABELS %s)" % (quote(name), quote(";".join(labels))))

    def add(self, name: str, exe: Dict, tests: List[str], variant: Dict, labels: List[str], timeout: int) -> None:
        args = [exe["path"], "--gtest_filter=" + ":".join(tests), "--gtest_output=xml:%s.xml" % name,
                "--streamcheck-results=" + self.config["results"]]
        if variant:
            args.append("--streamcheck-variant=%s,%s" % (variant["name"], variant["sets"].split("=", 1)[0]))
        self.lines.append("add_test(%s %s)" % (quote(name), " ".join(quote(a) for a in args)))
        props = {"LABELS": ";".join(labels), "TIMEOUT": str(timeout), "SKIP_RETURN_CODE": str(SKIP_RETURN_CODE),
                 "FIXTURES_REQUIRED": "streamcheck_run"}
        if exe["kind"] == "gpu":
            props.update(RESOURCE_GROUPS="gpus:1", FAIL_REGULAR_EXPRESSION="STREAMCHECK-WATCHDOG")
        if variant:
            props["ENVIRONMENT"] = variant["sets"]
        self.lines.append("set_tests_properties(%s PROPERTIES %s)" % (
            quote(name), " ".join("%s %s" % (k, quote(v)) for k, v in props.items())))


def quote(text: str) -> str:
    """A CMake bracket argument: nothing inside it is interpreted."""
    return "[==[%s]==]" % text


def build_prefix(exe: Dict, variant: Dict) -> str:
    return "".join(p + "." for p in (exe["build"] if exe["build"] != "legacy" else "", variant.get("name", "")) if p)


def family_groups(exe: Dict, family: str, spec: Dict, names: List[str]) -> List[Tuple[Dict, List[str]]]:
    """(variant, tests) for `family`'s tests in `exe`: the default entries ({}: every test no variant keeps to
    itself) and each environment variant's (its patterns, '+' stripped: "+A" runs A's tests in both)."""
    groups = []
    kept_apart = set()
    for variant in spec["variants"]:
        patterns = variant["filter"].split(":")
        kept_apart.update(selected(exe["path"], family, [p for p in patterns if not p.startswith("+")]))
        tests = selected(exe["path"], family, [p.lstrip("+") for p in patterns])
        if tests:
            groups.append((variant, tests))
    return [({}, [n for n in names if n not in kept_apart])] + groups


def make_entries(config: Dict, mode: str, only: List[str]) -> List[str]:
    out = Entries(config)
    if mode not in ("", "isolated", "fast"):
        out.failing("streamcheck.mode", "STREAMCHECK_MODE must be isolated or fast (or unset), not '%s'" % mode,
                    ["run"])
        return out.lines
    families = {f: s for f, s in config["families"].items() if not only or f in only}
    selects = {(f, v["name"], p): False for f, s in families.items() for v in s["variants"]
               for p in v["filter"].split(":")}
    for exe in config["executables"]:
        try:
            by_family: Dict[str, List[str]] = {}
            for name, family in listed(exe["path"], "*"):
                by_family.setdefault(family, []).append(name)
            shared: Dict[str, Tuple[Dict, List[str], List[str]]] = {}
            for family, names in sorted(by_family.items()):
                if family not in config["families"]:
                    out.failing("%s.%sUnknownFamily" % (exe["name"], build_prefix(exe, {})), "%s: tests in the folder %s, which is no family "
                                "(sc_behavior_family): %s" % (exe["path"], family, " ".join(names)), [exe["kind"]])
                    continue
                if family not in families:
                    continue
                spec = families[family]
                labels = [family, spec["kind"]]
                own = selected(exe["path"], family, spec["isolated"])
                two = selected(exe["path"], family, spec["two_gpus"])
                if set(two) - set(own):
                    out.failing("%s.TwoGpuTestsAreIsolated" % family, "%s need two GPUs but are not ISOLATED"
                                % " ".join(sorted(set(two) - set(own))), labels)
                    continue
                for variant in spec["variants"]:
                    for p in variant["filter"].split(":"):
                        if selected(exe["path"], family, [p.lstrip("+")]):
                            selects[(family, variant["name"], p)] = True
                for variant, tests in family_groups(exe, family, spec, names):
                    prefix = build_prefix(exe, variant)
                    alone = [t for t in tests if mode != "fast" or t in own]
                    for test in alone:
                        out.add("%s.%s%s" % (family, prefix, test), exe, [test], variant,
                                labels + (["two_gpus"] if test in two else []), spec["timeout"])
                    key = variant.get("name", "")
                    group = shared.setdefault(key, (variant, [], []))
                    group[1].extend(t for t in tests if t not in alone)
                    if any(t not in alone for t in tests):
                        group[2].append(family)
            for key, (variant, tests, fams) in sorted(shared.items()):
                if tests:
                    out.add("%s.%sfast" % (exe["name"], build_prefix(exe, variant)), exe, tests, variant,
                            fams + [exe["kind"]], FAST_TIMEOUT)
        except ListingError as e:
            out.failing("%s.%slist" % (exe["name"], build_prefix(exe, {})), str(e), [exe["kind"]])
    for (family, variant, pattern), found in sorted(selects.items()):
        if not found:
            out.failing("%s.%s.PatternSelectsNoTest" % (family, variant), "the environment variant %s of %s: "
                        "'%s' selects no test" % (variant, family, pattern.lstrip("+")), [family])
    return out.lines


def main() -> int:
    config = json.loads(Path(sys.argv[1]).read_text())
    only = [f for f in os.environ.get("STREAMCHECK_FAMILIES", "").split(",") if f]
    lines = make_entries(config, os.environ.get("STREAMCHECK_MODE", ""), only)
    Path(sys.argv[2]).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
