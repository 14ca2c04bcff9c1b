"""One MyST reader (ray_serve_npu.myst) for every part that reads pages, held to myst-parser.

The fixture page (data/tricky_fences.md) has the fences that trip a line-by-line reader:
a tilde fence holding backticks, code in a backtick note and in a colon-fence warning
with options, fences in a list item, a fence three spaces in, and a note inside an
admonition holding a tilde fence. myst-parser, through docutils, says which blocks of
code the page renders; the reader must find the same, and the docs harness, the
checker's Markdown input and the site's code substitutions must read what it reads.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from myst_parser.parsers.docutils_ import Parser
from myst_parser.parsers.options import options_to_items
from ray_serve_npu_tooling.docs.pages import read_page
from ray_serve_npu_tooling.docs.style import Site, shell_prompts
from ray_serve_npu_tooling.harness.fences import find_fences
from ray_serve_npu_tooling.harness.problems import PageProblem

from ray_serve_npu import myst
from ray_serve_npu.check.markdown import code_blocks, has_warning

ROOT = Path(__file__).resolve().parents[2]
PAGE = Path(__file__).parent / "data" / "tricky_fences.md"
TEXT = PAGE.read_text()


def _site_extensions() -> list[str]:
    """docs/conf.py's myst_enable_extensions, read without running the configuration."""
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text())
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["myst_enable_extensions"]
    ]
    return list(ast.literal_eval(value))


EXTENSIONS = _site_extensions()


def _code_fences() -> list[myst.Fence]:
    return [fence for fence in myst.leaf_fences(TEXT) if fence.code]


def _rendered_code() -> list[tuple[int | None, str, str]]:
    """(line, language, text) of every block of code myst-parser renders from the page."""
    doctree = publish_doctree(
        TEXT,
        parser=Parser(),
        settings_overrides={"myst_enable_extensions": EXTENSIONS, "report_level": 4},
    )
    return [
        (block.line, block["classes"][-1], block.astext().rstrip("\n"))
        for block in doctree.findall(nodes.literal_block)
    ]


def test_the_reader_finds_the_code_myst_parser_renders() -> None:
    rendered = _rendered_code()
    found = _code_fences()
    assert len(rendered) == 12
    assert [(language, text) for _, language, text in rendered] == [
        (fence.language, "\n".join(fence.content)) for fence in found
    ]
    # docutils numbers most blocks by their opening fence.
    numbered = [
        (line, fence.line) for (line, _, _), fence in zip(rendered, found, strict=True) if line
    ]
    assert len(numbered) >= 10
    assert all(line == fence_line for line, fence_line in numbered)


def test_the_docs_harness_reads_the_blocks_the_reader_finds() -> None:
    assert [found.line for found in find_fences(TEXT, PAGE)] == [f.line for f in _code_fences()]


def test_the_checker_reads_the_blocks_the_reader_finds() -> None:
    assert [(language, line) for language, _, line in code_blocks(TEXT)] == [
        (fence.language, fence.content_line) for fence in _code_fences()
    ]
    assert has_warning(TEXT)
    assert not has_warning(TEXT.replace("{warning}", "{tip}"))


def test_the_style_checker_reads_the_blocks_and_prose_the_reader_finds() -> None:
    page = read_page(PAGE)
    assert [fence.line for fence in page.fences if fence.code] == [f.line for f in _code_fences()]
    prose = {line for line, text in page.prose if text.strip()}
    code = {line for fence in _code_fences() for line, _ in fence.numbered_body}
    assert 25 in prose  # "A note with code:", inside the note's fence
    assert not prose & code
    # The '$' prompt of the console block inside the colon-fence warning.
    assert [finding.line for finding in shell_prompts(page, Site())] == [36]


def test_substitutions_fill_exactly_the_lines_of_code() -> None:
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        from code_substitutions import substitute_code
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    filled = myst.lines(substitute_code(TEXT, {"x": "VALUE"}))
    changed = {
        n for n, (a, b) in enumerate(zip(myst.lines(TEXT), filled, strict=True), 1) if a != b
    }
    code_lines = {
        line
        for fence in _code_fences()
        for line in range(fence.content_line, fence.content_line + len(fence.content))
        if "{{ x }}" in myst.lines(TEXT)[line - 1]
    }
    assert len(code_lines) == 12
    assert changed == code_lines  # prose, inline code and the note's prose keep {{ x }}


def test_an_unclosed_fence_is_read_to_the_end_and_the_harness_refuses_it() -> None:
    text = "Prose.\n\n```bash\necho one\necho two\n"
    (fence,) = myst.fences(text)
    assert (fence.line, fence.closed, fence.body) == (3, False, ("echo one", "echo two"))
    with pytest.raises(PageProblem, match="page.md:3: the fence ```bash is never closed"):
        find_fences(text, Path("docs/page.md"))


