"""A release's notes: the changelog page's section for its version, as Markdown.

``python -m ray_serve_npu_tooling.docs.release_notes docs 0.1.0 notes.md`` builds the site's
pages as docutils XML with Sphinx (warnings are errors), so substitutions and
cross-references arrive resolved, finds the section of ``docs/changelog.md``
whose title starts with the version, and writes it as Markdown for a release
page. ``--tag v0.1.0`` also requires the tag to name that version and the section
to carry its release date, not ``(unreleased)``.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from ray_serve_npu_tooling.docs.site import built

CHANGELOG = "changelog"
UNRELEASED = "(unreleased)"


class ReleaseNotesError(ValueError):
    """The changelog can't give this release its notes; the message names the fix."""


def _text(value: str | None) -> str:
    # The XML writer indents continuation lines; Markdown folds whitespace anyway.
    return re.sub(r"\s+", " ", value or "")


def _inline(element: ET.Element) -> str:
    parts = [_text(element.text)]
    for child in element:
        parts += [_inline_element(child), _text(child.tail)]
    return "".join(parts)


def _inline_element(element: ET.Element) -> str:
    inner = _inline(element)
    if element.tag == "literal":
        fence = "``" if "`" in inner else "`"
        return f"{fence}{inner}{fence}"
    if element.tag == "emphasis":
        return f"*{inner}*"
    if element.tag == "strong":
        return f"**{inner}**"
    if element.tag == "reference":
        uri = element.get("refuri", "")
        if uri.startswith(("https://", "http://")):
            return f"[{inner}]({uri})"
        # A page of the site has no address a release page could link to: name it.
        return f"*{inner}*"
    if element.tag == "inline":
        return inner
    if element.tag == "target":
        return ""
    raise ReleaseNotesError(
        f"docs/{CHANGELOG}.md: release notes can't show <{element.tag}> ({inner!r}): "
        "use text, inline code, emphasis and links in the changelog"
    )


def _title(section: ET.Element) -> str:
    title = section.find("title")
    return "" if title is None else _inline(title).strip()


def _blocks(element: ET.Element, depth: int, indent: str = "") -> list[str]:
    lines: list[str] = []
    for child in element:
        if child.tag == "title" or child.tag == "target":
            continue
        if child.tag == "section":
            title = _title(child)
            lines += [f"{'#' * depth} {title}", ""]
            lines += _blocks(child, depth + 1)
        elif child.tag == "paragraph":
            lines += [indent + _inline(child).strip(), ""]
        elif child.tag == "bullet_list":
            for item in child:
                body = _blocks(item, depth, indent + "  ")
                body = [line for line in body if line]
                if not body:
                    continue
                lines.append(f"{indent}- {body[0].removeprefix(indent + '  ')}")
                lines += body[1:]
            lines.append("")
        else:
            raise ReleaseNotesError(
                f"docs/{CHANGELOG}.md: release notes can't show <{child.tag}>: "
                "use headings, paragraphs and bullet lists in the changelog"
            )
    return lines


def version_section(changelog: ET.Element, version: str) -> ET.Element:
    """The section whose title starts with ``version`` (``0.1.0 (2027-01-10)``)."""
    for section in changelog.iter("section"):
        title = _title(section).split()
        if title and title[0] == version:
            return section
    raise ReleaseNotesError(
        f"docs/{CHANGELOG}.md has no section for {version}: add `## {version} (<release date>)` "
        "with this release's changes"
    )


def notes_markdown(changelog: ET.Element, version: str, *, tag: str | None = None) -> str:
    """The version's section, its subsections as ``##`` headings, as Markdown."""
    section = version_section(changelog, version)
    if tag is not None:
        if tag != f"v{version}":
            raise ReleaseNotesError(
                f"tag {tag} does not name the package's version {version}: tag v{version}, "
                "or change the version in pyproject.toml"
            )
        title = _title(section)
        if UNRELEASED in title:
            raise ReleaseNotesError(
                f"docs/{CHANGELOG}.md: the {version} section still says {UNRELEASED}: "
                f"put the release date in its title before tagging {tag}"
            )
    return "\n".join(_blocks(section, depth=2)).strip() + "\n"


def release_notes(docs: Path, version: str, *, tag: str | None = None) -> str:
    """Build the pages as XML (warnings are errors) and return the version's notes."""
    with built(docs, builder="xml") as out:
        changelog = ET.parse(out / f"{CHANGELOG}.xml").getroot()
    return notes_markdown(changelog, version, tag=tag)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ray_serve_npu_tooling.docs.release_notes",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("docs", type=Path, help="the site's source directory")
    parser.add_argument("version", help="the package's version, as in pyproject.toml")
    parser.add_argument("out", type=Path, help="where to write the notes (Markdown)")
    parser.add_argument("--tag", help="the release tag: must be v<version>")
    args = parser.parse_args(argv)
    try:
        notes = release_notes(args.docs, args.version, tag=args.tag)
    except ReleaseNotesError as error:
        print(f"release notes: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:
        # The site did not build: Sphinx's warnings, each with its file and line.
        print(
            f"release notes: the pages must build without warnings first: {error}", file=sys.stderr
        )
        return 1
    args.out.write_text(notes)
    print(f"release notes: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
