"""The fenced blocks of a MyST page, read as myst-parser reads them.

One reader for every part that looks at pages: the checker's Markdown input, the docs
harness, the site's code substitutions. It parses with markdown-it-py, the parser
myst-parser is built on, with the same block rules the site enables (front matter,
MyST's ``%`` comments and ``(label)=`` targets, colon fences), so CommonMark decides
what is a fence: its indentation, its closing run of at least as many marks, tildes,
and fences inside list items.

A directive whose content is more Markdown (a note, a tab set) is read again inside,
as myst-parser parses it nested, after the directive's options; a directive whose
content is code or an include (:data:`LEAF_DIRECTIVES`) is a leaf. Lines keep their
page numbers throughout.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import yaml
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.field_list import fieldlist_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin
from mdit_py_plugins.substitution import substitution_plugin

#: Directives whose content is not Markdown: code, an include, reStructuredText, the
#: document names of a table of contents.
LEAF_DIRECTIVES = frozenset(
    {
        "code-block",
        "code",
        "sourcecode",
        "code-cell",
        "literalinclude",
        "eval-rst",
        "raw",
        "math",
        "toctree",
    }
)
#: Directives that show code and take its language as their argument.
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell"})

_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*)$")
#: ``key: value`` on one line, as an option states it.
_KEY_VALUE = r"(?P<key>[\w-]+):(?:\s+(?P<value>.*?))?\s*$"
#: An option line of the ``:key: value`` form.
_OPTION = re.compile(rf"^\s*:{_KEY_VALUE}")
_FENCE_TOKENS = {"fence", "colon_fence"}
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
#: A reStructuredText role's name right before its backticks (``:func:`x```), as
#: docstrings write them; MyST writes ``{func}`x```.
_RST_ROLE = re.compile(r":(?P<name>[\w:-]+):$")


@dataclass(frozen=True)
class Option:
    """One ``:name: value`` option at the top of a directive's body."""

    name: str
    value: str
    #: Page line of the option (1-based).
    line: int


@dataclass(frozen=True)
class Fence:
    """One fenced block as written: a code fence, a directive, or a colon fence."""

    #: Page line of the opening fence (1-based).
    line: int
    #: Page line of the closing fence, or of the page's last line if it never closes.
    end: int
    #: The opening run of marks: ```` ``` ````, ``~~~~``, ``:::``.
    marker: str
    #: The text after the marks, stripped: ``bash``, ``{literalinclude} x.py``, ``{note}``.
    info: str
    #: The lines between the fences, without the indentation of the fence's container.
    body: tuple[str, ...]
    #: Whether a closing fence ends it (CommonMark runs an unclosed fence to the page's end).
    closed: bool
    #: Directive options at the top of the body (``:language: python``), in order.
    options: tuple[Option, ...] = ()

    def option(self, name: str) -> str:
        """The value of the directive's option ``name``; empty when it is not given."""
        return next((option.value for option in self.options if option.name == name), "")

    @property
    def directive(self) -> str | None:
        """``literalinclude`` for ```` ```{literalinclude} x.py ````; None for a code fence."""
        found = _DIRECTIVE.match(self.info)
        return found["name"] if found else None

    @property
    def argument(self) -> str:
        """A directive's argument (``x.py``); a code fence's whole info string."""
        found = _DIRECTIVE.match(self.info)
        return found["argument"].strip() if found else self.info

    @property
    def leaf(self) -> bool:
        """Code, an include or a code fence; otherwise a container of more Markdown."""
        if self.marker.startswith(":"):
            return False
        return self.directive is None or self.directive in LEAF_DIRECTIVES

    @property
    def code(self) -> bool:
        """Whether the body is code a reader sees (a code fence or a code directive)."""
        return self.directive is None or self.directive in CODE_DIRECTIVES

    @property
    def language(self) -> str:
        """The language of the code: the fence's, a code directive's argument, or the
        ``:language:`` option (``literalinclude``); empty when none is given."""
        if self.directive is None:
            words = self.info.split()
            return words[0] if words else ""
        if self.directive in CODE_DIRECTIVES and self.argument:
            return self.argument.split()[0]
        return self.option("language")

    @property
    def content(self) -> tuple[str, ...]:
        """The body after the directive's options (all of it for a code fence)."""
        return self.body[_options_length(self.body) :] if self.directive else self.body

    @property
    def numbered_body(self) -> tuple[tuple[int, str], ...]:
        """(page line, text) of each body line."""
        return tuple(enumerate(self.body, start=self.line + 1))

    @property
    def content_line(self) -> int:
        """Page line of the first line of :attr:`content`."""
        return self.line + 1 + (len(self.body) - len(self.content))


def lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text`` as Markdown counts them: split at ``\\n``, ``\\r\\n`` and ``\\r``
    only (``str.splitlines`` also splits at form feeds and Unicode separators)."""
    found = _LINE.findall(text)
    return found if keepends else [line.rstrip("\r\n") for line in found]


@dataclass(frozen=True)
class InlinePart:
    """A piece of a paragraph that is not prose: code, a role, a substitution."""

    kind: Literal["code", "role", "substitution"]
    #: The code, the role's content (``title <target>`` or ``target``), the substitution's name.
    text: str
    #: Where it is written in the paragraph: ``paragraph[start:end]`` is the whole
    #: part with its backticks, braces and role name.
    start: int
    end: int
    #: The role's name (``doc``, ``func``); empty for code and substitutions.
    role: str = ""


#: The inline rules whose tokens are parts, and an image, whose alt text holds more.
_RECORDED_RULES = ("backticks", "myst_role", "substitution_inline", "image")
_SPAN = "ray_serve_npu_span"
#: Where an image's alt text starts, from the image's start: after ``![``.
_ALT_OFFSET = 2


def _recording_span(rule: Callable[[StateInline, bool], bool]) -> Callable[..., bool]:
    """``rule``, recording on each token it makes where in the source the token is written
    (markdown-it's inline tokens carry no positions)."""

    def recorded(state: StateInline, silent: bool) -> bool:
        start, made = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        for token in state.tokens[made:]:
            token.meta = {**(token.meta or {}), _SPAN: (start, state.pos)}
        return True

    return recorded


@functools.cache
def _inline_parser() -> MarkdownIt:
    # The inline rules of the site's myst-parser that make text verbatim.
    parser = MarkdownIt("commonmark").use(myst_role_plugin).use(substitution_plugin)
    ruler = parser.inline.ruler
    for name in _RECORDED_RULES:
        ruler.at(name, _recording_span(ruler.__rules__[ruler.__find__(name)].fn))
    return parser


def inline_parts(text: str) -> list[InlinePart]:
    """The code spans, roles and substitutions of paragraph ``text``, in order.

    Code spans are read as CommonMark reads them (any run of backticks, across lines);
    a code span right after ``:name:`` is a reStructuredText role.
    """
    parts = [
        part
        for block in _inline_parser().parseInline(text)
        for part in _parts(block.children or [], 0)
    ]
    if "\r" not in text:
        return parts
    # markdown-it reads "\r\n" and "\r" as "\n" first; spans are mapped back to ``text``.
    source = _source_offsets(text)
    return [replace(part, start=source[part.start], end=source[part.end]) for part in parts]


def _parts(tokens: Sequence[Token], offset: int) -> Iterator[InlinePart]:
    """The parts of inline ``tokens`` parsed from a text that starts at ``offset``."""
    previous = ""
    for token in tokens:
        start, end = (offset + at for at in (token.meta or {}).get(_SPAN, (0, 0)))
        if token.type == "code_inline":
            rst = _RST_ROLE.search(previous)
            if rst:
                where = start - len(rst.group(0))
                yield InlinePart("role", token.content, where, end, rst["name"])
            else:
                yield InlinePart("code", token.content, start, end)
        elif token.type == "myst_role":
            yield InlinePart("role", token.content, start, end, str(token.meta["name"]))
        elif token.type == "substitution_inline":
            yield InlinePart("substitution", token.content.strip(), start, end)
        elif token.type == "image":
            # The alt text is parsed on its own, its spans counted from its first character.
            yield from _parts(token.children or [], start + _ALT_OFFSET)
        previous = token.content if token.type == "text" else ""


def _source_offsets(text: str) -> list[int]:
    """For each offset of ``text`` as markdown-it normalizes it (line breaks to ``\\n``),
    and its end, the offset in ``text``."""
    offsets: list[int] = []
    at = 0
    while at < len(text):
        offsets.append(at)
        at += 2 if text.startswith("\r\n", at) else 1
    offsets.append(len(text))
    return offsets


@functools.cache
def _parser() -> MarkdownIt:
    # The block rules of the site's myst-parser (docs/conf.py's myst_enable_extensions and
    # myst-parser's own) that change what is a fence or where one may sit; the inline
    # rules don't.
    return (
        MarkdownIt("commonmark")
        .use(front_matter_plugin)
        .use(myst_block_plugin)
        .use(colon_fence_plugin)
        .use(deflist_plugin)
        .use(fieldlist_plugin)
    )


def fences(text: str) -> list[Fence]:
    """Every fence of ``text``, containers and leaves, in page order."""
    return [
        _fence(token, offset) for token, offset, _ in _walk(text, 0) if token.type in _FENCE_TOKENS
    ]


def leaf_fences(text: str) -> list[Fence]:
    """The fences that hold code or an include, inside containers too, in page order."""
    return [fence for fence in fences(text) if fence.leaf]


def comments(text: str) -> list[tuple[int, str]]:
    """(page line, text after ``%``) of every MyST comment, inside containers too."""
    found: list[tuple[int, str]] = []
    for token, offset, source in _walk(text, 0):
        if token.type == "myst_line_comment" and token.map is not None:
            # One token holds a run of comment lines.
            first, last = token.map
            found.extend(
                (offset + number + 1, line.strip()[1:])
                for number, line in enumerate(source[first:last], start=first)
                if line.strip().startswith("%")
            )
    return found


def _walk(text: str, offset: int) -> Iterator[tuple[Token, int, list[str]]]:
    """Every block token of ``text`` with a line map, in page order, with the page-line
    offset of the text it was parsed from and that text's lines; a container fence's
    tokens follow it, parsed from its body as myst-parser parses it nested."""
    source = lines(text)
    for token in _parser().parse(text):
        if token.map is None:
            continue
        yield token, offset, source
        if token.type in _FENCE_TOKENS:
            fence = _fence(token, offset)
            if not fence.leaf:
                yield from _walk(_nested_text(fence), fence.line)


def _fence(token: Token, offset: int) -> Fence:
    assert token.map is not None
    first, after = token.map
    # markdown-it has turned every line break into "\n" and taken off the container's
    # prefix (indentation, "> "); an unclosed fence runs to the end, one line shorter.
    body = tuple(token.content.split("\n")[:-1])
    closed = after - first >= len(body) + 2
    line = offset + first + 1
    options = _options(body, line + 1) if _DIRECTIVE.match(token.info.strip()) else ()
    return Fence(
        line=line,
        end=offset + after,
        marker=token.markup,
        info=token.info.strip(),
        body=body,
        closed=closed,
        options=options,
    )


def _nested_text(fence: Fence) -> str:
    """The container's body as myst-parser parses it nested: options blanked, lines kept."""
    skip = _options_length(fence.body)
    return "\n".join([""] * skip + list(fence.body[skip:])) + "\n"


def _options_length(body: tuple[str, ...]) -> int:
    """How many lines at the top of a directive's body are its options."""
    if body and body[0].strip() == "---":
        closing = next((i for i in range(1, len(body)) if body[i].strip() == "---"), None)
        if closing is None or _block_options(body[1:closing]) is None:
            return 0  # not an options block: it stays content, as a reader would see it
        return closing + 1
    count = 0
    while count < len(body) and _OPTION.match(body[count]):
        count += 1
    return count


#: A one-line ``key: value`` of a ``---`` options block.
_BLOCK_OPTION = re.compile(rf"^\s*{_KEY_VALUE}")
#: Where a plain value's comment starts: a ``#`` at its start or after white space.
_COMMENT = re.compile(r"(?:^|\s)#")


def _option_value(raw: str) -> str:
    """A one-line option value as myst-parser reads it (``myst_parser/parsers/options.py``):
    every value is a string; a quoted one loses its quotes, a plain one is its text up
    to a ``#`` comment, colons, brackets and backticks included."""
    text = raw.strip()
    if text[:1] in {'"', "'"}:
        try:
            loaded = yaml.load(text, Loader=yaml.BaseLoader)  # noqa: S506 - strings only
        except yaml.YAMLError:
            return text
        return loaded if isinstance(loaded, str) else text
    comment = _COMMENT.search(text)
    return text[: comment.start()].rstrip() if comment else text


def _block_options(block: Sequence[str]) -> list[tuple[str, str, int]] | None:
    """(key, value, index in ``block``) of a ``---`` options block; None if it is none.

    Lines of one ``key: value`` each are read as :func:`_option_value` reads a value.
    A block with other lines (a value over several lines) is YAML, strings only, as
    PyYAML's ``BaseLoader`` reads it; a block that is no mapping is no options block.
    """
    lines = [
        (i, line)
        for i, line in enumerate(block)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    found = [(i, _BLOCK_OPTION.match(line)) for i, line in lines]
    if all(match for _, match in found):
        return [(m["key"], _option_value(m["value"] or ""), i) for i, m in found if m]
    try:
        loaded = yaml.load("\n".join(block), Loader=yaml.BaseLoader)  # noqa: S506 - strings only
    except yaml.YAMLError:
        return None
    if not isinstance(loaded, dict):
        return None
    return [(str(key), str(value), _key_line(block, key)) for key, value in loaded.items()]


def _options(body: tuple[str, ...], first_line: int) -> tuple[Option, ...]:
    """The options at the top of ``body``: ``:name: value`` lines, or a ``---`` block."""
    length = _options_length(body)
    if length and body[0].strip() == "---":
        block = _block_options(body[1 : length - 1]) or []
        return tuple(Option(key, value, first_line + 1 + index) for key, value, index in block)
    found = [_OPTION.match(line) for line in body[:length]]
    return tuple(
        Option(match["key"], _option_value(match["value"] or ""), first_line + index)
        for index, match in enumerate(found)
        if match
    )


def _key_line(block: Sequence[str], key: object) -> int:
    """The index in ``block`` of a YAML option's key (0 if not found)."""
    return next((i for i, line in enumerate(block) if line.lstrip().startswith(f"{key}:")), 0)
