"""Read a MyST page into the parts the style rules look at, with line numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ray_serve_npu import myst

#: English prose spells out zero to nine (Ray's style guide): the style checker
#: asks for these words, and the site's number substitutions use them.
NUMBER_WORDS: tuple[str, ...] = tuple("zero one two three four five six seven eight nine".split())

_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")


@dataclass
class Page:
    """One page: front matter, fences, headings and prose lines."""

    path: Path
    front_matter: dict[str, object] | None = None
    #: Blocks of code and leaf directives (ray_serve_npu.myst), inside containers too.
    fences: list[myst.Fence] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    #: Prose with inline code, roles, substitutions, link targets and URLs blanked out.
    prose: list[tuple[int, str]] = field(default_factory=list)
    #: Every line outside leaf fences, as written (links are checked here).
    text: list[tuple[int, str]] = field(default_factory=list)


def prose_only(text: str) -> str:
    """Blank out what is not prose, so rules about words don't fire on code or names.

    Code spans, roles (``{doc}`tuning```: the target is a name) and substitutions are
    read by :func:`ray_serve_npu.myst.inline_parts`; then link targets and URLs go.
    Line breaks survive, so a paragraph blanked as a whole maps back onto its lines.
    """

    def blank(part: str) -> str:
        return re.sub(r"[^\n]", " ", part)

    for part in reversed(myst.inline_parts(text)):
        text = text[: part.start] + blank(text[part.start : part.end]) + text[part.end :]
    for pattern in (_LINK_TARGET, _URL):
        text = pattern.sub(lambda found: blank(found.group(0)), text)
    return text


def _paragraphs(lines: list[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """Runs of consecutive lines, split at blank lines and gaps in numbering."""
    run: list[tuple[int, str]] = []
    for number, text in lines:
        if run and (not text.strip() or number != run[-1][0] + 1):
            yield run
            run = []
        if text.strip():
            run.append((number, text))
    if run:
        yield run


def _blank_non_prose(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for paragraph in _paragraphs(lines):
        blanked = prose_only("\n".join(text for _, text in paragraph)).split("\n")
        out.extend(zip((number for number, _ in paragraph), blanked, strict=True))
    return out


# MyST comments, HTML comments, colon fences, labels and directive options.
_MARKUP = re.compile(r"^\s*(%|<!--|:{3,}|\(\S+\)=\s*$|:[\w-]+:)")


def read_page(path: Path) -> Page:
    """Split ``path`` into front matter, fences, headings and prose.

    Fences are read by :mod:`ray_serve_npu.myst`: the prose of a note or a tab, inside
    a container fence, is prose; the container's own fence and option lines are not.
    """
    page = Page(path=path)
    source = path.read_text(encoding="utf-8")
    lines = myst.lines(source)
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            loaded = yaml.safe_load("\n".join(lines[1:end])) or {}
            page.front_matter = loaded if isinstance(loaded, dict) else {}
            start = end + 1
    fenced: set[int] = set()
    markup: set[int] = set()
    for fence in myst.fences(source):
        if fence.leaf:
            page.fences.append(fence)
            fenced.update(range(fence.line, fence.end + 1))
        else:
            markup.update(range(fence.line, fence.content_line))
            if fence.closed:
                markup.add(fence.end)
    prose: list[tuple[int, str]] = []
    for index in range(start, len(lines)):
        number, text = index + 1, lines[index]
        if number in fenced:
            continue
        page.text.append((number, text))
        heading = _HEADING.match(text)
        if heading:
            page.headings.append((number, heading.group("text")))
        elif number not in markup and not _MARKUP.match(text):
            prose.append((number, text))
    page.prose = _blank_non_prose(prose)
    page.headings = [(number, prose_only(text)) for number, text in page.headings]
    return page
