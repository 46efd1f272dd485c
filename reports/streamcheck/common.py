"""Words, numbers and text shared by every part of the report generator: the vocabulary of outcomes and
statuses, small accessors for JSON documents, and formatting of values, versions, durations and sizes.
Python 3.9+ standard library only."""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any, List, Optional, Sequence, Tuple

GENERATOR = "streamcheck_report"
GENERATOR_VERSION = "2.0.0"

# Test outcomes (results.outcome()), in the order a family table lists them (failed first). "shared_gpu": the
# test ran beside another context on the GPU, so nothing it showed is judged; "planned": a test a plan names
# that the run never listed (the report's placeholder), which no count of the run's tests includes.
SHARED_GPU_LABEL = "not judged (shared GPU)"
TEST_ORDER = {"failed": 0, "notrun": 1, "shared_gpu": 2, "skipped": 3, "passed": 4, "planned": 5}
TEST_LABEL = {"failed": "FAIL", "notrun": "not run", "shared_gpu": SHARED_GPU_LABEL, "skipped": "skipped",
              "passed": "pass", "planned": "planned, not in this run"}
# The outcomes every count of a run's tests has (the report's totals, the gate's counts, JUnit), in order, with
# the words a count uses. "not run" is a test an entry was asked to run that has no result.
COUNT_LABEL = {"passed": "passed", "failed": "failed", "skipped": "skipped", "shared_gpu": SHARED_GPU_LABEL,
               "notrun": "not run"}

# Coverage statuses of a catalog ID.
COVERAGE_LABEL = {
    "fail": "FAIL",
    "differs": "observed-differs",
    "no-result": "no-result",
    "uncovered": "uncovered",
    "skipped": "skipped",
    "recorded": "recorded value",
    "pass": "pass",
    "retired": "retired",
}
COVERAGE_ORDER = ["fail", "differs", "no-result", "uncovered", "skipped", "recorded", "pass", "retired"]

BASELINE_LABEL = {"match": "match", "differs": "differs", "differs-gating": "differs (gating)",
                  "no-baseline": "no baseline", "no-entry": "no entry", "no-baseline-dir": "no baselines folder",
                  "not-compared": "not compared (under a tool)", "not-measured": "not measured here",
                  "recorded": "recorded (never judged)", "invalid": "invalid (not judged)"}

MUTATION_KIND_TITLE = {
    "arrangement": "the mutation changed what the test sets up, so the observation itself must tell the difference",
    "expectation": "the mutation changed only the expected value: it proves the assertion can fire, not that the "
                   "observation can tell; the family plan says why no arrangement change exists",
}

# Evidence lists shown per test at most; the rest is counted.
MAX_EVIDENCE_LINES = 20

DASHES = {"", "\u2014", "\u2013", "-", "--", "n/a", "none", "tbd"}


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


class Markup(str):
    """Text that is already HTML. The templates (templates.py) escape every value they are given except these,
    so text from a result file cannot become markup by being forgotten: only the escaping helpers below and
    the templates themselves make Markup, and a caller that builds markup some other way must say so."""

    __slots__ = ()

    def __add__(self, other: str) -> str:
        """Markup and markup make markup; markup and plain text make plain text, which a template escapes."""
        joined = str.__add__(self, other)
        return Markup(joined) if isinstance(other, Markup) else joined


# ------------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------------

def dig(doc: Any, *keys: str) -> Any:
    """doc[k1][k2]... or None where any level is missing or not an object."""
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def fmt_value(value: Any) -> str:
    """Compact text for any JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def fmt_shown(value: Any) -> str:
    """A value as the pages show it: a finite float to six significant digits (one decimal from 100,000 on),
    where a float's every digit (0.4700000000000273) says nothing; anything else as fmt_value. The result
    files keep every digit."""
    if isinstance(value, float) and math.isfinite(value):
        return "%.1f" % value if abs(value) >= 1e5 else "%.6g" % value
    return fmt_value(value)


def h(value: Any) -> Markup:
    """HTML-escaped text of any value (strings as they are, other values as compact JSON); markup stays as it is,
    so escaping twice is harmless."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(value if isinstance(value, str) else fmt_value(value), quote=True))


def inline_md(text: str) -> Markup:
    """Escape a plan cell, then show `code` spans as <code>; nothing else of markdown is interpreted."""
    out = []
    position = 0
    for match in re.finditer(r"`([^`]+)`", text):
        out.append(html.escape(text[position:match.start()], quote=True))
        out.append("<code>%s</code>" % breakable(match.group(1)))
        position = match.end()
    out.append(html.escape(text[position:], quote=True))
    return Markup("".join(out))


