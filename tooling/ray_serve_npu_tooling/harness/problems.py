"""The one error type of the harness: a problem at a page's line, with its fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    """A line of a file, shown relative to the repository root."""

    path: Path
    line: int

    def __str__(self) -> str:
        return f"{display_path(self.path)}:{self.line}"


class PageProblem(Exception):
    """Something on a page is wrong; says where, what, and how to fix it."""

    def __init__(self, where: Location, what: str, fix: str) -> None:
        super().__init__(f"{where}: {what}\n  fix: {fix}")
        self.where = where
        self.what = what
        self.fix = fix


def display_path(path: Path) -> str:
    """``path`` relative to the current directory (pytest's, the root) where it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())
