"""The first page's release matrix, and the tuning page's table of the tutorial
settings that differ between releases, hold what the release data holds.

docs/_ext/release_matrix.py renders one row per release data file
(src/ray_serve_npu/releases/); these tests render it from the real data and from a
changed copy of it, and see the table follow the data.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from docutils import nodes
from ruamel.yaml import YAML

from ray_serve_npu import compat
from ray_serve_npu.releases import (
    DATA_DIR,
    OPERATING_SYSTEMS,
    PATH_RELEASES,
    RELEASES,
    UNREAD_RELEASES,
    NoPairingError,
    PairingError,
    check_pairing,
    differing_settings,
)
from ray_serve_npu.releases import releases as load_releases
from ray_serve_npu.releases.pairings import Pairings, Step, StepResult, pairings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from release_matrix import (  # noqa: E402
    TEXTS,
    ray_pairings,
    release_differences,
    release_matrix,
    texts,
    unread_releases,
)


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
    rows = _rows(release_matrix(RELEASES.values(), words, PATH_RELEASES, pairings()))
    assert list(rows) == list(reversed(RELEASES)), "one row per release, newest first"
    for tag, data in RELEASES.items():
        row = rows[tag]
        for version in (data.vllm, data.cann, data.torch_npu):
            assert version in row
        # Where the facts were read: the Git tag, or an archive where no tag is readable.
        read_in = words["read_in"].format(source=data.read_in)
        assert _flat(read_in).replace("`", "") in row
        # The repository once, then each image's tag, which together name the image.
        assert data.image_repository in row
        for kind in data.node_kinds:
            for os in OPERATING_SYSTEMS:
                repository, image_tag = data.image(kind, os).rsplit(":", 1)
                assert repository == data.image_repository and image_tag in row
        for kind in data.images.not_published:
            assert f"{kind}" in row
        pairing = data.pairing
        served = pairings().serving_rays(data.vllm)
        if pairing.ray is not None:
            assert f"Ray {pairing.ray}" in row
        elif served:
            assert _flat(words["measured_only"].format(rays=", ".join(served))) in row
        else:
            assert _flat(words["no_ray"].format(reason=pairing.reason)) in row
        # Every Ray measured beside the release's vLLM, from the pairing session's file.
        for pair in pairings().beside(data.vllm):
            line = words["served" if pair.serves else "stopped"].split("{date}")[0]
            assert line.format(who=f"Ray {pair.ray}", step=pair.steps[-1].step.value) in row
        assert (data.rules or words["no_rules"].strip("`").split("`")[0]) in row
        # A release whose notes narrow its claim says so, with the notes' lines.
        if data.scope is not None:
            assert _flat(data.scope.claim) in row and data.scope.source in row
        for path in ("serve_llm", "compose"):
            pin = getattr(PATH_RELEASES, path)
            # The cell renders `code` as a literal: its text has no backticks.
            mark = _flat(words[f"{path}_default"].format(why=pin.why)).replace("`", "")
            assert (mark in row) == (tag == pin.release), (path, tag)


def test_each_path_is_marked_in_the_row_of_the_release_it_names() -> None:
    # Each path's cell: the Ray Serve LLM mark in the fourth, the Compose one in the fifth.
    words = texts("en")
    pins = PATH_RELEASES.model_copy(
        update={"compose": PATH_RELEASES.compose.model_copy(update={"release": "v0.22.1rc1"})}
    )
    table = release_matrix(RELEASES.values(), words, pins, pairings())
    marked = {
        (row[0].astext(), column)
        for row in table.findall(nodes.row)
        if isinstance(row.parent, nodes.tbody)
        for column, path in ((3, "serve_llm"), (4, "compose"))
        if words[f"{path}_default"].split(":")[0] in row[column].astext()
    }
    assert marked == {
        (f"{PATH_RELEASES.serve_llm.release}", 3),
        ("v0.22.1rc1", 4),
    }


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
    before = _rows(release_matrix(RELEASES.values(), words, PATH_RELEASES, pairings()))[newest]
    # Nothing measured: the data's own pairing decides the cell.
    unmeasured = Pairings(command="nox -s pairings", pairs=[])
    after = _rows(
        release_matrix(load_releases(tmp_path).values(), words, PATH_RELEASES, unmeasured)
    )
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
    rows = _rows(release_matrix(load_releases(fewer).values(), words, PATH_RELEASES, pairings()))
    assert newest not in rows and len(rows) == len(RELEASES) - 1


@pytest.mark.parametrize("language", list(TEXTS))
def test_each_unread_release_has_a_row_with_what_is_known_and_what_was_measured(
    language: str,
) -> None:
    words = texts(language)
    heading, table = unread_releases(UNREAD_RELEASES.values(), pairings(), words)
    assert heading.astext() == words["unread_head"]
    rows = _rows(table)
    assert list(rows) == list(reversed(UNREAD_RELEASES)), "one row per release, newest first"
    for tag, data in UNREAD_RELEASES.items():
        row = rows[tag]
        assert data.month in row and f"vLLM {data.vllm}" in row
        assert _flat(data.unread_because) in row
        assert _flat(data.nearest_read or words["no_candidate"]) in row
        measured = pairings().beside(data.vllm)
        assert measured, f"test setup: nothing measured beside vLLM {data.vllm}"
        for pair in measured:
            line = words["served" if pair.serves else "stopped"].split("{date}")[0]
            assert line.format(who=f"Ray {pair.ray}", step=pair.steps[-1].step.value) in row
    # Nothing measured: the cell says so rather than staying empty.
    unmeasured = Pairings(command="nox -s pairings", pairs=[])
    _, bare = unread_releases(UNREAD_RELEASES.values(), unmeasured, words)
    assert all(words["measured_none"] in row for row in _rows(bare).values())


def test_both_editions_have_every_text() -> None:
    assert TEXTS["en"].keys() == TEXTS["zh_CN"].keys()
    assert TEXTS["zh_CN"]["head_images"] != TEXTS["en"]["head_images"]
    assert texts(None) is TEXTS["en"] and texts("fr") is TEXTS["en"]


def test_no_cell_reaches_the_catalogues() -> None:
    # Sphinx's gettext builder skips a text node without a source (a generated one),
    # so the catalogues keep no version from the table.
    table = release_matrix(RELEASES.values(), texts("en"), PATH_RELEASES, pairings())
    assert all(not node.source for node in table.findall(nodes.TextElement))


def test_the_first_page_shows_the_matrix() -> None:
    assert "```{release-matrix}\n```" in (DOCS / "index.md").read_text()
    assert '"release_matrix"' in (DOCS / "conf.py").read_text()


def _difference_rows(table: nodes.table) -> dict[str, list[str]]:
    """Each body row's cells, by its setting (second cell)."""
    return {
        row[1].astext(): [cell.astext() for cell in row]
        for row in table.findall(nodes.row)
        if isinstance(row.parent, nodes.tbody)
    }


