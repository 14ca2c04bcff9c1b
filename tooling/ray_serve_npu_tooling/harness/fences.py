"""The blocks of code of a MyST page and its includes, with where they sit in its text.

The page is read by :mod:`ray_serve_npu.myst`, the one MyST reader; this module adds the
character offsets Sybil's regions need and refuses a fence that is never closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ray_serve_npu import myst

from .problems import Location, PageProblem

#: Directives that bring in another file's text: a recipe's lines, or a part of a page.
_INCLUDES = frozenset({"literalinclude", "include"})


@dataclass(frozen=True)
class Fence:
    """One block's fence and the span of page text it covers."""

    fence: myst.Fence
    #: Character offsets of the opening fence's line start and of the end of the closing fence.
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.fence.line


def line_offsets(text: str) -> list[int]:
    """The character offset of each line's start in ``text``, then of its end: line ``n``
    (1-based) spans ``offsets[n - 1]`` to ``offsets[n]``."""
    offsets = [0]
    for line in myst.lines(text, keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def find_fences(text: str, page: Path) -> list[Fence]:
    """Every block of code, ``literalinclude`` and ``include`` of ``text``, in page order;
    raises on a fence that is never closed. Other directives ({eval-rst}) hold no block."""
    offsets = line_offsets(text)
    found: list[Fence] = []
    for fence in myst.fences(text):
        if not (fence.leaf and fence.code or fence.directive in _INCLUDES):
            continue
        if not fence.closed:
            raise PageProblem(
                Location(page, fence.line),
                f"the fence {fence.marker}{fence.info} is never closed",
                f"close it with a line of {fence.marker}",
            )
        found.append(Fence(fence, offsets[fence.line - 1], offsets[fence.end]))
    return found
