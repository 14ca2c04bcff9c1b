"""Markdown pages: the shell and YAML blocks a reader would copy (read by ray_serve_npu.myst),
on MyST pages and on MkDocs Material pages, such as vLLM-Ascend's tutorials."""

from __future__ import annotations

import re

from ray_serve_npu import myst

SHELL = {"bash", "sh", "shell", "console", "zsh"}
YAML = {"yaml", "yml"}
#: Admonitions that tell a reader about a risk.
WARNINGS = {"warning", "danger", "caution"}
#: The opener of an MkDocs Material block whose body sits four spaces in: a content tab
#: (``=== "A2 series"``, pymdownx.tabbed), an admonition (``!!! note``) or a collapsible
#: one (``??? note``, pymdownx.details). vLLM-Ascend's tutorials put their commands in
#: such tabs (mkdocs.yml at v0.25.1rc1), where CommonMark alone reads a fence as indented
#: code.
_MKDOCS_OPENER = re.compile(r'===\+?[ \t]+"[^"]*"|(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+).*')
#: How far an MkDocs block's body sits in from its opener.
_MKDOCS_INDENT = 4


def _mkdocs_blocks_opened(text: str) -> tuple[str, set[str]]:
    """``text`` with each MkDocs block's opener blanked and its body moved out to where
    its opener was, line for line, and the kinds of admonition the page opens."""
    kept: list[str] = []
    kinds: set[str] = set()
    #: The indentation of each open block's body, innermost last.
    open_bodies: list[int] = []
    for line in myst.lines(text, keepends=True):
        content = line.strip()
        if not content:
            kept.append(line.lstrip(" \t"))
            continue
        indent = len(line) - len(line.lstrip(" "))
        while open_bodies and indent < open_bodies[-1]:
            open_bodies.pop()
        opener = _MKDOCS_OPENER.fullmatch(content)
        if opener is None:
            kept.append(line[_MKDOCS_INDENT * len(open_bodies) :])
            continue
        if opener["kind"]:
            kinds.add(opener["kind"].lower())
        open_bodies.append(indent + _MKDOCS_INDENT)
        kept.append(line[len(line.rstrip("\r\n")) :])
    return "".join(kept), kinds


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, first body line) of each block of code, inside containers and
    MkDocs blocks too."""
    return [
        (
            fence.language.lower(),
            "\n".join(line.removeprefix("$ ") for line in fence.content),
            fence.content_line,
        )
        for fence in myst.leaf_fences(_mkdocs_blocks_opened(text)[0])
        if fence.code
    ]


def has_warning(text: str) -> bool:
    """Whether the page has a warning, danger or caution admonition, MyST's or MkDocs'."""
    opened, mkdocs_kinds = _mkdocs_blocks_opened(text)
    return bool(mkdocs_kinds & WARNINGS) or any(
        fence.directive in WARNINGS for fence in myst.fences(opened)
    )
