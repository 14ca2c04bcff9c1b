"""The blocks of an MkDocs Material page, opened, so that a CommonMark reader sees them.

vLLM-Ascend's documentation is built with MkDocs Material (``mkdocs.yml`` at v0.25.1rc1,
with ``pymdownx.tabbed``, ``admonition`` and ``pymdownx.details``). A content tab
(``=== "A2 series"``), an admonition (``!!! note``) and a collapsible one (``??? note``)
hold their body four spaces in, where CommonMark alone reads a fenced block as
indented code. :func:`opened` blanks each opener and moves its body out, line for line,
so that the page's lines keep their numbers, and says which tabs each line sits in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ray_serve_npu.myst import lines

#: An opener: a tab's quoted title, or an admonition's kind and optional title.
_OPENER = re.compile(r'===\+?[ \t]+"(?P<title>[^"]*)"|(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+).*')
#: How far a block's body sits in from its opener.
BODY_INDENT = 4
#: A line that opens or closes a fenced block: three or more backticks or tildes.
_FENCE = re.compile(r"(`{3,}|~{3,})")


@dataclass(frozen=True)
class OpenedPage:
    """A page with its MkDocs blocks opened."""

    #: The page, each opener blanked and each body moved out to its opener's indentation.
    text: str
    #: The kinds of admonition the page opens (``warning``, ``note``), in lower case.
    admonitions: frozenset[str]
    #: For each line of the page, the titles of the tabs it sits in, outermost first.
    tabs: tuple[tuple[str, ...], ...]


def opened(text: str) -> OpenedPage:
    """``text`` with its MkDocs Material blocks opened (the module says how)."""
    kept: list[str] = []
    admonitions: set[str] = set()
    tabs: list[tuple[str, ...]] = []
    #: Each open block: the indentation of its body and its tab title (None for an
    #: admonition), innermost last.
    open_blocks: list[tuple[int, str | None]] = []
    #: The marker of the fenced block the line is in, if any: an opener inside one is
    #: its text (a page that shows MkDocs syntax), not a block.
    fence: str | None = None
    for line in lines(text, keepends=True):
        content = line.strip()
        if content:
            indent = len(line) - len(line.lstrip(" "))
            while open_blocks and indent < open_blocks[-1][0]:
                open_blocks.pop()
        titles = tuple(title for _, title in open_blocks if title is not None)
        marker = _FENCE.match(content)
        if fence is None and marker:
            fence = marker[1]
        elif fence is not None and marker and marker[1][0] == fence[0] and content == marker[1]:
            fence = None if len(marker[1]) >= len(fence) else fence
        opener = _OPENER.fullmatch(content) if content and fence is None else None
        if not content:
            kept.append(line.lstrip(" \t"))
        elif opener is None:
            kept.append(line[BODY_INDENT * len(open_blocks) :])
        else:
            if opener["kind"]:
                admonitions.add(opener["kind"].lower())
            open_blocks.append((indent + BODY_INDENT, opener["title"]))
            kept.append(line[len(line.rstrip("\r\n")) :])
        tabs.append(titles)
    return OpenedPage(text="".join(kept), admonitions=frozenset(admonitions), tabs=tuple(tabs))
