"""vLLM-Ascend's nightly CI runs, read at each release as its vLLM reads them: each
single-node case, each multi-node config of one engine, and the multi-node configs set
aside with what they run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ray_serve_npu import hardware, model_recipes
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES, nightly
from ray_serve_npu.releases.nightly import (
    NIGHTLY_DIR,
    SCHEDULE_FILE,
    nightly_runs,
    schedule,
    set_aside_configs,
    stored_path,
)


def test_every_release_with_rules_has_its_runs_stored() -> None:
    assert {p.name for p in NIGHTLY_DIR.iterdir() if p.is_dir()} == set(available_releases())


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_each_run_is_read_with_its_source_line(tag: str) -> None:
    runs = nightly_runs(tag)
    assert len(runs) >= 30
    for run in runs:
        text = stored_path(tag, run.path).read_text().splitlines()
        if run.nodes == 1:
            assert run.name in text[run.line - 1], (run.path, run.line)
        else:
            # A multi-node run is read from its first node's command.
            assert text[run.line - 1].strip() == "server_cmd: >", (run.path, run.line)
            assert shlex.split(text[run.line]) == ["vllm", "serve", run.model], run.path
    assert sum(run.nodes > 1 for run in runs) >= 7
    for config in set_aside_configs(tag):
        line = stored_path(tag, config.path).read_text().splitlines()[config.line - 1]
        if config.path.startswith(nightly.UPSTREAM_DIR):
            # A single-node config set aside is cited at its case.
            assert config.layout == "not_served" and line.lstrip().startswith("- name:")
        else:
            assert line.startswith("test_name:"), (config.path, config.line)


def test_the_deepseek_v4_flash_run_is_the_tutorials_a3_run() -> None:
    """The CI's DeepSeek-V4-Flash-W8A8-A3 case and the tutorial's A3 run, which the A3
    recipe transcribes, agree on the layout (both at v0.25.1rc1)."""
    (run,) = [r for r in nightly_runs("v0.25.1rc1") if r.name == "DeepSeek-V4-Flash-W8A8-A3"]
    tutorial = RELEASES["v0.25.1rc1"].run("A3")
    # The tutorial serves a local download of the same weights.
    assert tutorial.model.endswith(run.model.split("/")[1]) and run.node_kind == "A3"
    assert (run.tensor_parallel, run.data_parallel) == (
        tutorial.tensor_parallel_size,
        tutorial.data_parallel_size,
    )
    assert (run.npus, run.expert_parallel) == (16, True)
    assert (run.speculative_method, run.speculative_tokens) == ("mtp", 1)
    assert run.max_model_len == tutorial.args["max-model-len"]
    assert run.envs["HCCL_BUFFSIZE"] == "1024"
    assert "--port" in run.argv and "8000" in run.argv


def test_a_node_kind_is_read_from_the_file_or_the_case_name() -> None:
    kinds = {(r.path.rsplit("/", 1)[1], r.name): r.node_kind for r in nightly_runs("v0.25.1rc1")}
    assert kinds[("Qwen3-32B-Int8-A2.yaml", "Qwen3-32B-W8A8-single-a2")] == "A2"
    assert kinds[("Qwen3-32B-Int8.yaml", "Qwen3-32B-W8A8-single-a3")] == "A3"
    assert kinds[("Kimi-K2.5.yaml", "Kimi-K2.5-W4A8-Case")] is None


def test_a_release_without_stored_runs_says_which_have_them() -> None:
    # Every release with rules has its runs stored: a tag of no data at all has none.
    with pytest.raises(LookupError, match="no nightly CI configs are stored for v0.24.0rc1") as e:
        nightly_runs("v0.24.0rc1")
    assert all(tag in str(e.value) for tag in available_releases())


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_the_schedule_agrees_with_each_runs_name_and_runner(tag: str) -> None:
    """Where the CI's schedule runs a config, its node kind is the one the run's name
    gives, and its runner has the NPUs the run uses."""
    runs = nightly_runs(tag)
    for run in runs:
        for entry in run.schedule:
            assert run.node_kind in (None, entry.node_kind), (run.name, entry)
            assert entry.nodes == run.nodes, (run.name, entry)
            if entry.devices is not None:
                assert run.npus <= entry.devices, (run.name, entry)
            else:
                # A multi-node entry names no runner: the run fits its nodes' NPUs.
                per_node = hardware.NODE_KINDS[entry.node_kind].devices_per_node
                assert run.npus <= per_node * run.nodes, (run.name, entry)
    # From v0.23.0 the release keeps its schedule, and it runs most configs.
    scheduled = [run for run in runs if run.schedule]
    assert len(scheduled) >= len(runs) - 5 if tag != "v0.22.1rc1" else scheduled == []


def test_a_run_the_schedule_names_gets_its_node_kind_runner_and_line() -> None:
    (run,) = [r for r in nightly_runs("v0.25.1rc1") if r.name == "Qwen3-30B-A3B-W8A8-TP1"]
    assert run.node_kind is None and run.node_kinds == ("A3",)
    sections = {(e.section, e.runner, e.devices) for e in run.schedule}
    assert sections == {
        ("a3", "linux-aarch64-nightly-a3-4", 4),
        ("a3-560t", "linux-aarch64-a3-4-cn12-001", 4),
    }
    lines = (NIGHTLY_DIR / "v0.25.1rc1" / SCHEDULE_FILE).read_text().splitlines()
    for entry in run.schedule:
        assert lines[entry.line - 1].strip() == "- name: qwen3-30b-a3b-w8a8"


def test_a_schedule_section_of_no_known_node_kind_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "v9.9.9" / SCHEDULE_FILE.parent
    folder.mkdir(parents=True)
    (folder / SCHEDULE_FILE.name).write_text("a9:\n  single_node:\n    test_config: []\n")
    monkeypatch.setattr(nightly, "NIGHTLY_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"nightly_config.yaml:1: the schedule has a section 'a9'"):
        schedule.__wrapped__("v9.9.9")


_TWO_NODES = """\
test_name: "two nodes"
model: "org/Model"
num_nodes: 2
npu_per_node: 8
deployment:
  - envs: {{SERVER_PORT: 8080}}
    server_cmd: >
      vllm serve org/Model --port $SERVER_PORT --data-parallel-size 2
      --data-parallel-size-local 1 --data-parallel-address $LOCAL_IP
      --tensor-parallel-size 8 --max-model-len 4096
  - envs: {{SERVER_PORT: 8080}}
    server_cmd: >
      vllm serve org/Model --headless --data-parallel-size 2 --data-parallel-start-rank 1
      --data-parallel-size-local 1 --data-parallel-address $MASTER_IP
      --tensor-parallel-size 8 --max-model-len {second_len}
