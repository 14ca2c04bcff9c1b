"""Paths the checker's tests read."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"


def line_of(text: str, needle: str) -> int:
    """The 1-based line of ``text`` where ``needle`` first occurs."""
    return text[: text.index(needle)].count("\n") + 1
