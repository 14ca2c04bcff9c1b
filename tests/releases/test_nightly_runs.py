"""vLLM-Ascend's nightly single-node CI runs, read at each release as its vLLM reads them."""

from __future__ import annotations

import pytest

from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.releases.nightly import NIGHTLY_DIR, nightly_runs


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
