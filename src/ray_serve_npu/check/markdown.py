"""Markdown pages: the shell and YAML blocks a reader would copy."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?([\w-]*)\}?")
SHELL = {"bash", "sh", "shell", "console", "zsh"}
YAML = {"yaml", "yml"}


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, first body line) of each fenced block."""
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, language = match.group(2), match.group(3).lower()
        start = index + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line.removeprefix("$ ") for line in lines[start:end])
        blocks.append((language, body, start + 1))
        index = end + 1
    return blocks


def has_warning(text: str) -> bool:
    """Whether the page has a MyST warning/danger admonition."""
    return re.search(r"(`{3,}|:{3,})\s*\{(warning|danger|caution)\}", text) is not None
