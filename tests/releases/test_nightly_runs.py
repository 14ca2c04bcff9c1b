"""vLLM-Ascend's nightly single-node CI runs, read at each release as its vLLM reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES, nightly
from ray_serve_npu.releases.nightly import NIGHTLY_DIR, SCHEDULE_FILE, nightly_runs, schedule


def test_every_release_with_rules_has_its_runs_stored() -> None:
    assert {p.name for p in NIGHTLY_DIR.iterdir() if p.is_dir()} == set(available_releases())


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_each_run_is_read_with_its_source_line(tag: str) -> None:
    runs = nightly_runs(tag)
    assert len(runs) >= 30
    for run in runs:
        text = (NIGHTLY_DIR / tag / run.path.rsplit("/", 1)[1]).read_text().splitlines()
        assert run.name in text[run.line - 1], (run.path, run.line)


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
    with pytest.raises(LookupError, match="no nightly CI configs are stored for v0.27.1rc1"):
        nightly_runs("v0.27.1rc1")


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_the_schedule_agrees_with_each_runs_name_and_runner(tag: str) -> None:
    """Where the CI's schedule runs a config, its node kind is the one the run's name
    gives, and its runner has the NPUs the run uses."""
    runs = nightly_runs(tag)
    for run in runs:
        for entry in run.schedule:
            assert run.node_kind in (None, entry.node_kind), (run.name, entry)
            assert run.npus <= entry.devices, (run.name, entry)
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