def cuda_version(value: Any) -> str:
    """CUDA's integer versions: 13000 -> 13.0, 12080 -> 12.8; 0 means no driver."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "unknown" if value is None else fmt_value(value)
    if value <= 0:
        return "none (%d)" % value
    major, rest = divmod(value, 1000)
    minor, patch = divmod(rest, 10)
    return "%d.%d.%d" % (major, minor, patch) if patch else "%d.%d" % (major, minor)


def driver_text(release: Any, cuda_driver: Any) -> str:
    """"580.159.04 (CUDA 13.0)": the driver's release (env.json driver.version) and the CUDA version it
    supports (cuda.driver_version); runs from before the release was recorded give "release unknown"."""
    known = isinstance(release, str) and bool(release)
    if not known and isinstance(cuda_driver, int) and not isinstance(cuda_driver, bool) and cuda_driver <= 0:
        return "none"  # no driver answered either question
    return "%s (CUDA %s)" % (release if known else "release unknown", cuda_version(cuda_driver))


def fmt_duration(ms: Any) -> str:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return "\u2014"
    if ms < 1:
        return "%.3f ms" % ms
    if ms < 1000:
        return "%.1f ms" % ms
    return "%.2f s" % (ms / 1000.0)


def breakable(text: str) -> Markup:
    """Escaped text with optional line breaks (<wbr>) after dots, slashes and underscores and inside CamelCase,
    so long test and API names wrap at word joints in narrow columns."""
    pieces = re.split(r"(?<=[./_,])|(?<=[a-z0-9])(?=[A-Z])", text)
    return Markup("<wbr>".join(html.escape(p, quote=True) for p in pieces))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    return "%d %s" % (n, word if n == 1 else (many or word + "s"))


def bounded(lines: Sequence[str], limit: int = MAX_EVIDENCE_LINES) -> List[str]:
    """The first `limit` lines, and a last one counting the rest, if any."""
    return list(lines[:limit]) + (["%d more" % (len(lines) - limit)] if len(lines) > limit else [])


def shortened(text: str, chars: int) -> str:
    """The text in one line of at most `chars` characters (its whitespace runs as one space)."""
    line = " ".join(str(text).split())
    return line if len(line) <= chars else line[:chars - 1] + "\u2026"


def flatten(doc: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """Nested objects as dotted keys; arrays and scalars stay values."""
    if not isinstance(doc, dict):
        return [(prefix, doc)] if prefix else []
    rows: List[Tuple[str, Any]] = []
    for key in sorted(doc):
        name = "%s.%s" % (prefix, key) if prefix else str(key)
        value = doc[key]
        if isinstance(value, dict) and value:
            rows.extend(flatten(value, name))
        else:
            rows.append((name, value))
    return rows


def as_ns(value: Any) -> Optional[int]:
    """A timestamp or duration in ns as an int; None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return int(round(value))
    return value


def fmt_ns(ns: float, signed: bool = False, exact: bool = False) -> str:
    """A duration (or an offset, with signed=True) in the unit that suits it: 850 ns, 12.3 µs, 228.074 ms;
    exact=True keeps every nanosecond (+228.074315 ms)."""
    sign = ("+" if ns >= 0 else "\u2212") if signed else ("\u2212" if ns < 0 else "")
    value = abs(ns)
    for limit, divisor, unit in ((1e3, 1.0, "ns"), (1e6, 1e3, "\u00b5s"), (1e9, 1e6, "ms")):
        if value < limit:
            break
    else:
        divisor, unit = 1e9, "s"
    scaled = value / divisor
    if unit == "ns":
        return "%s%d ns" % (sign, round(scaled))
    if exact:
        digits = {"\u00b5s": 3, "ms": 6, "s": 9}[unit]
    else:
        digits = 3 if signed or scaled < 10 else 2 if scaled < 100 else 1
    return "%s%.*f %s" % (sign, digits, scaled, unit)


def fmt_bytes(n: Any) -> str:
    """8388608 -> "8,388,608 B (8 MiB)"."""
    if isinstance(n, bool) or not isinstance(n, int):
        return fmt_value(n)
    for size, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= size:
            return "%s B (%.4g %s)" % (format(n, ","), n / size, unit)
    return "%s B" % format(n, ",")


def fmt_pct(part: float, whole: float) -> str:
    """part / whole as a percentage with at most one decimal, "50 %", "33.3 %"; never rounded to 0 or 100
    when it is not."""
    value = 100.0 * part / whole
    if 0 < value < 0.05:
        return "<0.1 %"
    if 99.95 <= value < 100:
        return ">99.9 %"
    text = "%.1f" % value
    return "%s %%" % (text[:-2] if text.endswith(".0") else text)


def fmt_rate(n_bytes: int, ns: int) -> str:
    """Bytes over nanoseconds in GB/s (10^9 bytes per second, which is bytes per ns)."""
    rate = n_bytes / float(ns)
    if rate >= 100:
        return "%.0f GB/s" % rate
    if rate >= 10:
        return "%.1f GB/s" % rate
    return "%.3g GB/s" % rate
