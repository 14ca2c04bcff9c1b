"""Markdown pages: the shell and YAML blocks a reader would copy (read by ray_serve_npu.myst),
on MyST pages and on MkDocs Material pages, such as vLLM-Ascend's tutorials."""

from __future__ import annotations

from ray_serve_npu import mkdocs, myst

SHELL = {"bash", "sh", "shell", "console", "zsh"}
YAML = {"yaml", "yml"}
#: Admonitions that tell a reader about a risk.
WARNINGS = {"warning", "danger", "caution"}


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, first body line) of each block of code, inside containers and
    MkDocs blocks too."""
    return [
        (
            fence.language.lower(),
            "\n".join(line.removeprefix("$ ") for line in fence.content),
            fence.content_line,
        )
        for fence in myst.leaf_fences(mkdocs.opened(text).text)
        if fence.code
    ]


def has_warning(text: str) -> bool:
    """Whether the page has a warning, danger or caution admonition, MyST's or MkDocs'."""
    page = mkdocs.opened(text)
    return bool(page.admonitions & WARNINGS) or any(
        fence.directive in WARNINGS for fence in myst.fences(page.text)
    )
