"""The request path's capacity: the arithmetic, the table, and which processes count.

The live measurement, Serve in front of the streaming mock engine, is ``nox -s bench``'s
(not part of the suite); it stops when no Serve process is found to read the CPU of.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import ray_serve_npu_tooling.bench.capacity as capacity
from bench.config import LoadPoint, SweepConfig
from bench.results import PointResult
from ray_serve_npu_tooling.bench.capacity import (
    ENGINE_CLS_ENV_VAR,
    STREAMING_MOCK_ENGINE,
    CapacityPoint,
    capacity_table,
    measure_capacity,
    serve_path_cpu_seconds,
    with_mock_engine,
)


def _result(concurrency: int, tokens_per_s: float, completed: int = 100) -> PointResult:
    point = LoadPoint(
        concurrency=concurrency, request_rate=float("inf"), input_len=8, output_len=64,
        num_prompts=completed,
    )  # fmt: skip
    return PointResult(
        point=point,
        command="vllm bench serve ...",
        completed=completed,
        requests_per_s=tokens_per_s / 64,
        output_tokens_per_s=tokens_per_s,
        duration_s=10.0,
        latency_ms={"ttft": {"p50": 4.0}, "e2el": {"p50": 40.0}},
    )


def test_a_point_counts_output_per_serve_cpu_second_and_cpu_per_request() -> None:
    # vLLM measured 6400 tok/s over 5 s of a point that took 10 s of wall time (the
    # tokenizer, the ready check and the results around it) and 15 Serve CPU-seconds.
    result = _result(8, 6400.0).model_copy(update={"duration_s": 5.0})
    point = CapacityPoint(concurrency=8, round=0, result=result, serve_cpu_s=15.0, wall_s=10.0)
    assert point.cores_used == pytest.approx(1.5)
    # The 32000 tokens of the measured window, over all the CPU the point took.
    assert point.output_tokens_per_cpu_s == pytest.approx(32000 / 15)
    # The ready check is a request too.
    assert point.cpu_ms_per_request == pytest.approx(15000 / 101)


def test_the_table_gives_each_concurrency_its_median_and_range() -> None:
    points = [
        CapacityPoint(concurrency=8, round=r, result=_result(8, tps), serve_cpu_s=cpu, wall_s=10.0)
        for r, (tps, cpu) in enumerate([(6000.0, 10.0), (6400.0, 12.0), (7000.0, 14.0)])
    ]
    table = capacity_table(points)
    assert "| 8 | 100.0 (93.8-109.4) | 6400 (6000-7000) | 1.20 (1.00-1.40) " in table
    # _result's window is 10 s, as long as the point.
    assert "| 5333 (5000-6000) | 118.8 (99.0-138.6) | 4.0 (4.0-4.0) | 40.0 (40.0-40.0) |" in table


class _Process:
    def __init__(self, title: str, user: float, system: float, gone: bool = False) -> None:
        self.title, self.times, self.gone = title, SimpleNamespace(user=user, system=system), gone

    def cmdline(self) -> list[str]:
        if self.gone:
            import psutil

            raise psutil.NoSuchProcess(pid=1)
        return [self.title, "--flag"]

    def cpu_times(self) -> Any:
        return self.times


def test_the_serve_path_is_its_proxy_and_replicas_only() -> None:
    processes = [
        _Process("ray::ProxyActor", 1.0, 0.5),
        _Process("ray::ServeReplica:serve-mock:OpenAiIngress", 2.0, 1.0),
        _Process("ray::ServeReplica:serve-mock:LLMServer:deepseek-v4-flash", 3.0, 0.0),
        # Not the request path: the controller, Ray's own daemons, the load generator.
        _Process("ray::ServeController", 50.0, 50.0),
        _Process("/usr/bin/python", 70.0, 0.0),
        _Process("ray::ProxyActor", 9.0, 9.0, gone=True),
    ]
    assert serve_path_cpu_seconds(processes) == pytest.approx(7.5)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="the request path's CPU time can't be read"):
        serve_path_cpu_seconds(processes[3:])  # type: ignore[arg-type]


def test_the_mock_engine_replaces_vllms_and_keeps_the_apps_environment() -> None:
    fields = {"runtime_env": {"env_vars": {"A": "1"}}, "engine_kwargs": {"max_num_seqs": 32}}
    mocked = with_mock_engine(fields)
    assert mocked["runtime_env"]["env_vars"] == {
        "A": "1",
        ENGINE_CLS_ENV_VAR: STREAMING_MOCK_ENGINE,
    }
    assert fields["runtime_env"]["env_vars"] == {"A": "1"}
    assert mocked["engine_kwargs"] == fields["engine_kwargs"]


def test_each_point_is_charged_the_serve_cpu_it_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cpu = [0.0]

    def fake_run_point(config: SweepConfig, point: LoadPoint, workdir: Path) -> PointResult:
        cpu[0] += point.concurrency * 0.5  # the path works harder at higher concurrency
        return _result(point.concurrency, 100.0 * point.concurrency)

    monkeypatch.setattr(capacity, "run_point", fake_run_point)

    def config_for(level: int) -> SweepConfig:
        return SweepConfig(
            base_url="http://127.0.0.1:1", model="m", tokenizer="t", concurrency=[level],
            input_len=[8], output_len=[64], num_prompts=10,
        )  # fmt: skip

    points = measure_capacity(config_for, [1, 8], 2, tmp_path, cpu_seconds=lambda: cpu[0])
    assert [(p.round, p.concurrency, p.serve_cpu_s) for p in points] == [
        (0, 1, 0.5), (0, 8, 4.0), (1, 1, 0.5), (1, 8, 4.0),
    ]  # fmt: skip


def test_a_failed_point_stops_the_measurement(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def failing(config: SweepConfig, point: LoadPoint, workdir: Path) -> PointResult:
        return PointResult.failure(point, "vllm bench serve ...", "every request failed")

    monkeypatch.setattr(capacity, "run_point", failing)
    config = SweepConfig(base_url="http://127.0.0.1:1", model="m", tokenizer="t", concurrency=[1])
    with pytest.raises(RuntimeError, match="the mock engine at concurrency 1: every request"):
        measure_capacity(lambda level: config, [1], 1, tmp_path, cpu_seconds=lambda: 0.0)


def test_the_streaming_mock_streams_what_vllm_bench_serve_counts() -> None:
    import asyncio
    import json

    from ray.llm._internal.serve.core.configs.openai_api_models import ChatCompletionRequest
    from ray_serve_npu_tooling.mock_engine import MOCK_TOKEN, StreamingMockEngine

    request = ChatCompletionRequest(
        model="deepseek-v4-flash",
        messages=[{"role": "user", "content": "hi"}],
        max_completion_tokens=3,
        stream=True,
        stream_options={"include_usage": True},
    )

    async def events() -> list[str]:
        return [event async for event in StreamingMockEngine(None).chat(request)]

    sent = asyncio.run(events())
    assert all(event.startswith("data: ") and event.endswith("\n\n") for event in sent)
    assert sent[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(event.removeprefix("data: ")) for event in sent[:-1]]
    contents = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert contents == ["", MOCK_TOKEN, MOCK_TOKEN, MOCK_TOKEN]
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 3


def test_a_points_json_carries_its_derived_figures_and_reads_back() -> None:
    point = CapacityPoint(
        concurrency=8, round=0, result=_result(8, 6400.0), serve_cpu_s=15.0, wall_s=10.0
    )
    dumped = point.model_dump(mode="json")
    assert dumped["cores_used"] == pytest.approx(1.5)
    assert dumped["output_tokens_per_cpu_s"] == pytest.approx(64000 / 15)
    assert CapacityPoint.model_validate(dumped) == point
