"""One point's figures, taken from what ``vllm bench serve`` returns, and the sweep's files."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .config import LATENCY_METRICS, PERCENTILES, LoadPoint


class PointResult(BaseModel):
    """What one load point measured. Latencies in milliseconds, throughputs per second."""

    point: LoadPoint
    #: The ``vllm bench serve`` command line that measured this point.
    command: str
    completed: int = 0
    failed: int = 0
    duration_s: float = 0.0
    requests_per_s: float = 0.0
    input_tokens_per_s: float = 0.0
    output_tokens_per_s: float = 0.0
    #: ``{"ttft": {"p50": ..., "p90": ..., "p99": ...}, "tpot": ..., "itl": ..., "e2el": ...}``
    latency_ms: dict[str, dict[str, float]] = {}
    #: Why the point has no figures (the server refused, every request failed...).
    error: str | None = None

    @classmethod
    def from_vllm(cls, point: LoadPoint, command: str, result: Mapping[str, Any]) -> PointResult:
        """Read the dictionary that ``vllm.benchmarks.serve.main`` returns."""
        duration = float(result["duration"])
        completed = int(result["completed"])
        return cls(
            point=point,
            command=command,
            completed=completed,
            failed=int(result["failed"]),
            duration_s=duration,
            requests_per_s=float(result["request_throughput"]),
            # vLLM reports output and total token throughput; input is its own figure
            # here, since prefill and decode load a server differently.
            input_tokens_per_s=float(result["total_input_tokens"]) / duration if duration else 0.0,
            output_tokens_per_s=float(result["output_throughput"]),
            latency_ms={
                metric: {f"p{p}": float(result[f"p{p}_{metric}_ms"]) for p in PERCENTILES}
                for metric in LATENCY_METRICS
            },
            error=None if completed else "every request failed; see the point's log",
        )

    @classmethod
    def failure(cls, point: LoadPoint, command: str, error: str) -> PointResult:
        return cls(point=point, command=command, failed=point.num_prompts, error=error)

    def latency(self, metric: str, percentile: int = 50) -> float:
        return self.latency_ms.get(metric, {}).get(f"p{percentile}", math.nan)


def write_json(results: Sequence[PointResult], path: Path) -> None:
    path.write_text(json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n")


def read_json(path: Path) -> list[PointResult]:
    return [PointResult.model_validate(item) for item in json.loads(path.read_text())]


_COLUMNS = (
    "setting",
    "concurrency",
    "req/s",
    "input tok/s",
    "output tok/s",
    *(f"{metric.upper()} p{p} ms" for metric in LATENCY_METRICS for p in PERCENTILES),
    "failed",
)


def _row(result: PointResult) -> list[str]:
    if result.error is not None and not result.completed:
        figures = ["-"] * (len(_COLUMNS) - 3)
    else:
        figures = [
            f"{result.requests_per_s:.2f}",
            f"{result.input_tokens_per_s:.1f}",
            f"{result.output_tokens_per_s:.1f}",
            *(f"{result.latency(m, p):.1f}" for m in LATENCY_METRICS for p in PERCENTILES),
        ]
    failed = f"{result.failed}/{result.point.num_prompts}"
    return [result.point.label(), str(result.point.concurrency), *figures, failed]


def markdown_table(results: Sequence[PointResult]) -> str:
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + " --- |" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_row(result)) + " |" for result in results]
    return "\n".join(lines) + "\n"