def test_directive_options_are_read_with_their_lines() -> None:
    text = "```{literalinclude} serve.py\n:language: python\n:start-after: __a__\n```\n"
    (fence,) = myst.fences(text)
    assert (fence.directive, fence.argument, fence.language) == (
        "literalinclude",
        "serve.py",
        "python",
    )
    assert [(o.name, o.value, o.line) for o in fence.options] == [
        ("language", "python", 2),
        ("start-after", "__a__", 3),
    ]
    assert fence.content == ()


def test_inline_parts_are_read_as_commonmark_and_myst_read_them() -> None:
    text = (
        "Run ``a ` b`` and `two\nlines`, see {doc}`tuning`, :ref:`the table <index-hardware>` "
        "and {{ ray_version }}; `` ` `` alone."
    )
    assert [(p.kind, p.text, p.role) for p in myst.inline_parts(text)] == [
        ("code", "a ` b", ""),
        ("code", "two lines", ""),
        ("role", "tuning", "doc"),
        ("role", "the table <index-hardware>", "ref"),
        ("substitution", "ray_version", ""),
        ("code", "`", ""),
    ]
    # Where each is written: the style checker blanks exactly these spans.
    assert [text[p.start : p.end] for p in myst.inline_parts(text)] == [
        "``a ` b``",
        "`two\nlines`",
        "{doc}`tuning`",
        ":ref:`the table <index-hardware>`",
        "{{ ray_version }}",
        "`` ` ``",
    ]


def test_inline_parts_in_alt_text_and_after_crlf_are_found_where_written() -> None:
    # markdown-it reads "\r\n" as "\n" and parses an image's alt text on its own; the
    # spans still index the text as written.
    text = "See ![the `x` knob](a.png),\r\nthen `y\r\nz` and {doc}`tuning`\r`w`."
    parts = myst.inline_parts(text)
    assert [(p.kind, p.text) for p in parts] == [
        ("code", "x"),
        ("code", "y z"),
        ("role", "tuning"),
        ("code", "w"),
    ]
    assert [text[p.start : p.end] for p in parts] == [
        "`x`",
        "`y\r\nz`",
        "{doc}`tuning`",
        "`w`",
    ]
    # An image after a "\r\n", inside a link, and a "\r\n" at the very end.
    text = "Go\r\n[![a `b` c](i.png) and `d`](x.html)\r\n"
    assert [text[p.start : p.end] for p in myst.inline_parts(text)] == ["`b`", "`d`"]


def test_prose_only_blanks_the_parts_the_reader_finds_and_keeps_escaped_backticks() -> None:
    from ray_serve_npu_tooling.docs.pages import prose_only

    text = "Set ``a ` b`` to 3, see {doc}`tuning`, \\`not code\\` and `x\ny` here."
    blanked = prose_only(text)
    assert len(blanked) == len(text) and blanked.count("\n") == 1
    assert blanked.split() == ["Set", "to", "3,", "see", ",", "\\`not", "code\\`", "and", "here."]


def test_directive_options_in_yaml_form_are_read_with_their_lines() -> None:
    text = "```{literalinclude} serve.py\n---\nlanguage: python\nstart-after: __a__\n---\n```\n"
    (fence,) = myst.fences(text)
    assert [(o.name, o.value, o.line) for o in fence.options] == [
        ("language", "python", 3),
        ("start-after", "__a__", 4),
    ]
    assert (fence.language, fence.content) == ("python", ())
    # A block that is no mapping is content, which the harness refuses for literalinclude.
    (bad,) = myst.fences("```{literalinclude} serve.py\n---\n- a list\n---\n```\n")
    assert (bad.options, bad.content) == ((), ("---", "- a list", "---"))


#: Option values written every way myst-parser accepts: quoted, with a comment,
#: empty, with spaces and punctuation, with a colon, backticks or brackets (which
#: full YAML reads otherwise, or refuses).
OPTION_LINES = (
    ':start-at: "## unpaced"',
    ":end-before: '# __serve_end__'",
    ":start-after: __a__  # where the example starts",
    ":linenos:",
    ":caption: The app, part 1",
    ":lines: 1-3, 5",
    ":name: Step 1: install",
    ":alt: `serve.py` at work",
    ":emphasize-lines: [1, 2]",
    ":prepend: # a comment only",
)


@pytest.mark.parametrize("style", ["colon", "yaml"])
def test_directive_option_values_are_the_ones_myst_parser_reads(style: str) -> None:
    block = "\n".join(line[1:] for line in OPTION_LINES)
    body = "\n".join(OPTION_LINES) if style == "colon" else f"---\n{block}\n---"
    (fence,) = myst.fences(f"```{{literalinclude}} serve.py\n{body}\n```\n")
    items, _ = options_to_items(block)
    assert [(o.name, o.value) for o in fence.options] == items
    assert dict(items)["start-at"] == "## unpaced"
