"""Keep each version and tag in a table on one line.

Table cells let inline code break anywhere (docs/_static/css/site.css), so that a long path
or image reference doesn't widen its table past the column. A version or a tag is short and
is read whole: broken in the middle ("v0.25.1r" / "c1") it reads as another one. This marks
each such inline code in a table, generated or written, with the class ``whole-word``, which
the stylesheet keeps on one line.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

#: A version or a tag: ``0.25.1``, ``v0.25.1rc1``, ``2.10.0.post4``, ``9.2.0_20260930220649``,
#: and an image tag, ``v0.25.1rc1-a3-openeuler``.
VERSION = re.compile(r"v?\d+\.\d+[\w.-]*")


def mark_whole_words(doctree: nodes.Node) -> int:
    """Mark every version or tag in inline code inside a table; return how many."""
    marked = 0
    for table in doctree.findall(nodes.table):
        for literal in table.findall(nodes.literal):
            if VERSION.fullmatch(literal.astext().strip()):
                literal["classes"].append("whole-word")
                marked += 1
    return marked


def _mark(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    mark_whole_words(doctree)


def setup(app: Sphinx) -> dict[str, object]:
    # doctree-resolved: after the directives have generated their tables.
    app.connect("doctree-resolved", _mark)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
