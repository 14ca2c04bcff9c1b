"""The models page's table (docs/_ext/nightly_runs.py): its "How tested" column says
served exactly for the runs the fake-NPU tier serves, and checked for every other run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.served_runs import FAKE_TIER_SERVED_RUNS

from ray_serve_npu import compat
from ray_serve_npu.model_recipes import find_run, run_key
from ray_serve_npu.releases.nightly import nightly_runs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from nightly_runs import TEXTS, nightly_table  # noqa: E402

TAG = compat.VLLM_ASCEND.tag


def _rows(language: str) -> dict[str, list[str]]:
    """Each row's cells as text, by the run's name in its first cell: "(name)"."""
    runs = nightly_runs(TAG)
    table = nightly_table(runs, TEXTS[language], frozenset(FAKE_TIER_SERVED_RUNS))
    (body,) = table.findall(lambda node: node.tagname == "tbody")
    rows = [[cell.astext() for cell in row.children] for row in body.children]
    by_name = {cells[0].rsplit("(", 1)[1].rstrip(")"): cells for cells in rows}
    assert sorted(by_name) == sorted(run_key(run) for run in runs)
    return by_name


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_how_tested_says_served_for_the_served_runs_alone(language: str) -> None:
    words = TEXTS[language]
    tested = {name: cells[-1] for name, cells in _rows(language).items()}
    assert {name for name, cell in tested.items() if cell == words["served"]} == set(
        FAKE_TIER_SERVED_RUNS
    )
    assert {cell for name, cell in tested.items() if name not in FAKE_TIER_SERVED_RUNS} == {
        words["checked"]
    }


def test_every_served_run_is_a_run_of_the_pinned_release() -> None:
    assert FAKE_TIER_SERVED_RUNS
    for name in FAKE_TIER_SERVED_RUNS:
        assert run_key(find_run(name, TAG)) == name


def test_a_run_the_schedule_alone_names_gets_that_node_kind() -> None:
    rows = _rows("en")
    # Named by the CI's schedule only.
    assert rows["Qwen3-30B-A3B-W8A8-TP1"][1] == "A3"
    # Named by the run's own name.
    assert rows["Qwen3-32B-W8A8-single-a2"][1] == "A2"
    unnamed = [run_key(r) for r in nightly_runs(TAG) if not r.node_kinds]
    assert unnamed, "the pinned release has configs its schedule doesn't run"
    for name in unnamed:
        assert rows[name][1] == TEXTS["en"]["not_named"]
