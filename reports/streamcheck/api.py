"""The API coverage table: every function of the CUDA headers' stream and event sections (driver and runtime)
and the host-function launches, each with the tests of this source tree that call it and the catalog IDs those
tests claim; a function no test calls is listed as such. Made from the code alone: the sections are read from
the toolkit's headers (their Doxygen groups), the calls from the tests' source. Python 3.9+ standard library only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# (header, Doxygen group, the section's name in the CUDA documentation, only functions whose name matches).
SECTIONS = (
    ("cuda.h", "CUDA_STREAM", "Driver API: Stream Management", None),
    ("cuda.h", "CUDA_EVENT", "Driver API: Event Management", None),
    ("cuda.h", "CUDA_EXEC", "Driver API: Execution Control", r"cuLaunchHostFunc\w*"),
    ("cuda_runtime_api.h", "CUDART_STREAM", "Runtime API: Stream Management", None),
    ("cuda_runtime_api.h", "CUDART_EVENT", "Runtime API: Event Management", None),
    ("cuda_runtime_api.h", "CUDART_EXECUTION", "Runtime API: Execution Control", r"cudaLaunchHostFunc\w*"),
)
DECLARATION = re.compile(r"^(?:extern\s+)?(?:__host__\s+)?(?:__cudart_builtin__\s+)?(?:CUresult|cudaError_t)\s+"
                         r"(?:CUDAAPI|CUDARTAPI)\s+(\w+)\s*\(", re.M)
CALL = re.compile(r"\b(cu(?:da)?[A-Z]\w*)\s*\(")
NAMED = re.compile(r"\"(cu(?:da)?[A-Z]\w*)\"")
STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"")
# A function defined at the start of a line (the test files do not indent namespaces), its parameters on one
# line or several, a fixture's method (Fixture::name) included: a helper of the family.
DEFINITION = re.compile(r"^(?!TEST)[A-Za-z_\[][^;{}()]*?\b(\w+)\s*\([^;{}]*?\)\s*(?:const\s*)?(?:noexcept\s*)?"
                        r"(?:override\s*)?(?::[^;{}]*)?\{", re.M)
TEST = re.compile(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)")
CLAIM = re.compile(r"\bclaim\s+\w+\(\s*\"([A-Z][A-Z0-9]*-\d+)\"")
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def cuda_include_dir() -> Optional[Path]:
    """The toolkit's include folder: $CUDA_PATH or $CUDA_HOME, else /usr/local/cuda; None without cuda.h there."""
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda.h").is_file():
            return Path(root) / "include"
    return None


def section_functions(header_text: str, group: str, only: Optional[str] = None) -> List[str]:
    """The functions a header declares inside the Doxygen group `group` (from its \\defgroup to its closing @})."""
    start = header_text.find("\\defgroup %s " % group)
    if start < 0:
        return []
    end = header_text.find("/** @} */", start)
    body = header_text[start:end if end > 0 else len(header_text)]
    names = sorted(set(DECLARATION.findall(body)))
    return [n for n in names if only is None or re.fullmatch(only, n)]


def documented(include: Path) -> List[Tuple[str, str]]:
    """(function, section) for every section of SECTIONS, in order."""
    out: List[Tuple[str, str]] = []
    texts: Dict[str, str] = {}
    for header, group, title, only in SECTIONS:
        if header not in texts:
            texts[header] = (include / header).read_text(encoding="utf-8", errors="replace")
        out.extend((name, title) for name in section_functions(texts[header], group, only))
    return out


def calls_in(text: str) -> List[Tuple[int, str]]:
    """(offset, function) of every call of a CUDA function, and every function that a string names whole (an entry
    point resolved by name); comments left out, and a name inside a longer string (a message) is no call."""
    clean = COMMENT.sub(lambda m: " " * len(m.group(0)), text)
    named = [(m.start(), m.group(1)) for m in NAMED.finditer(clean)]
    code = STRING.sub(lambda m: " " * len(m.group(0)), clean)
    return sorted(named + [(m.start(), m.group(1)) for m in CALL.finditer(code)])


def body_end(code: str, start: int) -> int:
    """Where the body that follows `start` (its first "{") ends: after its matching "}" (comments and strings
    already blanked in `code`), or the end of the text."""
    depth = 0
    at = code.find("{", start)
    while 0 <= at < len(code):
        if code[at] == "{":
            depth += 1
        elif code[at] == "}":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return len(code)