benchmarks: {{}}
"""


def _plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, text: str) -> None:
    """A release folder holding one multi-node config, read as the pinned tag's."""
    config = tmp_path / "v0.25.1rc1" / folder / "Planted.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    monkeypatch.setattr(nightly, "NIGHTLY_DIR", tmp_path)


def test_nodes_that_differ_only_in_their_own_rank_are_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path, monkeypatch, nightly.INTERNAL_DP_DIR, _TWO_NODES.format(second_len=4096))
    (run,), set_aside = nightly._read.__wrapped__("v0.25.1rc1")
    assert (run.name, run.nodes, run.npus, run.max_model_len) == ("Planted", 2, 16, 4096)
    assert "8080" in run.argv and set_aside == ()


def test_nodes_that_differ_in_an_engine_setting_are_set_aside_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path, monkeypatch, nightly.INTERNAL_DP_DIR, _TWO_NODES.format(second_len=8192))
    runs, (config,) = nightly._read.__wrapped__("v0.25.1rc1")
    assert runs == ()
    assert (config.layout, config.differ, config.line) == ("nodes_differ", ("max_model_len",), 1)


def test_an_external_config_the_reader_cannot_lay_out_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'test_name: "x"\nmodel: "org/Model"\nnum_nodes: 2\nrouting:\n  type: "round_robin"\n'
    _plant(tmp_path, monkeypatch, nightly.EXTERNAL_DP_DIR, text)
    with pytest.raises(ValueError, match=r"external_dp/config/Planted.yaml:5: an external"):
        nightly._read.__wrapped__("v0.25.1rc1")


_ONE_CASE = """\
test_cases:
  - name: "{name}"
    model: "org/Model"
    envs:
      SERVER_PORT: "DEFAULT_PORT"
    server_cmd: ["--port", "$SERVER_PORT", "--tensor-parallel-size", "2"]
"""

