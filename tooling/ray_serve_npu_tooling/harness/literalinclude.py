"""The lines a ``literalinclude`` directive shows, read by Sphinx's own reader."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ray_serve_npu.myst import Option

from .problems import Location, PageProblem


@dataclass(frozen=True)
class Included:
    """What a literalinclude shows."""

    file: Path
    text: str
    #: The file line of the first shown line, where the shown lines are one run of the file.
    first_file_line: int | None
    #: ``:language:``, else guessed from the file name as Sphinx's highlighter would.
    language: str


_LANGUAGE_BY_SUFFIX = {
    ".py": "python",
    ".sh": "bash",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
}


@contextmanager
def _sphinx_warnings() -> Iterator[list[str]]:
    """Collect what Sphinx's reader only logs (an out-of-range ``:lines:``) so it can fail."""
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logger = logging.getLogger("sphinx")
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def read_literalinclude(
    page: Path, line: int, argument: str, options: Sequence[Option], docs_root: Path
) -> Included:
    """Resolve the directive at ``page:line`` to exactly the lines the built page shows."""
    # Sphinx is imported here: pages without a literalinclude need no Sphinx.
    from sphinx.config import Config
    from sphinx.directives.code import LiteralInclude, LiteralIncludeReader

    where = Location(page, line)
    converted: dict[str, object] = {}
    for option in options:
        convert = LiteralInclude.option_spec.get(option.name)
        if convert is None:
            raise PageProblem(
                Location(page, option.line),
                f"literalinclude has no option :{option.name}:",
                f"use one of {', '.join(sorted(LiteralInclude.option_spec))}",
            )
        try:
            converted[option.name] = convert(option.value)
        except ValueError as error:
            raise PageProblem(
                Location(page, option.line), f"bad :{option.name}: value: {error}", "fix the value"
            ) from error
    # As in Sphinx: a leading slash is relative to the docs source root.
    file = docs_root / argument[1:] if argument.startswith("/") else page.parent / argument
    if not file.is_file():
        raise PageProblem(
            where,
            f"literalinclude file {argument} does not exist ({file})",
            "fix the path (relative to the page) or add the file",
        )
    try:
        with _sphinx_warnings() as warnings:
            text, _ = LiteralIncludeReader(file, converted, Config()).read()
    except (ValueError, OSError, UnicodeError) as error:
        raise PageProblem(
            _option_location(page, line, options, str(error)),
            f"literalinclude {argument}: {error}",
            "make the marker or line range match the file (the marker must appear in it)",
        ) from error
    if warnings:
        raise PageProblem(
            _option_location(page, line, options, warnings[0]),
            f"literalinclude {argument}: {warnings[0]}",
            "make the line range fit the file",
        )
    language = str(converted.get("language") or _LANGUAGE_BY_SUFFIX.get(file.suffix, ""))
    if not language and file.name == "Dockerfile":
        language = "dockerfile"
    return Included(file, text, _first_file_line(file, converted), language)


def _first_file_line(file: Path, options: dict[str, object]) -> int | None:
    """Sphinx's own ``lineno-match`` arithmetic, where the shown lines are one run of the file."""
    from sphinx.config import Config
    from sphinx.directives.code import LiteralIncludeReader

    if {"prepend", "append", "diff"} & options.keys():
        return None
    reader = LiteralIncludeReader(file, {**options, "lineno-match": True}, Config())
    try:
        reader.read()
    except ValueError:  # disjoint :lines:
        return None
    return reader.lineno_start


def _option_location(page: Path, line: int, options: Sequence[Option], message: str) -> Location:
    """The option a Sphinx error names (by its value), else the directive line."""
    for option in options:
        if option.value and option.value in message:
            return Location(page, option.line)
    if "line" in message:
        lines_option = next((o for o in options if o.name == "lines"), None)
        if lines_option is not None:
            return Location(page, lines_option.line)
    return Location(page, line)