def _copy_data(directory: Path) -> Path:
    directory.mkdir()
    for path in DATA_DIR.glob("v*.yaml"):
        shutil.copy(path, directory / path.name)
    return directory


def _edit(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    yaml = YAML(typ="safe", pure=True)
    data = yaml.load(path.read_text())
    edit(data)
    with path.open("w") as stream:
        yaml.dump(data, stream)


def test_differences_table_has_a_row_per_differing_setting_and_the_tutorials_lines() -> None:
    words = texts("en")
    rows = _difference_rows(release_differences(RELEASES.values(), words))
    newest_first = list(reversed(RELEASES.values()))
    expected = {
        name for kind in ("A2", "A3") for name in differing_settings(RELEASES.values(), kind)
    }
    assert set(rows) == expected | {words["tutorial_lines"]}
    for name in expected:
        for cell, data in zip(rows[name][2:], newest_first, strict=True):
            settings = data.run("A2").settings() | data.run("A3").settings()
            assert (cell == words["not_set"]) == (name not in settings)
    lines = rows[words["tutorial_lines"]][2:]
    for cell, data in zip(lines, newest_first, strict=True):
        for kind, run in data.deepseek_v4_flash.runs.items():
            assert f"{kind}: {run.lines}" in cell


def test_differences_table_follows_a_planted_difference(tmp_path: Path) -> None:
    copy = _copy_data(tmp_path / "planted")
    oldest, newest = list(RELEASES)[0], list(RELEASES)[-1]

    def plant(data: dict[str, Any]) -> None:
        data["deepseek_v4_flash"]["runs"]["A3"]["args"]["max-num-seqs"] = 99
        data["deepseek_v4_flash"]["runs"]["A2"]["env"]["PLANTED_VARIABLE"] = "1"

    _edit(copy / f"{newest}.yaml", plant)
    words = texts("en")
    before = _difference_rows(release_differences(RELEASES.values(), words))
    after = _difference_rows(release_differences(load_releases(copy).values(), words))
    assert "--max-num-seqs" not in before and "PLANTED_VARIABLE" not in before
    # One node kind each, the newest release first, the others' own values.
    seqs = after["--max-num-seqs"]
    assert seqs[0] == "A3" and seqs[2] == "99"
    assert seqs[-1] == str(RELEASES[oldest].run("A3").max_num_seqs)
    assert after["PLANTED_VARIABLE"] == ["A2", "PLANTED_VARIABLE", "1"] + [words["not_set"]] * (
        len(RELEASES) - 1
    )


def test_the_tuning_page_shows_the_differences() -> None:
    assert "```{release-differences}\n```" in (DOCS / "tuning.md").read_text()


def _pairings_rows(table: nodes.table) -> dict[str, list[str]]:
    """Each body row's cells' text, by the Ray in its first cell."""
    return {
        row[0].astext(): [" ".join(cell.astext().split()) for cell in row]
        for row in table.findall(nodes.row)
        if isinstance(row.parent, nodes.tbody)
    }


@pytest.mark.parametrize("language", list(TEXTS))
def test_the_pairings_table_has_each_pin_its_releases_and_what_was_measured(
    language: str,
) -> None:
    words = texts(language)
    table, _, installed = ray_pairings(
        compat.RAY_VLLM_PINS, RELEASES.values(), UNREAD_RELEASES.values(), pairings(), words
    )
    rows = _pairings_rows(table)
    assert list(rows) == list(reversed(compat.RAY_VLLM_PINS)), "one row per pin, newest first"
    for ray, pinned in compat.RAY_VLLM_PINS.items():
        _, pin, carried, measured = rows[ray]
        assert pin == pinned
        series = [
            d.tag for d in RELEASES.values() if d.vllm.split(".")[:2] == pinned.split(".")[:2]
        ]
        assert [tag for tag in RELEASES if tag in carried] == series
        pairs = pairings().beside_ray(ray)
        assert (measured == words["measured_none"]) == (not pairs)
        for pair in pairs:
            assert f"vLLM {pair.vllm}" in measured and pair.date in measured
    # A measured vLLM names the releases that carry it, the unread ones too: Ray 2.60.0
    # was measured beside the vLLM of each.
    newest = rows["2.60.0"][3].replace("（", " (").replace("）", ")")
    for tag, data in UNREAD_RELEASES.items():
        assert f"vLLM {data.vllm} ({tag})" in newest
    # How each pair was installed, as the session wrote it.
    assert len(list(installed.findall(nodes.definition_list_item))) == len(pairings().pairs)
    for pair in pairings().pairs:
        assert " ".join(pair.installed.split()) in installed.astext()


def test_a_pair_that_stops_shows_its_step_and_first_error() -> None:
    served = pairings().pairs[0]
    stopped = served.model_copy(
        update={
            "ray": "2.59.0",
            "steps": [
                served.steps[0],
                StepResult(step=Step.IMPORT, passed=False, seconds=1.0, error="ImportError: `x`"),
            ],
        }
    )
    measured = Pairings(command="nox -s pairings", pairs=[served, stopped])
    words = texts("en")
    table, *_ = ray_pairings(
        compat.RAY_VLLM_PINS, RELEASES.values(), UNREAD_RELEASES.values(), measured, words
    )
    cell = _pairings_rows(table)["2.59.0"][3]
    assert f"vLLM {stopped.vllm}" in cell and "stops at import" in cell
    # The error is quoted whole, its backticks made quotes so the code span holds.
    assert "ImportError: 'x'" in cell
    tags = [d.tag for d in RELEASES.values() if d.vllm == stopped.vllm]
    assert all(tag in cell for tag in tags)


def test_a_release_no_ray_pins_names_the_rays_measured_serving_it() -> None:
    (tag,) = [tag for tag, data in RELEASES.items() if data.pairing.ray is None]
    vllm = RELEASES[tag].vllm
    template = pairings().pairs[0]
    served = template.model_copy(update={"ray": "2.57.1", "vllm": vllm})
    stopped = template.model_copy(
        update={
            "ray": "2.56.1",
            "vllm": vllm,
            "steps": [
                *template.steps[:-1],
                StepResult(step=Step.SERVE, passed=False, seconds=1.0, error="TypeError: no"),
            ],
        }
    )
    words = texts("en")
    only_failed = Pairings(command="nox -s pairings", pairs=[stopped])
    row = _rows(release_matrix(RELEASES.values(), words, PATH_RELEASES, only_failed))[tag]
    assert "Not supported: no Ray pairs" in row
    assert f"Ray 2.56.1: stops at serve ({stopped.date}): TypeError: no" in row
    both = Pairings(command="nox -s pairings", pairs=[stopped, served])
    row = _rows(release_matrix(RELEASES.values(), words, PATH_RELEASES, both))[tag]
    assert _flat(words["measured_only"].format(rays="2.57.1")) in row
    assert "Not supported: no Ray pairs" not in row
    assert f"Ray 2.57.1: serves ({served.date})" in row


def test_no_supported_release_pairs_with_the_newest_ray_as_the_first_page_says() -> None:
    # index.md: "No supported vLLM-Ascend release pairs with Ray {{ newest_ray }} yet"; the
    # unread releases it names are those whose vLLM that Ray served (docs/conf.py).
    newest = compat.TESTED_RAY[-1]
    for tag in RELEASES:
        with pytest.raises((PairingError, NoPairingError)):
            check_pairing(tag, newest)
    assert (
        "No supported vLLM-Ascend release pairs\nwith Ray {{ newest_ray }} yet"
        in (DOCS / "index.md").read_text()
    )
