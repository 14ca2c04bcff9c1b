"""Release notes come from the changelog's section for the version, and a tag whose
version or date the changelog doesn't back is refused with the fix."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.release_notes import (
    ReleaseNotesError,
    notes_markdown,
    release_notes,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

#: The shape Sphinx's xml builder gives a changelog page.
CHANGELOG = """
<document>
  <section><title>Changelog</title>
    <paragraph>Newest first.</paragraph>
    <section><title>1.1.0 {when}</title>
      <paragraph>The second
          version.</paragraph>
      <section><title>The plugin</title>
        <bullet_list bullet="-">
          <list_item><paragraph>The <literal>npu</literal> kind
              (<reference internal="1" refuri="api"><inline classes="doc">API
              reference</inline></reference>), see
              <reference refuri="https://docs.ray.io/">Ray's docs</reference>.</paragraph>
          </list_item>
          <list_item><paragraph><emphasis>Faster</emphasis> start.</paragraph></list_item>
        </bullet_list>
      </section>
    </section>
    <section><title>1.0.0 (2026-11-01)</title>
      <paragraph>The first version.</paragraph>
    </section>
  </section>
</document>
"""


def _changelog(when: str = "(2027-01-10)") -> ET.Element:
    return ET.fromstring(CHANGELOG.format(when=when))


def test_the_notes_are_the_versions_section_as_markdown() -> None:
    assert notes_markdown(_changelog(), "1.1.0", tag="v1.1.0") == (
        "The second version.\n"
        "\n"
        "## The plugin\n"
        "\n"
        "- The `npu` kind (*API reference*), see [Ray's docs](https://docs.ray.io/).\n"
        "- *Faster* start.\n"
    )
    assert notes_markdown(_changelog(), "1.0.0") == "The first version.\n"


def test_a_version_without_a_section_is_named_with_the_fix() -> None:
    with pytest.raises(ReleaseNotesError, match=r"no section for 1\.2\.0: add `## 1\.2\.0"):
        notes_markdown(_changelog(), "1.2.0")


def test_a_tag_that_is_not_the_version_is_refused() -> None:
    with pytest.raises(ReleaseNotesError, match=r"tag v1\.0\.0 does not name .* 1\.1\.0"):
        notes_markdown(_changelog(), "1.1.0", tag="v1.0.0")


def test_an_unreleased_section_can_be_built_but_not_tagged() -> None:
    unreleased = _changelog("(unreleased)")
    assert notes_markdown(unreleased, "1.1.0").startswith("The second version.")
    with pytest.raises(ReleaseNotesError, match=r"still says \(unreleased\): put the release"):
        notes_markdown(unreleased, "1.1.0", tag="v1.1.0")


def test_what_markdown_notes_cant_show_is_named() -> None:
    changelog = _changelog()
    section = changelog.find("section/section")
    assert section is not None
    ET.SubElement(section, "table")
    with pytest.raises(ReleaseNotesError, match="<table>"):
        notes_markdown(changelog, "1.1.0")


def test_the_changelog_gives_this_version_its_notes() -> None:
    # The real page, built as the release does (Sphinx, warnings as errors).
    notes = release_notes(ROOT / "docs", VERSION)
    assert "## The plugin" in notes
    assert "{{" not in notes and "{doc}" not in notes and "{ref}" not in notes
