"""The fenced blocks of a MyST page, found through directive containers (tab sets, notes)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .problems import Location, PageProblem

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>[^`]*)$")
DIRECTIVE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*)$")
#: Directives whose fence holds code or an include, not more markdown.
LEAFDIRECTIVES = {"code-block", "code", "sourcecode", "code-cell", "literalinclude"}


@dataclass(frozen=True)
class Fence:
    """One leaf fence: a code block or a leaf directive, as written."""

    #: Page line of the opening fence (1-based).
    line: int
    #: The text after the fence characters, stripped: ``bash`` or ``{literalinclude} x.py``.
    info: str
    #: The lines between the fences, with the fence's indentation removed.
    body: list[str]
    #: Character offsets of the opening fence's line start and of the end of the closing fence.
    start: int
    end: int


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def find_fences(text: str, page: Path) -> list[Fence]:
    """Every leaf fence of ``text``, in page order; raises on a fence that is never closed."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    containers: list[str] = []
    fences: list[Fence] = []
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\n")
        if containers and _closes(line, containers[-1]):
            containers.pop()
            index += 1
            continue
        match = _FENCE_OPEN.match(line)
        if match is None:
            index += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        directive = DIRECTIVE.match(info)
        if fence[0] == ":" or (directive and directive["name"] not in LEAFDIRECTIVES):
            containers.append(fence)
            index += 1
            continue
        close = next(
            (j for j in range(index + 1, len(lines)) if _closes(lines[j].rstrip("\n"), fence)),
            None,
        )
        if close is None:
            raise PageProblem(
                Location(page, index + 1),
                f"the fence {fence}{info} is never closed",
                f"close it with a line of {fence}",
            )
        indent = len(match["indent"])
        body = [_dedent(body_line.rstrip("\n"), indent) for body_line in lines[index + 1 : close]]
        fences.append(Fence(index + 1, info, body, offsets[index], offsets[close + 1]))
        index = close + 1
    return fences


def _dedent(line: str, indent: int) -> str:
    """Remove up to ``indent`` leading spaces, as CommonMark does inside an indented fence."""
    return line[min(indent, len(line) - len(line.lstrip(" "))) :]
