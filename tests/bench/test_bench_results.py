"""Unit tests: a point's figures from ``vllm bench serve``'s result, and the reports."""

from __future__ import annotations

import math

from bench.config import LoadPoint
from bench.results import PointResult, markdown_table, read_json, write_json

POINT = LoadPoint(
    concurrency=8, request_rate=math.inf, input_len=100, output_len=10, num_prompts=16
)


def vllm_result(**overrides: float) -> dict[str, float]:
    """The keys of ``vllm.benchmarks.serve.main``'s result that a point reads."""
    result = {
        "duration": 4.0,
        "completed": 15,
        "failed": 1,
        "request_throughput": 3.75,
        "total_input_tokens": 1500,
        "output_throughput": 37.5,
    }
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for p, value in ((50, 10.0), (90, 20.0), (99, 30.0)):
            result[f"p{p}_{metric}_ms"] = value
    return {**result, **overrides}


def test_input_throughput_is_input_tokens_over_duration() -> None:
    result = PointResult.from_vllm(POINT, "cmd", vllm_result())
    assert result.input_tokens_per_s == 375.0
    assert result.output_tokens_per_s == 37.5
    assert result.requests_per_s == 3.75


def test_percentiles_are_kept_per_metric() -> None:
    result = PointResult.from_vllm(POINT, "cmd", vllm_result(p99_tpot_ms=42.0))
    assert result.latency("tpot", 99) == 42.0
    assert result.latency("ttft", 90) == 20.0
    assert math.isnan(result.latency("unknown"))


def test_failed_requests_are_counted_and_a_point_with_none_completed_is_an_error() -> None:
    some_failed = PointResult.from_vllm(POINT, "cmd", vllm_result())
    assert (some_failed.completed, some_failed.failed, some_failed.error) == (15, 1, None)
    none_completed = PointResult.from_vllm(POINT, "cmd", vllm_result(completed=0, failed=16))
    assert none_completed.error is not None


def test_a_zero_duration_gives_zero_input_throughput_not_a_crash() -> None:
    assert PointResult.from_vllm(POINT, "c", vllm_result(duration=0)).input_tokens_per_s == 0


def test_markdown_table_shows_failed_points_without_figures() -> None:
    table = markdown_table(
        [
            PointResult.from_vllm(POINT, "cmd", vllm_result()),
            PointResult.failure(POINT, "cmd", "ValueError: refused"),
        ]
    )
    header, rule, ok, failed = table.splitlines()
    assert "TTFT p99 ms" in header and rule.count("---") == header.count("|") - 1
    assert "| 375.0 | 37.5 |" in ok and ok.endswith("| 1/16 |")
    assert "| - |" in failed and failed.endswith("| 16/16 |")


def test_results_survive_a_json_round_trip(tmp_path) -> None:
    results = [PointResult.from_vllm(POINT, "cmd", vllm_result())]
    write_json(results, tmp_path / "results.json")
    assert read_json(tmp_path / "results.json") == results


def test_a_point_sent_as_fast_as_the_clients_allow_survives_pydantics_json() -> None:
    point = LoadPoint(
        concurrency=8, request_rate=float("inf"), input_len=8, output_len=8, num_prompts=8
    )
    assert LoadPoint.model_validate_json(point.model_dump_json()) == point
