"""Apply ``myst_substitutions`` in code too.

MyST substitutes ``{{ name }}`` in prose but leaves code, inline code and
headings' reference titles literal. Pages need the image tags and versions in
commands and in `inline code` as well, from the same single definition, so this
extension replaces ``{{ name }}`` in code fences and inline code spans when
Sphinx reads a page or the text a page's ``{include}`` takes from another, and
leaves the rest to MyST. An unknown name fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path

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
                logger.warning(
                    "unknown substitution {{ %s }} in a code block", name, location=docname
                )
                return found.group(0)
            return str(values[name])

        out.append(_NAME.sub(replace, line))
    return "".join(out)


_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def substitute_inline(text: str, values: dict[str, str], docname: str = "") -> str:
    """Replace ``{{ name }}`` inside inline code spans outside fences."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line)
        if match and not match.group(2).startswith(":"):
            if fence is None:
                fence = match.group(2)
            elif match.group(2) == fence and not match.group(3).strip():
                fence = None
            out.append(line)
            continue
        if fence is not None:
            out.append(line)
            continue

        def fill(span: re.Match[str]) -> str:
            body = _NAME.sub(lambda f: str(values.get(f.group(1), f.group(0))), span.group(2))
            return span.group(1) + body + span.group(1)

        out.append(_INLINE_CODE.sub(fill, line))
    return "".join(out)


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    values = app.config.myst_substitutions
    source[0] = substitute_inline(substitute_code(source[0], values, docname), values, docname)


def _include_read(
    app: Sphinx, relative_path: Path, parent_docname: str, content: list[str]
) -> None:
    """The same for a page's ``{include}`` of another page's blocks (MyST emits this)."""
    _source_read(app, parent_docname, content)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("source-read", _source_read)
    app.connect("include-read", _include_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
