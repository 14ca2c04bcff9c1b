"""Check a translation against the pages: every message translated, code kept as written.

``python -m ray_serve_npu_tooling.docs.translations docs zh_CN`` extracts the pages' messages
with Sphinx's gettext builder and prints one ``file:line`` per message that the
language's ``.po`` file lacks, leaves empty or marks fuzzy, and per translation that
drops or changes an inline code span, role or substitution of its message.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from ray_serve_npu import myst
from ray_serve_npu_tooling.docs.site import built

# A role's own title (``{ref}`title <target>```) is prose to translate; its target is not.
_ROLE_TITLE = re.compile(r"^[\s\S]*?\s*(<[^<>]+>)$")


@dataclass(frozen=True)
class Problem:
    """One message of one page that the translation gets wrong."""

    po_file: Path
    line: int
    msgid: str
    what: str

    def format(self) -> str:
        return f"{self.po_file}:{self.line}: {self.what}: {self.msgid[:80]!r}"


def verbatim_parts(text: str) -> list[str]:
    """Code spans, roles' targets and substitutions (:func:`ray_serve_npu.myst.inline_parts`):
    what a translation must carry over unchanged. RST and MyST roles compare equal."""
    return sorted(f"{part.kind}:{_kept(part)}" for part in myst.inline_parts(text))


def _kept(part: myst.InlinePart) -> str:
    """What a translation keeps of a part: a role's target (``{term}`gang``` and
    ``{term}`一组 <gang>``` are one link), the rest as written."""
    if part.kind != "role":
        return part.text
    titled = _ROLE_TITLE.fullmatch(part.text)
    return titled.group(1) if titled else f"<{part.text.strip()}>"


def _read(path: Path) -> Catalog:
    with path.open("rb") as stream:
        return read_po(stream)


def check_catalogs(pot_dir: Path, po_dir: Path) -> Iterator[Problem]:
    """Compare each page's template (``.pot``) with the language's ``.po`` file."""
    for pot in sorted(pot_dir.glob("*.pot")):
        po_file = po_dir / f"{pot.stem}.po"
        translated = _read(po_file) if po_file.exists() else Catalog()
        for message in _read(pot):
            if not message.id:
                continue
            found = translated.get(message.id)
            if found is None or not found.string:
                yield Problem(po_file, found.lineno if found else 0, message.id, "untranslated")
            elif found.fuzzy:
                yield Problem(po_file, found.lineno, message.id, "fuzzy")
            elif verbatim_parts(message.id) != verbatim_parts(str(found.string)):
                yield Problem(po_file, found.lineno, message.id, "code or names changed")


def check_language(docs: Path, language: str) -> list[Problem]:
    """Extract the pages' messages and check ``docs/locale/<language>`` against them."""
    with built(docs, builder="gettext") as pot_dir:
        po_dir = docs / "locale" / language / "LC_MESSAGES"
        return list(check_catalogs(pot_dir, po_dir))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ray_serve_npu_tooling.docs.translations", description=__doc__
    )
    parser.add_argument("docs", type=Path, help="the site's source directory")
    parser.add_argument("language", help="a language under docs/locale, such as zh_CN")
    args = parser.parse_args(argv)
    problems = check_language(args.docs, args.language)
    for problem in problems:
        print(problem.format())
    print(f"{len(problems)} translation problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
