"""What Ray Serve LLM's request path carries on this machine, in front of a mock engine.

The engine is a mock (:class:`ray_serve_npu_tooling.mock_engine.StreamingMockEngine`):
it streams each request's tokens at once and computes nothing. What the load then
costs is the request path's: Serve's HTTP proxy, the OpenAI ingress replica and the
``LLMServer`` replica, deployed as the recipe's app (as the fake tier adapts it) on
a fake cluster of one node. ``vllm bench serve`` drives them from this process, on
the same cores, so the harness also reads the CPU time those Serve processes used
during each point (from ``/proc``, with psutil): output tokens per CPU second of
those processes is what carries over to a host with more cores.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import psutil
from bench.config import SweepConfig
from bench.results import PointResult
from bench.runner import run_point
from pydantic import BaseModel, computed_field

from .processes import PROCESS_GONE, process_title

#: Ray names its worker processes after what they run: Serve's HTTP proxy, and each
#: replica as ``ray::ServeReplica:<app>:<deployment>``.
PROXY_TITLE = "ray::ProxyActor"
REPLICA_TITLE = "ray::ServeReplica:"
SERVE_PATH_PROCESSES = (PROXY_TITLE, REPLICA_TITLE)
#: Selects the mock for the LLMServer replica (``LLMServer._get_default_engine_class``).
ENGINE_CLS_ENV_VAR = "RAYLLM_VLLM_ENGINE_CLS"
STREAMING_MOCK_ENGINE = "ray_serve_npu_tooling.mock_engine.StreamingMockEngine"


def with_mock_engine(fields: dict[str, Any]) -> dict[str, Any]:
    """The app's fields with the streaming mock in place of vLLM's engine."""
    runtime_env = dict(fields.get("runtime_env") or {})
    env_vars = {**(runtime_env.get("env_vars") or {}), ENGINE_CLS_ENV_VAR: STREAMING_MOCK_ENGINE}
    return {**fields, "runtime_env": {**runtime_env, "env_vars": env_vars}}


def serve_path_cpu_seconds(processes: Iterable[psutil.Process]) -> float:
    """User and system CPU seconds used so far by the Serve processes of the request path
    among ``processes`` (a cluster's: :meth:`FakeNPUCluster.processes`).

    Raises RuntimeError where none is there: a point's CPU would read as zero.
    """
    total, found = 0.0, 0
    for process in processes:
        if not (process_title(process) or "").startswith(SERVE_PATH_PROCESSES):
            continue
        try:
            times = process.cpu_times()
        except PROCESS_GONE:
            continue
        total += times.user + times.system
        found += 1
    if not found:
        raise RuntimeError(
            f"no process of the cluster is titled {' or '.join(SERVE_PATH_PROCESSES)}: "
            "the request path's CPU time can't be read"
        )
    return total


class CapacityPoint(BaseModel):
    """One load point against the mock: what the path carried and the CPU it used.

    Its JSON carries the derived figures too, for the pages that read a run.
    """

    concurrency: int
    round: int
    result: PointResult
    #: CPU seconds of the Serve processes during the point, and the point's wall time.
    serve_cpu_s: float
    wall_s: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cores_used(self) -> float:
        """The Serve processes' CPU time over the point's wall time: cores kept busy."""
        return self.serve_cpu_s / self.wall_s if self.wall_s else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def output_tokens_per_cpu_s(self) -> float:
        """Output tokens per CPU second of the Serve processes: per core they keep busy.

        The tokens are those of vLLM's measured window; the CPU time also covers
        what runs around it (its ready check, one request), so this errs low.
        """
        tokens = self.result.output_tokens_per_s * self.result.duration_s
        return tokens / self.serve_cpu_s if self.serve_cpu_s else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cpu_ms_per_request(self) -> float:
        """Serve CPU milliseconds per request, counting ``vllm bench serve``'s ready check."""
        return 1000 * self.serve_cpu_s / (self.result.completed + 1)


def measure_capacity(
    config_for: Callable[[int], SweepConfig],
    concurrency: Sequence[int],
    rounds: int,
    workdir: Path,
    cpu_seconds: Callable[[], float],
) -> list[CapacityPoint]:
    """Rounds of every concurrency against the mock, each with the Serve CPU it used."""
    points = []
    for round_index in range(rounds):
        for level in concurrency:
            config = config_for(level)
            point = config.points({})[0]
            cpu_before, started = cpu_seconds(), time.monotonic()
            result = run_point(config, point, workdir / f"capacity-round{round_index}-c{level}")
            wall, cpu = time.monotonic() - started, cpu_seconds() - cpu_before
            if result.error:
                raise RuntimeError(f"the mock engine at concurrency {level}: {result.error}")
            print(f"capacity round {round_index + 1}/{rounds} c={level:<3} "
                  f"{result.output_tokens_per_s:8.0f} output tok/s  "
                  f"{cpu / wall:4.2f} Serve cores", flush=True)  # fmt: skip
            points.append(
                CapacityPoint(
                    concurrency=level,
                    round=round_index,
                    result=result,
                    serve_cpu_s=cpu,
                    wall_s=wall,
                )
            )
    return points


def _median_cell(values: Sequence[float], digits: int = 0) -> str:
    low, middle, high = min(values), statistics.median(values), max(values)
    return f"{middle:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def capacity_table(points: Sequence[CapacityPoint]) -> str:
    """Per concurrency, the median over the rounds (and their range), in Markdown."""
    lines = [
        "Ray Serve LLM's request path in front of a mock engine (it computes nothing): "
        "median (range over the rounds):",
        "",
        "| concurrency | requests/s | output tok/s | Serve CPU cores used "
        "| output tokens per Serve CPU-second | Serve CPU ms per request | TTFT p50 (ms) "
        "| request latency p50 (ms) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in sorted({p.concurrency for p in points}):
        at = [p for p in points if p.concurrency == level]
        lines.append(
            f"| {level} | {_median_cell([p.result.requests_per_s for p in at], 1)} "
            f"| {_median_cell([p.result.output_tokens_per_s for p in at])} "
            f"| {_median_cell([p.cores_used for p in at], 2)} "
            f"| {_median_cell([p.output_tokens_per_cpu_s for p in at])} "
            f"| {_median_cell([p.cpu_ms_per_request for p in at], 1)} "
            f"| {_median_cell([p.result.latency('ttft') for p in at], 1)} "
            f"| {_median_cell([p.result.latency('e2el') for p in at], 1)} |"
        )
    return "\n".join(lines) + "\n"
