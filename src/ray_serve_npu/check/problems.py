"""Input the checker cannot read: one line for the file, and exit status 2."""

from __future__ import annotations

from pathlib import Path

#: Configurations are kilobytes; a file this large is not one.
MAX_BYTES = 10 * 2**20


class InputError(Exception):
    """A file that is not what the checker reads, or not readable as what it claims to be.

    Reported as one line, ``FILE[:LINE]: problem. Fix: fix``, instead of findings: a
    file the checker could not read has no findings to trust. Parsers raise it without
    the file; ``check_file`` fills ``file`` in.
    """

    def __init__(self, problem: str, fix: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.line = line
        self.file: str | None = None

    def shifted(self, first_line: int) -> InputError:
        """The same error for text that starts on ``first_line`` of its file."""
        if self.line is not None:
            self.line += first_line - 1
        return self

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line) if p is not None)
        return f"{where}: {self.problem}. Fix: {self.fix}" if where else self.problem


class NothingToCheck(InputError):
    """A file the checker recognises nothing in: an error when named, skipped when found
    in a directory the checker walks."""


def read_text(path: Path) -> str:
    """The text of a configuration file: a regular UTF-8 text file of at most ``MAX_BYTES``."""
    if not path.is_file():
        raise InputError("not a regular file", "pass a file or a directory")
    if path.stat().st_size > MAX_BYTES:
        raise InputError(
            f"larger than {MAX_BYTES // 2**20} MiB, which no configuration is",
            "pass the configuration file itself",
        )
    data = path.read_bytes()
    if b"\0" in data:
        raise InputError("a binary file, not text", "pass the configuration's text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text (byte {error.start} cannot be decoded)",
            "save the file as UTF-8",
            data[: error.start].count(b"\n") + 1,
        ) from None
