"""The models page's tables (docs/_ext/nightly_runs.py): the runs' "How tested" column says
served exactly for the runs the fake-NPU tier serves, dry-run exactly for the other runs
that answered in the committed dry-run of every model, and checked for every other run; a
multi-node run shows its nodes; every multi-node config set aside is listed with why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.model_dry_runs import answered_runs, committed_dry_runs
from ray_serve_npu_tooling.served_runs import (
    FAKE_TIER_COMPOSE_RUN,
    FAKE_TIER_SERVED_RUNS,
    fake_tier_served,
)

from ray_serve_npu import compat
from ray_serve_npu.model_recipes import find_run, run_key
from ray_serve_npu.releases.architectures import family_of
from ray_serve_npu.releases.runs import serve_runs, set_aside

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from nightly_runs import TEXTS, nightly_table, refused_runs, set_aside_table  # noqa: E402

TAG = compat.VLLM_ASCEND.tag
REFUSED = refused_runs(list(serve_runs(TAG)))
DRY_RUN = answered_runs(committed_dry_runs(DOCS))


def _rows(language: str) -> dict[str, list[str]]:
    """Each row's cells as text, by the run's name in its first cell: "(name)"."""
    runs = list(serve_runs(TAG))
    table = nightly_table(runs, TEXTS[language], fake_tier_served(), REFUSED, DRY_RUN)
    (body,) = table.findall(lambda node: node.tagname == "tbody")
    rows = [[cell.astext() for cell in row.children] for row in body.children]
    by_name = {cells[0].rsplit("(", 1)[1].rstrip(")"): cells for cells in rows}
    assert sorted(by_name) == sorted(run_key(run) for run in runs)
    return by_name


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_how_tested_says_served_for_the_served_runs_alone(language: str) -> None:
    words = TEXTS[language]
    tested = {name: cells[-1] for name, cells in _rows(language).items()}
    served = set(FAKE_TIER_SERVED_RUNS.values())
    assert {name for name, cell in tested.items() if cell == words["served"]} == served
    composed = {name for name, cell in tested.items() if cell == words["served_compose"]}
    assert composed == {FAKE_TIER_COMPOSE_RUN[1]}
    served |= composed
    dry_run = {name: words["dry_run"].format(date=date) for name, date in DRY_RUN.items()}
    assert {name for name, cell in tested.items() if cell in dry_run.values()} == (
        set(dry_run) - served - set(REFUSED)
    )
    others = {*served, *REFUSED, *dry_run}
    assert {cell for name, cell in tested.items() if name not in others} == {words["checked"]}


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_how_tested_names_the_errors_of_a_run_the_checker_refuses(language: str) -> None:
    # The DeepSeek-V4-Pro tutorial's A2 command pairs a prefetch load strategy with
    # multi-thread loading, and writes the Boolean as a string.
    assert REFUSED == {
        "DeepSeek-V4-Pro-A2": (
            "load-strategy-with-multithread-load",
            "multithread-load-not-boolean",
        )
    }
    cell = _rows(language)["DeepSeek-V4-Pro-A2"][-1]
    assert cell == TEXTS[language]["refused"].format(
        rules="load-strategy-with-multithread-load, multithread-load-not-boolean"
    )


def test_every_served_run_is_a_run_of_the_pinned_release() -> None:
    assert FAKE_TIER_SERVED_RUNS
    for architecture, name in [*FAKE_TIER_SERVED_RUNS.items(), FAKE_TIER_COMPOSE_RUN]:
        run = find_run(name, TAG)
        assert run_key(run) == name
        # Each is a run of a family of the class it serves.
        family = family_of(run.model, TAG)
        assert family is not None and family.architecture == architecture


def test_a_run_the_schedule_alone_names_gets_that_node_kind() -> None:
    rows = _rows("en")
    # Named by the CI's schedule only.
    assert rows["Qwen3-30B-A3B-W8A8-TP1"][1] == "A3"
    # Named by the run's own name.
    assert rows["Qwen3-32B-W8A8-single-a2"][1] == "A2"
    unnamed = [run_key(r) for r in serve_runs(TAG) if not r.node_kinds]
    assert unnamed, "the pinned release has configs its schedule doesn't run"
    for name in unnamed:
        assert rows[name][1] == TEXTS["en"]["not_named"]


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_a_multi_node_run_shows_its_nodes_beside_its_npus(language: str) -> None:
    rows = _rows(language)
    on_two = TEXTS[language]["on_nodes"].format(nodes=2)
    assert rows["Kimi-K2_5-W4A8-A2-dual-nodes"][1] == "A2"
    assert rows["Kimi-K2_5-W4A8-A2-dual-nodes"][2] == f"16 (8 × 2)\n\n{on_two}"
    assert on_two not in rows["Qwen3-32B-W8A8-single-a2"][2]


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_every_config_set_aside_is_listed_with_why(language: str) -> None:
    words = TEXTS[language]
    configs = set_aside(TAG)
    (body,) = set_aside_table(list(configs), words).findall(lambda n: n.tagname == "tbody")
    rows = {r.children[0].astext().split(":")[0]: [c.astext() for c in r.children] for r in body}
    assert sorted(rows) == sorted(c.path.rsplit("/", 1)[1] for c in configs) and len(rows) >= 5
    # A tutorial's prefill/decode deployment: its page doesn't state the nodes in a form
    # the reader takes.
    assert rows["DeepSeek-V4-Pro.md"][2] == words["not_stated"]
    # The name serve_model.py takes, to say why it builds no recipe.
    assert rows["DeepSeek-V4-Pro.md"][1].endswith("(DeepSeek-V4-Pro-PD)")
    assert rows["Qwen3-235B-disagg-pd.yaml"][3] == words["prefill_decode"].format(
        connector="MooncakeConnectorV1"
    ).replace("`", "")
    assert words["external"].replace("`", "") in rows["GLM5_1-W8A8-EP-external.yaml"][3]
