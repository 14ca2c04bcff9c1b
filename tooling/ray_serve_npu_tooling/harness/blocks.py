"""A page as the harness sees it: its blocks, each with language, shown text and marker."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from pathlib import Path

from ray_serve_npu import myst

from .fences import Fence, find_fences, line_offsets
from .literalinclude import Included, read_literalinclude
from .markers import MARKER_LINE, Marker, MarkerKind, parse_marker
from .problems import Location, PageProblem, display_path
from .substitutions import code_substituter


class Language(enum.Enum):
    PYTHON = "python"
    SHELL = "shell"
    YAML = "yaml"
    JSON = "json"
    TOML = "toml"
    DOCKERFILE = "dockerfile"
    #: Shown only: ``text`` and anything else without a checker (named in the summary).
    OTHER = "other"


_LANGUAGES = {
    "python": Language.PYTHON,
    "py": Language.PYTHON,
    "python3": Language.PYTHON,
    "bash": Language.SHELL,
    "sh": Language.SHELL,
    "shell": Language.SHELL,
    "console": Language.SHELL,
    "yaml": Language.YAML,
    "yml": Language.YAML,
    "json": Language.JSON,
    "toml": Language.TOML,
    "dockerfile": Language.DOCKERFILE,
    "docker": Language.DOCKERFILE,
}
#: ``console`` blocks mark commands with a prompt; the rest of them is output.
_CONSOLE_PROMPT = "$ "


@dataclass(frozen=True)
class Block:
    page: Path
    #: Page line of the opening fence.
    line: int
    #: The language as written (``bash``), and what it is checked as.
    language_name: str
    language: Language
    #: The code the page shows (a console block: its commands only).
    text: str
    #: Page line of the first line of ``text``; None for a literalinclude.
    text_line: int | None
    include: Included | None
    marker: Marker | None

    @property
    def kind(self) -> MarkerKind | None:
        return self.marker.kind if self.marker else None

    @property
    def label(self) -> str:
        """Short name for test ids: ``bash``, ``bash-server``, ``literalinclude-python``."""
        base = f"literalinclude-{self.language_name}" if self.include else self.language_name
        return f"{base}-{self.kind.value}" if self.kind else base

    @property
    def where(self) -> Location:
        return Location(self.page, self.line)

    def problem(self, text_lineno: int, what: str, fix: str) -> PageProblem:
        """A problem at line ``text_lineno`` (1-based) of the shown text, located on the page."""
        if self.text_line is not None:
            return PageProblem(Location(self.page, self.text_line + text_lineno - 1), what, fix)
        assert self.include is not None
        source = display_path(self.include.file)
        file_line = self.include.first_file_line
        shown = f"{source}:{file_line + text_lineno - 1}" if file_line else source
        return PageProblem(self.where, f"{what} (in the included {shown})", fix)


@dataclass(frozen=True)
class PageItem:
    """One thing to test on a page: a block, or a problem found while reading the page."""

    start: int
    end: int
    block: Block | None
    problem: PageProblem | None


def read_page(
    text: str, page: Path, docs_root: Path, including: tuple[Path, ...] = ()
) -> list[PageItem]:
    """Every block of the page, in order, with problems as items so the rest still runs.

    Markers are MyST comments (:func:`ray_serve_npu.myst.comments`): a ``% test:`` line
    inside a block of code is code, not a marker. The blocks of a part of another page
    that the page ``{include}``s are the page's too, with that page's markers and lines:
    a reader runs them here, in this order (``including``: the pages that include this
    one, so that a page never includes itself).
    """
    try:
        fences = find_fences(text, page)
    except PageProblem as problem:
        return [PageItem(0, len(text), None, problem)]
    lines = myst.lines(text)
    comments = {line: f"%{comment}" for line, comment in myst.comments(text)}
    offsets = line_offsets(text)
    items: list[PageItem] = []
    # A marker before an {include} marks nothing: the included blocks carry their own.
    marker_lines = {fence.line - 1 for fence in fences if fence.fence.directive != "include"}
    for number, comment in comments.items():
        if MARKER_LINE.match(comment.strip()) and number not in marker_lines:
            problem = PageProblem(
                Location(page, number),
                "test marker not followed by a block",
                "put the marker on the line right before the block's opening fence "
                "(an included block's marker belongs in the page it is included from)",
            )
            start = offsets[number - 1]
            items.append(PageItem(start, start + len(lines[number - 1]), None, problem))
    for fence in fences:
        if fence.fence.directive == "include":
            items.extend(_included_items(fence, page, docs_root, (*including, page)))
            continue
        try:
            marker = _marker_before(fence, comments, page)
            items.append(
                PageItem(fence.start, fence.end, _block(fence, marker, page, docs_root), None)
            )
        except PageProblem as problem:
            items.append(PageItem(fence.start, fence.end, None, problem))
    return sorted(items, key=lambda item: item.start)


def _included_items(
    found: Fence, page: Path, docs_root: Path, including: tuple[Path, ...]
) -> list[PageItem]:
    """The items of the part of a page that ``found`` (an ``{include}``) brings in, each
    given a slice of the directive's text as its span (Sybil's regions can't overlap).

    Sphinx includes the text between the first ``:start-after:`` string and the next
    ``:end-before:`` one; a part is a page's ``% __NAME_start__`` / ``% __NAME_end__``
    lines, so its blocks are those between the lines that hold the two strings.
    """
    fence = found.fence
    where = Location(page, fence.line)
    target = (page.parent / fence.argument).resolve()
    after, before = fence.option("start-after"), fence.option("end-before")
    if target.suffix != ".md" or not (after or before):
        # Not a marked part of a page: a fragment the build generates (`_generated/`),
        # or of another kind; Sphinx reports one that is missing.
        return []
    problem = None
    if target in including:
        problem = PageProblem(where, f"{fence.argument} includes itself", "remove the include")
    elif not target.is_file():
        problem = PageProblem(
            where, f"included page {fence.argument} does not exist", "fix the path"
        )
    if problem is not None:
        return [PageItem(found.start, found.end, None, problem)]
    text = code_substituter(docs_root)(target.read_text(encoding="utf-8"))
    text_lines = myst.lines(text)
    first, last = 0, len(text_lines) + 1
    if after:
        first = next((n for n, line in enumerate(text_lines, 1) if after in line), 0)
    if before:
        last = next((n for n, line in enumerate(text_lines, 1) if n > first and before in line), 0)
    if (after and not first) or (before and not last):
        missing = f"{after!r}" if after and not first else f"{before!r} after {after!r}"
        problem = PageProblem(
            where,
            f"{fence.argument} has no line with {missing}",
            "name a part the included page marks with `% __NAME_start__` / `% __NAME_end__`",
        )
        return [PageItem(found.start, found.end, None, problem)]
    # By offsets in the included page's text, not by lines: an item that page includes
    # in turn carries the line of a third page, but its span is in this one's text.
    offsets = line_offsets(text)
    begin, end = offsets[first], offsets[max(last - 1, 0)] if before else len(text)
    part = [
        item
        for item in _read_included(text, target, docs_root, including)
        if begin <= item.start < end
    ]
    width = max(1, (found.end - found.start) // max(1, len(part)))
    return [
        PageItem(found.start + n * width, found.start + (n + 1) * width, item.block, item.problem)
        for n, item in enumerate(part)
    ]


@functools.lru_cache(maxsize=32)
def _read_included(
    text: str, page: Path, docs_root: Path, including: tuple[Path, ...]
) -> tuple[PageItem, ...]:
    # A page includes many parts of one page: read it once.
    return tuple(read_page(text, page, docs_root, including))


def _marker_before(fence: Fence, comments: dict[int, str], page: Path) -> Marker | None:
    comment = comments.get(fence.line - 1)
    if comment is None:
        return None
    return parse_marker(comment, Location(page, fence.line - 1))


def _block(found: Fence, marker: Marker | None, page: Path, docs_root: Path) -> Block:
    fence = found.fence
    where = Location(page, fence.line)
    if fence.directive == "literalinclude":
        if any(line.strip() for line in fence.content):
            raise PageProblem(
                where, "literalinclude takes no content", "move the lines into the file"
            )
        included = read_literalinclude(page, fence.line, fence.argument, fence.options, docs_root)
        if not included.language:
            raise PageProblem(
                where,
                "literalinclude of a file of unknown type",
                "add :language: (python, bash, yaml...)",
            )
        return _with_language(
            page, fence.line, included.language, included.text, None, included, marker
        )
    language_name, text = fence.language, list(fence.content)
    text_line = fence.content_line
    if not language_name:
        raise PageProblem(where, "a fence without a language", "name it: bash, python, text...")
    if language_name == "console":
        # Output lines become empty lines, so that line numbers stay the page's.
        text = [
            line[len(_CONSOLE_PROMPT) :] if line.startswith(_CONSOLE_PROMPT) else ""
            for line in text
        ]
    return _with_language(page, fence.line, language_name, "\n".join(text), text_line, None, marker)


def _with_language(
    page: Path,
    line: int,
    language_name: str,
    text: str,
    text_line: int | None,
    include: Included | None,
    marker: Marker | None,
) -> Block:
    language_name = language_name.lower()
    language = _LANGUAGES.get(language_name, Language.OTHER)
    return Block(page, line, language_name, language, text, text_line, include, marker)


def named_block(page: Path, docs_root: Path, name: str) -> Block:
    """The one block between the page's ``% __NAME_start__`` and ``% __NAME_end__`` lines:
    the part other pages ``{include}``, and that a test names to join what it starts. Its
    text is what the harness runs: after the build's code substitutions.

    Raises :class:`PageProblem` where the page has not exactly one block there.
    """
    text = code_substituter(docs_root)(page.read_text(encoding="utf-8"))
    comments = {f"%{comment}".strip(): line for line, comment in myst.comments(text)}
    start, end = comments.get(f"% __{name}_start__"), comments.get(f"% __{name}_end__")
    found = [
        item.block
        for item in read_page(text, page, docs_root)
        if item.block is not None and start is not None and end is not None
        # The page's own blocks: an included one carries another page's line.
        if item.block.page == page and start < item.block.line < end
    ]
    if len(found) != 1:
        raise PageProblem(
            Location(page, start or 1),
            f"{len(found)} blocks between `% __{name}_start__` and `% __{name}_end__`",
            "keep exactly one code block between the two marker lines",
        )
    return found[0]