def exercised(source: Path) -> Dict[str, Dict[str, Any]]:
    """function -> {"tests": {Suite.Test: [IDs]}, "helpers": [family], "fixtures": bool} from the tests' and the
    fixtures' source: a call inside a test's body counts for that test (with the IDs it claims); a call in a
    helper of the family (a function or fixture method defined in its files) counts for every test of the family
    that calls the helper, directly or through other helpers, and for the family's helpers where no test does; a
    call in fixtures/ counts for every test."""
    found: Dict[str, Dict[str, Any]] = {}

    def entry(name: str) -> Dict[str, Any]:
        return found.setdefault(name, {"tests": {}, "helpers": [], "fixtures": False})

    families: Dict[str, List[Path]] = {}
    for path in sorted((source / "tests").glob("*/*")):
        if path.suffix in (".cpp", ".cu", ".hpp", ".cuh") and path.parent.name != "unit":
            families.setdefault(path.parent.name, []).append(path)
    for family, paths in families.items():
        # Every test and helper of the family: (file index, start, end of its body, kind, name), with each
        # file's text and its code (comments and strings blanked).
        texts = [path.read_text(encoding="utf-8", errors="replace") for path in paths]
        codes = [STRING.sub(lambda m: " " * len(m.group(0)), COMMENT.sub(lambda m: " " * len(m.group(0)), text))
                 for text in texts]
        parts: List[Tuple[int, int, int, str, str]] = []
        for f, (text, code) in enumerate(zip(texts, codes)):
            marks = sorted([(m.start(), "test", "%s.%s" % (m.group(1), m.group(2))) for m in TEST.finditer(text)] +
                           [(m.start(), "helper", m.group(1)) for m in DEFINITION.finditer(code)])
            parts += [(f, start, body_end(code, start), kind, name) for start, kind, name in marks]
        helpers = {p[4] for p in parts if p[3] == "helper"}
        # A helper that takes arguments is not what a call without any calls (a parameter or a local of the same
        # name: `wait()` in a template that was handed a `wait`).
        takes_args = {p[4] for p in parts if p[3] == "helper" and
                      not re.match(r"[^(]*\b%s\s*\(\s*(?:void\s*)?\)" % re.escape(p[4]), codes[p[0]][p[1]:p[2]])}

        def called(part: Tuple[int, int, int, str, str]) -> set:
            # The helpers a part's body calls (from its "{", so a definition's own name is not among them).
            body = codes[part[0]][part[1]:part[2]]
            body = body[body.find("{"):] if "{" in body else body
            return {h for h in helpers
                    if re.search(r"\b%s\s*\(%s" % (re.escape(h), r"\s*[^\s)]" if h in takes_args else ""), body)}

        # The tests that reach each helper, directly or through other helpers (a recursive helper reaches no more).
        reach: Dict[str, set] = {h: set() for h in helpers}
        calls_of: Dict[str, set] = {h: set() for h in helpers}
        for i, part in enumerate(parts):
            for h in called(part):
                if part[3] == "test":
                    reach[h].add(i)
                elif h != part[4]:
                    calls_of[part[4]].add(h)
        changed = True
        while changed:
            changed = False
            for h, inner in calls_of.items():
                for k in inner:
                    if not reach[h] <= reach[k]:
                        reach[k] |= reach[h]
                        changed = True
        for f, text in enumerate(texts):
            for at, name in calls_in(text):
                part = next((p for p in parts if p[0] == f and p[1] <= at < p[2]), None)
                if part is None:
                    owners = []
                elif part[3] == "test":
                    owners = [part]
                else:
                    owners = [parts[i] for i in sorted(reach[part[4]])]
                if not owners:
                    if family not in entry(name)["helpers"]:
                        entry(name)["helpers"].append(family)
                    continue
                for test in owners:
                    entry(name)["tests"][test[4]] = sorted(set(CLAIM.findall(texts[test[0]][test[1]:test[2]])))
    for path in sorted((source / "fixtures").rglob("*")):
        if path.suffix in (".cpp", ".cu", ".hpp", ".cuh") and path.is_file():
            for _, name in calls_in(path.read_text(encoding="utf-8", errors="replace")):
                entry(name)["fixtures"] = True
    return found


def coverage(source: Path, include: Optional[Path]) -> Dict[str, Any]:
    """{"rows": [{function, section, tests, ids, helpers, fixtures}], "include": str or None, "not_called": n}.
    Without headers only the functions the code calls are listed (section "")."""
    calls = exercised(source)
    listed = documented(include) if include is not None else []
    rows = []
    seen = set()
    for name, section in listed + [(n, "") for n in sorted(calls) if include is None]:
        if name in seen:
            continue
        seen.add(name)
        c = calls.get(name, {"tests": {}, "helpers": [], "fixtures": False})
        rows.append({"function": name, "section": section, "tests": sorted(c["tests"]),
                     "ids": sorted({i for ids in c["tests"].values() for i in ids}),
                     "helpers": c["helpers"], "fixtures": c["fixtures"]})
    return {"rows": rows, "include": str(include) if include is not None else None,
            "not_called": sum(1 for r in rows if not (r["tests"] or r["helpers"] or r["fixtures"]))}


def markdown(table: Dict[str, Any]) -> str:
    """The table as docs/api.md has it."""
    out = ["# API coverage", "",
           "Generated by `reports/streamcheck_api.py` from the CUDA headers' stream and event sections and the",
           "tests' source; do not edit by hand. A function is exercised by the tests that call it, themselves or",
           "through their family's helpers (with the catalog IDs they claim), by a family's helpers that no test",
           "reaches, or by the fixtures that every test goes through.", "",
           "%d functions, %d called by no test, helper or fixture." % (len(table["rows"]), table["not_called"]), ""]
    section = None
    for row in table["rows"]:
        if row["section"] != section:
            if section is not None:
                out.append("")
            section = row["section"]
            out.extend(["## %s" % (section or "Functions the code calls"), "",
                        "| Function | Tests | IDs | Also |", "|---|---|---|---|"])
        also = ", ".join(["%s helpers" % h for h in row["helpers"]] + (["fixtures"] if row["fixtures"] else []))
        tests = ", ".join("`%s`" % t for t in row["tests"])
        out.append("| `%s` | %s | %s | %s |" % (row["function"], tests or ("\u2014" if also else "**not exercised**"),
                                               ", ".join(row["ids"]) or "\u2014", also or "\u2014"))
    return "\n".join(out).rstrip("\n") + "\n"
