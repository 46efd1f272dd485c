"""The report's templates (reports/templates/): the page skeleton (page.html, for the report and the comparison), the style sheet and
script they inline (report.css, report.js), and the named fragments of the fragment files (FRAGMENT_FILES),
filled with string.Template.

Every value put into a template is HTML-escaped here, unless it is Markup (common.Markup: the result of a fill,
of join, of attrs, or of an escaping helper of common.py). Escaping by default means a caller cannot let a name
or a message from a result file become markup by forgetting to escape it; the price is that a caller nesting
markup must say so. A fragment filled without one of its placeholders, or with a value it has no placeholder
for, or a fragment that does not exist, is an error that names the file and the fragment, never an empty
string. Python 3.9+ standard library only (runner owners need nothing but python3).
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple

from .common import InputError, Markup, h

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
# The files of named fragments: pieces every page shares, the report's sections, a test's row and its cells, the
# elements of a timeline's and a block chart's SVG.
FRAGMENT_FILES = ("fragments.html", "sections.html", "test_row.html", "timeline.svg.html")
# A fragment runs from its marker line to the next marker; what a file has before its first marker (a comment
# saying what the file is for) belongs to no fragment.
FRAGMENT_MARK = re.compile(r"^<!-- fragment (\w+) -->\n", re.M)
EMPTY = Markup("")


class TemplateError(InputError):
    """A template that does not fit its caller: an unknown fragment, a placeholder without a value, a value
    without a placeholder. An InputError, so that a damaged installation is one line on stderr (exit status 2)
    rather than a traceback; in the code it is a bug, and the unit tests fill every fragment the code uses."""


class Fragment:
    """One named piece of markup: its string.Template, the names of its placeholders, those of them that stand
    inside a tag but outside quotes (tag_slots: <span$attrs>), and where it is from."""

    def __init__(self, name: str, origin: Path, text: str, what: str = ""):
        self.name = name
        self.what = what or "fragment %r" % name
        self.origin = origin
        self.template = string.Template(text)
        self.names = placeholders(self.template, "%s: %s" % (origin, self.what))
        self.tag_slots = tag_slots(self.template)
        self.pieces = pieces(self.template)

    def fill(self, values: Dict[str, Any]) -> Markup:
        if values.keys() != self.names:
            missing = sorted(self.names - set(values))
            unused = sorted(set(values) - self.names)
            raise TemplateError("%s: %s filled %s" % (self.origin, self.what, "; ".join(
                ["without a value for $%s" % ", $".join(missing)] * bool(missing) +
                ["with a value it has no placeholder for: %s" % ", ".join(unused)] * bool(unused))))
        # Escaping keeps text from closing a quoted attribute, but unquoted inside a tag, escaped text such as
        # onclick=alert(1) would still be an attribute: there only markup (attrs()) is taken.
        plain = sorted(k for k in self.tag_slots if not isinstance(values[k], Markup))
        if plain:
            raise TemplateError("%s: %s: $%s stands inside a tag and takes attrs(), not text"
                                % (self.origin, self.what, ", $".join(plain)))
        # What string.Template.substitute makes, without its matching at every fill.
        return Markup("".join(text if name is None else h(values[name]) for text, name in self.pieces))


def pieces(template: string.Template) -> Tuple[Tuple[Optional[str], Optional[str]], ...]:
    """The template as (text, None) and (None, placeholder name) in their order ("$$" is the text "$")."""
    out = []
    position = 0
    for match in template.pattern.finditer(template.template):
        out.append((template.template[position:match.start()], None))
        name = match.group("named") or match.group("braced")
        out.append(("$", None) if name is None else (None, name))
        position = match.end()
    out.append((template.template[position:], None))
    return tuple((text, name) for text, name in out if name is not None or text)


def placeholders(template: string.Template, where: str) -> FrozenSet[str]:
    """The names a template substitutes ($name or ${name}; $$ is a dollar sign). string.Template gained
    get_identifiers() only in Python 3.11."""
    names = set()
    for match in template.pattern.finditer(template.template):
        if match.group("invalid") is not None:
            raise TemplateError("%s: a $ that is neither $name, ${name} nor $$, in %r"
                                % (where, template.template[max(match.start() - 20, 0):match.start() + 20]))
        name = match.group("named") or match.group("braced")
        if name:
            names.add(name)
    return frozenset(names)


def tag_slots(template: string.Template) -> FrozenSet[str]:
    """The placeholders that stand inside a tag (after "<" and before ">") but not inside a quoted value."""
    slots = set()
    text = template.template
    quote = None
    in_tag = False
    position = 0
    for match in template.pattern.finditer(text):
        for char in text[position:match.start()]:
            if quote:
                quote = None if char == quote else quote
            elif in_tag and char in "\"'":
                quote = char
            elif char in "<>":
                in_tag = char == "<"
        position = match.end()
        name = match.group("named") or match.group("braced")
        if name and in_tag and not quote:
            slots.add(name)
    return frozenset(slots)


def template_text(name: str) -> str:
    """A template file's text; an InputError (one line) when the installation lacks it."""
    path = TEMPLATE_DIR / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("%s: cannot read the report template: %s" % (path, getattr(e, "strerror", None) or e))


def split_fragments(path: Path, text: str) -> Iterable[Tuple[str, str]]:
    """(name, text) of each fragment of a fragment file: from its marker line to the next, less the newlines
    that end it (a fragment's own line breaks stay, so its markup can be laid out to be read)."""
    marks = list(FRAGMENT_MARK.finditer(text))
    if not marks:
        raise TemplateError("%s: no '<!-- fragment NAME -->' marker" % path)
    for mark, following in zip(marks, marks[1:] + [None]):
        yield mark.group(1), text[mark.end():following.start() if following else len(text)].rstrip("\n")


@functools.lru_cache(maxsize=None)
def fragments() -> Dict[str, Fragment]:
    """Every named fragment of the fragment files; a name defined twice is an error."""
    found: Dict[str, Fragment] = {}
    for file_name in FRAGMENT_FILES:
        path = TEMPLATE_DIR / file_name
        for name, text in split_fragments(path, template_text(file_name)):
            if name in found:
                raise TemplateError("%s: fragment %r is also defined in %s" % (path, name, found[name].origin))
            found[name] = Fragment(name, path, text)
    return found


def fill(_fragment: str, /, **values: Any) -> Markup:
    """The fragment with each placeholder replaced by its value, escaped unless it is Markup."""
    try:
        fragment = fragments()[_fragment]
    except KeyError:
        raise TemplateError("%s: no fragment %r" % (", ".join(FRAGMENT_FILES), _fragment)) from None
    return fragment.fill(values)


def join(parts: Iterable[Any], separator: Any = "") -> Markup:
    """The parts one after the other, each escaped unless it is Markup, with the separator (escaped too) between."""
    return Markup(h(separator).join(h(part) for part in parts))


def attrs(**values: Any) -> Markup:
    """Optional attributes: ' name="value"' for each value that is neither None nor empty, escaped, in the order
    given (a trailing underscore is dropped from a name: class_). Empty when none is set, so a template writes
    <span class="x"$attrs> and an element without a title has no empty title."""
    return Markup("".join(' %s="%s"' % (name.rstrip("_"), h(value)) for name, value in values.items()
                          if value is not None and value != ""))


def fill_page(name: str, **values: Any) -> str:
    """The page skeleton (page.html) with its placeholders filled, by the same rules as fill()."""
    return str(Fragment(name, TEMPLATE_DIR / name, template_text(name), "the page").fill(values))
