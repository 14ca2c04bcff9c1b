"""Apply ``myst_substitutions`` inside code fences too.

MyST substitutes ``{{ name }}`` in prose but leaves code literal. Pages need the
image tags and versions in commands as well, from the same single definition,
so this extension replaces ``{{ name }}`` inside fenced code blocks when Sphinx
reads a page. An unknown name fails the build.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})(.*)$")
_NAME = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def substitute_code(text: str, values: dict[str, str], docname: str = "") -> str:
    """Return ``text`` with ``{{ name }}`` replaced inside ``` and ~~~ fences."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is None:
            if match and not match.group(2).startswith(":"):
                info = match.group(3).strip()
                # Directive fences ({literalinclude}, {eval-rst}...) hold no code to fill in.
                if not info.startswith("{") or info.startswith("{code-block}"):
                    fence = match.group(2)
            out.append(line)
            continue
        if match and match.group(2) == fence and not match.group(3).strip():
            fence = None
            out.append(line)
            continue

        def replace(found: re.Match[str]) -> str:
            name = found.group(1)
            if name not in values:
                logger.warning("unknown substitution {{ %s }} in a code block", name,
                               location=docname)
                return found.group(0)
            return str(values[name])

        out.append(_NAME.sub(replace, line))
    return "".join(out)


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    source[0] = substitute_code(source[0], app.config.myst_substitutions, docname)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