_SCHEDULE = """\
a2:
  single_node:
    test_config:
      - name: both
        os: linux-aarch64-a2b3-4
        config_file_path: Both.yaml
310p:
  single_node:
    test_config:
      - name: cards
        os: linux-aarch64-310p-4
        config_file_path: Cards.yaml
      - name: both
        os: linux-aarch64-310p-4
        config_file_path: Both.yaml
a5:
  multi_node:
    test_config:
      - name: planted
        size: 2
        config_file_path: Planted.yaml
"""


@pytest.fixture
def fresh_schedules():
    """The schedule readers' caches emptied around a test that plants a schedule."""
    nightly.schedule.cache_clear()
    nightly.not_served_schedule.cache_clear()
    yield
    nightly.schedule.cache_clear()
    nightly.not_served_schedule.cache_clear()


def test_a_config_scheduled_only_on_hardware_not_served_is_set_aside_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_schedules: None
) -> None:
    """From v0.27.1rc1 the single-node configs hold 310P ones, and the schedule has an
    a5 section: a config only those run is listed with the section, never read as a run
    of a node kind this project serves, nor dropped."""
    _plant(tmp_path, monkeypatch, nightly.INTERNAL_DP_DIR, _TWO_NODES.format(second_len=4096))
    folder = tmp_path / "v0.25.1rc1"
    (folder / "Cards.yaml").write_text(_ONE_CASE.format(name="cards-case"))
    (folder / "Both.yaml").write_text(_ONE_CASE.format(name="both-case"))
    (folder / SCHEDULE_FILE).parent.mkdir()
    (folder / SCHEDULE_FILE).write_text(_SCHEDULE)
    runs, set_aside = nightly._read.__wrapped__("v0.25.1rc1")
    # A config the schedule also runs on a served node kind stays a run of it.
    (run,) = runs
    assert (run.name, run.node_kinds) == ("both-case", ("A2",))
    by_name = {config.name: config for config in set_aside}
    assert set(by_name) == {"Cards", "Planted"}
    cards, planted = by_name["Cards"], by_name["Planted"]
    assert (cards.layout, cards.not_served_on, cards.nodes, cards.line) == (
        "not_served",
        ("310p",),
        1,
        2,
    )
    assert (planted.layout, planted.not_served_on, planted.nodes) == ("not_served", ("a5",), 2)
    assert "Atlas 950DT" in model_recipes.not_built_because(planted)
    assert "Atlas 300I Duo" in model_recipes.not_built_because(cards)


def test_the_folders_readme_counts_each_releases_single_node_files() -> None:
    rows = re.findall(
        r"^\| `(v[^`]+)` \| .* \| (\d+) \|$", (NIGHTLY_DIR / "README.md").read_text(), re.M
    )
    assert {tag: int(n) for tag, n in rows} == {
        folder.name: len(list(folder.glob("*.yaml")))
        for folder in NIGHTLY_DIR.iterdir()
        if folder.is_dir()
    }


def test_v0_27_1rc1_sets_aside_exactly_its_310p_and_a5_configs() -> None:
    # The schedule at that tag runs six single-node configs on 310P cards alone and one
    # multi-node config on 950DT (a5) nodes alone; none of them may become a run.
    not_served = {
        config.path.rsplit("/", 1)[1]: config.not_served_on
        for config in set_aside_configs("v0.27.1rc1")
        if config.layout == "not_served"
    }
    assert {name for name, on in not_served.items() if on == ("310p",)} == {
        "Qwen3-14B-w8a8sc-310p.yaml",
        "Qwen3-32B-w8a8sc-310p.yaml",
        "Qwen3-8B-w8a8sc-310p.yaml",
        "Qwen3.6-27B-W8A8-310P-300I-DUO.yaml",
        "Qwen3.6-35B-A3B-w8a8-310p-MTP.yaml",
        "Qwen3.6-35B-W8A8-310P-300I-DUO.yaml",
    }
    assert not_served["Qwen3-235B-W8A8-EPLB-mxfp0.yaml"] == ("a5",) and len(not_served) == 7
    runs = {run.path.rsplit("/", 1)[1] for run in nightly_runs("v0.27.1rc1")}
    assert not runs & set(not_served)
