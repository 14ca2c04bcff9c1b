"""Read a MyST page into the parts the style rules look at, with line numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

#: English prose spells out zero to nine (Ray's style guide): the style checker
#: asks for these words, and the site's number substitutions use them.
NUMBER_WORDS: tuple[str, ...] = tuple("zero one two three four five six seven eight nine".split())

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<mark>`{3,}|~{3,})(?P<info>.*)$")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
# Code spans may wrap onto the next line of their paragraph.
_INLINE_CODE = re.compile(r"(`+)(?!`)[\s\S]+?(?<!`)\1(?!`)")
_SUBSTITUTION = re.compile(r"\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}")
# Roles such as {doc}`tuning`: the target is a name, not prose.
_ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Fence:
    """A fenced block: its opening line, info string and body lines."""

    line: int
    info: str
    body: list[tuple[int, str]]

    @property
    def directive(self) -> str | None:
        """``literalinclude`` for ```` ```{literalinclude} ````; None for a code fence."""
        found = re.match(r"\{([\w-]+)\}", self.info)
        return found.group(1) if found else None

    @property
    def language(self) -> str:
        """The code fence's language, or a directive's ``:language:`` option."""
        if self.directive is None:
            return self.info.split()[0] if self.info else ""
        if self.directive == "code-block":
            argument = self.info.split(maxsplit=1)
            if len(argument) > 1:
                return argument[1].strip()
        for _, text in self.body:
            option = re.match(r"\s*:language:\s*(\S+)", text)
            if option:
                return option.group(1)
        return ""


@dataclass
class Page:
    """One page: front matter, fences, headings and prose lines."""

    path: Path
    front_matter: dict[str, object] | None = None
    fences: list[Fence] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    #: Prose with inline code, roles, substitutions, link targets and URLs blanked out.
    prose: list[tuple[int, str]] = field(default_factory=list)
    #: Every line outside fences, as written (links are checked here).
    text: list[tuple[int, str]] = field(default_factory=list)


def prose_only(text: str) -> str:
    """Blank out what is not prose, so rules about words don't fire on code or names.

    Line breaks survive, so a paragraph blanked as a whole maps back onto its lines.
    """

    def blank(found: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", found.group(0))

    for pattern in (_ROLE, _INLINE_CODE, _SUBSTITUTION, _LINK_TARGET, _URL):
        text = pattern.sub(blank, text)
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
    """Split ``path`` into front matter, fences, headings and prose."""
    page = Page(path=path)
    lines = path.read_text(encoding="utf-8").splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            loaded = yaml.safe_load("\n".join(lines[1:end])) or {}
            page.front_matter = loaded if isinstance(loaded, dict) else {}
            start = end + 1
    fence: tuple[int, str, str, list[tuple[int, str]]] | None = None
    prose: list[tuple[int, str]] = []
    for index in range(start, len(lines)):
        number, text = index + 1, lines[index]
        if fence is not None:
            opened_at, mark, info, body = fence
            if text.strip() == mark or (
                text.strip().startswith(mark[0] * len(mark)) and not text.strip(mark[0]).strip()
            ):
                page.fences.append(Fence(opened_at, info, body))
                fence = None
            else:
                body.append((number, text))
            continue
        opening = _FENCE_OPEN.match(text)
        if opening:
            fence = (number, opening.group("mark"), opening.group("info").strip(), [])
            continue
        page.text.append((number, text))
        heading = _HEADING.match(text)
        if heading:
            page.headings.append((number, heading.group("text")))
        elif not _MARKUP.match(text):
            prose.append((number, text))
    if fence is not None:
        page.fences.append(Fence(fence[0], fence[2], fence[3]))
    page.prose = _blank_non_prose(prose)
    page.headings = [(number, prose_only(text)) for number, text in page.headings]
    return page
