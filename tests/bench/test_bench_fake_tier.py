"""Unit tests of nox -s bench's arithmetic and of the targets it builds from the recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ray_serve_npu_tooling.bench.compare import (
    DIRECT,
    SERVE_GPU,
    SERVE_NPU,
    Comparison,
    KindComparison,
    ratio_tables,
    straddles_one,
    targets,
)
from ray_serve_npu_tooling.bench.paths import BENCH_NODE, direct_args, gpu_kind, recipe_fields


def comparison(target: str, ttft: list[float], throughput: list[float]) -> Comparison:
    return Comparison(
        target=target, concurrency=8, ttft_p50_ms=ttft, output_tokens_per_s=throughput
    )


def test_kinds_are_compared_round_by_round() -> None:
    gpu = comparison(SERVE_GPU, [100, 200, 100], [1000, 500, 1000])
    # A slow second round hits both kinds: paired, the ratios stay near 1.
    npu = comparison(SERVE_NPU, [95, 210, 104], [1020, 490, 990])
    kinds = KindComparison.of(npu, gpu)
    assert kinds.ttft_ratios == pytest.approx([0.95, 1.05, 1.04])
    assert kinds.within_noise


def test_kinds_are_outside_noise_when_every_round_leans_one_way() -> None:
    gpu = comparison(SERVE_GPU, [100, 200, 100], [1000, 500, 1000])
    slower_every_round = comparison(SERVE_NPU, [110, 230, 101], [1020, 490, 990])
    assert not KindComparison.of(slower_every_round, gpu).within_noise
    fewer_tokens_every_round = comparison(SERVE_NPU, [95, 210, 104], [990, 490, 990])
    assert not KindComparison.of(fewer_tokens_every_round, gpu).within_noise


def test_straddles_one() -> None:
    assert straddles_one([0.9, 1.2]) and straddles_one([1.0, 1.0])
    assert not straddles_one([1.01, 1.2]) and not straddles_one([0.7, 0.99])


def test_ratio_tables_put_serve_over_direct_and_npu_over_gpu() -> None:
    tables = ratio_tables(
        [
            comparison(DIRECT, [10, 10, 10], [400, 400, 400]),
            comparison(SERVE_NPU, [30, 30, 30], [200, 200, 200]),
            comparison(SERVE_GPU, [30, 30, 30], [200, 200, 200]),
        ]
    )
    assert (
        "| 8 | 10.0 | 30.0 | 20.0 (20.0 to 20.0) | 3.00 (3.00-3.00) | 400.0 | 200.0 "
        "| 0.50 (0.50-0.50) |" in tables
    )
    assert "npu kind / gpu kind" in tables
    assert "| 8 | 1.00 (1.00-1.00) | 1.00 (1.00-1.00) | within noise |" in tables


def test_serve_over_direct_is_read_round_by_round_and_stands_alone() -> None:
    # A slow second round hits both paths; paired, Serve adds 5 ms in every round.
    tables = ratio_tables(
        [
            comparison(DIRECT, [10, 50, 10], [400, 100, 400]),
            comparison(SERVE_NPU, [15, 55, 15], [392, 98, 392]),
        ]
    )
    assert "| 8 | 10.0 | 15.0 | 5.0 (5.0 to 5.0) | 1.50 (1.10-1.50) | 400.0 | 392.0 " in tables
    assert "| 0.98 (0.98-0.98) |" in tables
    # The npu-paced regime has no gpu kind: no table of kinds.
    assert "npu kind / gpu kind" not in tables


@pytest.fixture(scope="module")
def fields() -> dict:
    return recipe_fields(Path("/models/tiny"))


def test_the_gpu_kind_changes_the_kind_and_the_fake_device_only(fields: dict) -> None:
    gpu = gpu_kind(fields)
    assert fields["accelerator_config"] == {"kind": "npu"}
    assert gpu["accelerator_config"] == {"kind": "gpu"}
    assert "placement_group_config" not in gpu and "accelerator_type" not in gpu
    assert gpu["engine_kwargs"] == fields["engine_kwargs"]
    # The fake platform asks Ray for GPUs in this app only; the npu app is untouched.
    assert gpu["runtime_env"]["env_vars"] == {
        **fields["runtime_env"]["env_vars"],
        "RAY_SERVE_NPU_FAKE_DEVICE": "GPU",
    }
    assert "RAY_SERVE_NPU_FAKE_DEVICE" not in fields["runtime_env"]["env_vars"]


def test_both_kinds_use_rays_executor(fields: dict) -> None:
    """The reason for the gpu kind: Ray Serve LLM gives the cpu kind vLLM's mp executor."""
    from ray.serve.llm import LLMConfig

    import ray_serve_npu  # noqa: F401

    def executor(config: dict) -> str:
        engine = LLMConfig(**config).get_engine_config()
        return engine.get_initialization_kwargs()["distributed_executor_backend"]

    assert executor(fields) == executor(gpu_kind(fields)) == "ray"
    cpu = {**gpu_kind(fields), "accelerator_config": {"kind": "cpu"}}
    assert executor(cpu) == "mp"


def test_the_bench_node_has_a_fake_gpu_per_npu() -> None:
    assert BENCH_NODE.num_gpus == BENCH_NODE.resources["NPU"] == 8


def test_direct_vllm_gets_the_apps_engine_settings_as_flags(fields: dict) -> None:
    argv = direct_args(fields, Path("/models/tiny"))
    assert argv[argv.index("--served-model-name") + 1] == "deepseek-v4-flash"
    assert argv[argv.index("--model") + 1] == "/models/tiny"
    for key, value in fields["engine_kwargs"].items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            assert flag in argv
        elif value is False:
            assert "--no-" + key.replace("_", "-") in argv
        elif isinstance(value, dict):
            # vLLM parses a dict flag as JSON; Python's repr of it is refused.
            assert json.loads(argv[argv.index(flag) + 1]) == value
        else:
            assert argv[argv.index(flag) + 1] == str(value)
    # The app's settings include a dict one (the weight loader's), so the JSON case runs.
    assert any(isinstance(value, dict) for value in fields["engine_kwargs"].values())


def test_the_targets_are_judged_on_the_rounds_medians() -> None:
    paced = [
        comparison(DIRECT, [100, 100, 100], [400, 400, 400]),
        # Throughput 0.98 of direct's in every round; TTFT 12 ms more in two rounds of three.
        comparison(SERVE_NPU, [112, 112, 105], [392, 392, 392]),
    ]
    verdicts = targets(paced, paced=True)
    assert "- concurrency 8: throughput ratio 0.98 >= 0.97: met" in verdicts
    assert "- concurrency 8: TTFT added 12.0 ms <= 10 ms: not met" in verdicts
    # Unpaced, only concurrency 32's throughput has a target.
    assert targets(paced, paced=False) == ""
    # Paced at 32, only the throughput has a target: the TTFT target is set at 1 and 8.
    at_32 = [c.model_copy(update={"concurrency": 32}) for c in paced]
    assert targets(at_32, paced=True).splitlines()[2:] == [
        "- concurrency 32: throughput ratio 0.98 >= 0.97: met"
    ]
    assert "- concurrency 32: throughput ratio 0.98 >= 0.8: met" in targets(at_32, paced=False)
