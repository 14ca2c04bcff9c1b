"""Unit tests of nox -s bench's arithmetic and of the targets it builds from the recipe."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.fake_tier import (
    DIRECT,
    SERVE_CPU,
    SERVE_NPU,
    Comparison,
    KindComparison,
    cpu_kind,
    direct_argv,
    ratio_tables,
    recipe_fields,
    spread,
)


def comparison(target: str, ttft: list[float], throughput: list[float]) -> Comparison:
    return Comparison(
        target=target, concurrency=8, ttft_p50_ms=ttft, output_tokens_per_s=throughput
    )


def test_spread_is_the_range_over_the_median() -> None:
    assert spread([90, 100, 120]) == pytest.approx(0.3)
    assert spread([5, 5, 5]) == 0


def test_kinds_within_noise_only_when_both_ratios_are() -> None:
    cpu = comparison(SERVE_CPU, [100, 110, 90], [1000, 1100, 900])  # ±0.2 either way
    close = KindComparison.of(comparison(SERVE_NPU, [105, 115, 95], [950, 1050, 900]), cpu)
    assert close.ttft_ratio == pytest.approx(1.05) and close.within_noise
    slow = KindComparison.of(comparison(SERVE_NPU, [150, 155, 148], [950, 1050, 900]), cpu)
    assert slow.ttft_ratio == pytest.approx(1.5) and not slow.within_noise


def test_ratio_tables_put_serve_over_direct_and_npu_over_cpu() -> None:
    tables = ratio_tables(
        [
            comparison(DIRECT, [10, 10, 10], [400, 400, 400]),
            comparison(SERVE_NPU, [30, 30, 30], [200, 200, 200]),
            comparison(SERVE_CPU, [30, 30, 30], [200, 200, 200]),
        ]
    )
    assert "| 8 | 10.0 | 30.0 | 3.00 | 400.0 | 200.0 | 0.50 |" in tables
    assert "| 8 | 1.00 | ±0.00 | 1.00 | ±0.00 | within noise |" in tables


@pytest.fixture(scope="module")
def fields() -> dict:
    return recipe_fields(Path("/models/tiny"))


def test_the_cpu_kind_changes_only_the_placement(fields: dict) -> None:
    cpu = cpu_kind(fields)
    assert fields["accelerator_config"] == {"kind": "npu"}
    assert cpu["accelerator_config"] == {"kind": "cpu"}
    assert "placement_group_config" not in cpu and "accelerator_type" not in cpu
    assert cpu["engine_kwargs"] == fields["engine_kwargs"]
    assert cpu["runtime_env"] == fields["runtime_env"]


def test_direct_vllm_gets_the_apps_engine_settings_as_flags(fields: dict) -> None:
    argv = direct_argv(fields, Path("/models/tiny"), 1234)
    assert argv[argv.index("--served-model-name") + 1] == "deepseek-v4-flash"
    assert argv[argv.index("--port") + 1] == "1234"
    for key, value in fields["engine_kwargs"].items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            assert flag in argv
        elif value is False:
            assert "--no-" + key.replace("_", "-") in argv
        else:
            assert argv[argv.index(flag) + 1] == str(value)
