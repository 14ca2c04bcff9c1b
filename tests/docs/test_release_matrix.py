"""The first page's release matrix holds what the release data holds.

docs/_ext/release_matrix.py renders one row per release data file
(src/ray_serve_npu/releases/); these tests render it from the real data and from a
changed copy of it, and see the table follow the data.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from docutils import nodes
from ruamel.yaml import YAML

from ray_serve_npu.releases import DATA_DIR, DEFAULT_RELEASE, OPERATING_SYSTEMS, RELEASES
from ray_serve_npu.releases import releases as load_releases

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from release_matrix import TEXTS, release_matrix, texts  # noqa: E402


def _rows(table: nodes.table) -> dict[str, str]:
    """Each body row's text, by the release tag in its first cell."""
    rows = {}
    for row in table.findall(nodes.row):
        if isinstance(row.parent, nodes.tbody):
            first = row[0].astext().split()[0]
            rows[first] = " ".join(row.astext().split())
    return rows


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("language", list(TEXTS))
def test_every_release_has_a_row_with_its_data(language: str) -> None:
    words = texts(language)
    rows = _rows(release_matrix(RELEASES.values(), words, DEFAULT_RELEASE.tag))
    assert list(rows) == list(reversed(RELEASES)), "one row per release, newest first"
    for tag, data in RELEASES.items():
        row = rows[tag]
        for version in (data.vllm, data.cann, data.torch_npu):
            assert version in row
        for kind in data.node_kinds:
            for os in OPERATING_SYSTEMS:
                assert data.image(kind, os) in row
        for kind in data.images.not_published:
            assert f"{kind}" in row
        pairing = data.pairing
        if pairing.ray is not None:
            assert f"Ray {pairing.ray}" in row
        else:
            assert _flat(words["no_ray"].format(reason=pairing.reason)) in row
            for run in pairing.measured:
                assert f"ray {run.ray}" in row and f"vLLM {run.vllm}" in row and run.date in row
                assert all(_flat(step) in row for step in run.shown + run.not_shown)
        assert (data.rules or words["no_rules"].strip("`").split("`")[0]) in row
        assert (words["default"] in row) == (tag == DEFAULT_RELEASE.tag)


def test_the_table_follows_a_change_in_the_data(tmp_path: Path) -> None:
    for path in DATA_DIR.glob("v*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    newest = list(RELEASES)[-1]
    yaml = YAML(typ="safe", pure=True)
    changed = tmp_path / f"{newest}.yaml"
    data = yaml.load(changed.read_text())
    data["stack"]["cann"]["version"] = "77.7.7"
    data["pairing"] = {"ray": None, "match": None, "reason": "a planted reason"}
    with changed.open("w") as stream:
        yaml.dump(data, stream)

    words = texts("en")
    before = _rows(release_matrix(RELEASES.values(), words, DEFAULT_RELEASE.tag))[newest]
    after = _rows(release_matrix(load_releases(tmp_path).values(), words, DEFAULT_RELEASE.tag))
    assert "77.7.7" in after[newest] and "77.7.7" not in before
    assert "no Ray pairs: a planted reason" in after[newest]
    assert f"CANN {RELEASES[newest].cann}," not in after[newest]

    # A release whose data file goes away loses its row (a new directory: the loader
    # caches each directory it has read).
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    for path in tmp_path.glob("v*.yaml"):
        if path != changed:
            shutil.copy(path, fewer / path.name)
    rows = _rows(release_matrix(load_releases(fewer).values(), words, DEFAULT_RELEASE.tag))
    assert newest not in rows and len(rows) == len(RELEASES) - 1


def test_both_editions_have_every_text() -> None:
    assert TEXTS["en"].keys() == TEXTS["zh_CN"].keys()
    assert TEXTS["zh_CN"]["head_images"] != TEXTS["en"]["head_images"]
    assert texts(None) is TEXTS["en"] and texts("fr") is TEXTS["en"]


def test_no_cell_reaches_the_catalogues() -> None:
    # Sphinx's gettext builder skips a text node without a source (a generated one),
    # so the catalogues keep no version from the table.
    table = release_matrix(RELEASES.values(), texts("en"), DEFAULT_RELEASE.tag)
    assert all(not node.source for node in table.findall(nodes.TextElement))


def test_the_first_page_shows_the_matrix() -> None:
    assert "```{release-matrix}\n```" in (DOCS / "index.md").read_text()
    assert '"release_matrix"' in (DOCS / "conf.py").read_text()
