"""Apply ``myst_substitutions`` in code too, and keep translations free of their values.

MyST substitutes ``{{ name }}`` in prose when it parses a paragraph, and the
paragraph's source keeps the reference, so the gettext builder extracts
``{{ name }}`` and the translated paragraph, parsed again by MyST, gets the value
of the build it is in. MyST leaves code literal, and pages need the image tags
and versions in commands and in `inline code` as well, from the same single
definition. This extension fills them in there, in two ways:

- Code fences: in the text, when Sphinx reads a page or the text a page's
  ``{include}`` takes from another (``substitute_code``; the test harness runs
  the same function over the pages). Code blocks are not messages
  (``gettext_additional_targets`` is empty), so no catalogue sees them.
- Inline code and link targets (``[text](https://.../blob/{{name}}/path)``): in the
  doctree, after Sphinx's ``Locale`` transform has put the translation in
  (``SubstituteInlineCode``). The message keeps ``{{ name }}``, so a version bump
  changes no message and leaves every translation current.

Messages made only of version numbers (the cells of the pin table) are not
offered for translation: there is nothing to translate, and a bump would change them.

An unknown name fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.i18n import Locale
from sphinx.util import logging

from ray_serve_npu import myst

logger = logging.getLogger(__name__)

_NAME = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: ``{{name}}`` in a link target, as Markdown percent-encodes it.
_ENCODED_NAME = re.compile(r"%7B%7B([A-Za-z_][A-Za-z0-9_]*)%7D%7D", re.IGNORECASE)
#: A message with nothing to translate: version numbers such as ``0.22.0`` or ``2.56.x``.
_VERSIONS_ONLY = re.compile(r"\s*\d+(\.[0-9x]+)+\s*")


def substitute_code(text: str, values: dict[str, str], docname: str = "") -> str:
    """Return ``text`` with ``{{ name }}`` replaced in the body of every block of code.

    The blocks are the page's code fences and code directives, inside containers too
    (:mod:`ray_serve_npu.myst`); other directives ({literalinclude}, {eval-rst}) hold
    no code to fill in.
    """
    lines = myst.lines(text, keepends=True)
    for fence in myst.leaf_fences(text):
        if fence.code:
            last = fence.end - 1 if fence.closed else fence.end
            for index in range(fence.content_line - 1, last):
                lines[index] = _fill(lines[index], values, docname)
    return "".join(lines)


def _fill(text: str, values: dict[str, Any], location: Any) -> str:
    return _NAME.sub(lambda found: _value(found, values, location), text)


def _value(found: re.Match[str], values: dict[str, Any], location: Any) -> str:
    name = found.group(1)
    if name not in values:
        logger.warning("unknown substitution {{ %s }} in code", name, location=location)
        return found.group(0)
    return str(values[name])


class SubstituteInlineCode(SphinxTransform):
    """Replace ``{{ name }}`` in inline code and link targets, once the translation is in.

    A link target is written ``{{name}}``, without spaces, which a Markdown link
    destination can't hold; Markdown stores the braces percent-encoded.
    """

    #: After ``Locale``, which parses each translated message into new nodes.
    default_priority = Locale.default_priority + 1

    def apply(self, **kwargs: Any) -> None:
        values = self.config.myst_substitutions
        for literal in list(self.document.findall(nodes.literal)):
            for text in list(literal.findall(nodes.Text)):
                if _NAME.search(text):
                    filled = _fill(str(text), values, literal)
                    text.parent.replace(text, nodes.Text(filled))
        for reference in self.document.findall(nodes.reference):
            target = _ENCODED_NAME.sub(r"{{\1}}", reference.get("refuri", ""))
            if _NAME.search(target):
                reference["refuri"] = _fill(target, values, reference)


class LeaveVersionsUntranslated(SphinxTransform):
    """Take paragraphs of version numbers alone out of the messages."""

    #: Before ``Locale`` and the gettext builder read the messages.
    default_priority = Locale.default_priority - 1

    def apply(self, **kwargs: Any) -> None:
        for paragraph in self.document.findall(nodes.paragraph):
            # The source as written, the message gettext would extract: ``0.9`` in
            # code is a setting, and stays a message.
            if _VERSIONS_ONLY.fullmatch(paragraph.rawsource):
                paragraph["translatable"] = False


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    source[0] = substitute_code(source[0], app.config.myst_substitutions, docname)


def _include_read(
    app: Sphinx, relative_path: Path, parent_docname: str, content: list[str]
) -> None:
    """The same for a page's ``{include}`` of another page's blocks (MyST emits this)."""
    _source_read(app, parent_docname, content)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("source-read", _source_read)
    app.connect("include-read", _include_read)
    app.add_transform(LeaveVersionsUntranslated)
    app.add_transform(SubstituteInlineCode)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
