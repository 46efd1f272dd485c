"""The report's templates (reports/templates/): the page skeletons (report.html, diff.html), the style sheet and
script they inline (report.css, report.js), and the named fragments of fragments.html, filled with
string.Template. Every value put into a template is markup its caller has already escaped.
Python 3.9+ standard library only."""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Any, Dict

from .common import InputError

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
FRAGMENT_MARK = re.compile(r"^<!-- fragment (\w+) -->\n", re.M)


def template_text(name: str) -> str:
    """A template file's text; an InputError (one line) when the installation lacks it."""
    path = TEMPLATE_DIR / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("%s: cannot read the report template: %s" % (path, getattr(e, "strerror", None) or e))


@functools.lru_cache(maxsize=None)
def fragments() -> Dict[str, string.Template]:
    """The named pieces of templates/fragments.html."""
    text = template_text("fragments.html")
    marks = list(FRAGMENT_MARK.finditer(text))
    found = {}
    for mark, following in zip(marks, marks[1:] + [None]):
        piece = text[mark.end():following.start() if following else len(text)]
        found[mark.group(1)] = string.Template(piece.rstrip("\n"))
    return found


def fill(_fragment: str, /, **values: Any) -> str:
    """The fragment with its placeholders filled; the values are markup the caller has escaped."""
    try:
        template = fragments()[_fragment]
    except KeyError:
        raise InputError("%s: no fragment %r" % (TEMPLATE_DIR / "fragments.html", _fragment))
    return template.substitute({k: "" if v is None else str(v) for k, v in values.items()})


def fill_page(name: str, **values: Any) -> str:
    return string.Template(template_text(name)).substitute({k: str(v) for k, v in values.items()})
