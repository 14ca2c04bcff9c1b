"""Load on the fake NPU tier: many more streaming clients than the engine runs at once.

Real Ray Serve LLM, plugin and vLLM (CPU build); fake NPUs and a tiny random model.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, fields
from typing import Any

import pytest
from ray_serve_npu_tooling.stream_client import stream_many

from .fake_serving import (
    QueueTimes,
    ServedApp,
    chat_body,
    guarantees,
    queue_times,
)

pytestmark = pytest.mark.fake_npu


@dataclass(frozen=True)
class LoadFigures:
    """The load test's figures: ``load_<name>`` in :func:`guarantees`."""

    clients: int
    #: Long enough that a full batch takes a visible time, so the clients beyond
    #: ``max_num_seqs`` wait in vLLM's queue; ``ignore_eos`` makes every answer this long.
    tokens_per_answer: int
    #: Every stream must complete within this.
    client_timeout_s: float

    @classmethod
    def read(cls) -> LoadFigures:
        return cls(**{field.name: guarantees()[f"load_{field.name}"] for field in fields(cls)})


#: Ray's metrics agent exports what workers report every few seconds.
METRICS_DEADLINE_S = 60


def _wait_for_queue_times(app: ServedApp, before: QueueTimes, requests: int) -> QueueTimes:
    deadline = time.monotonic() + METRICS_DEADLINE_S
    while (seen := queue_times(app) - before).requests < requests:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"vLLM's queue-time histogram counted {seen.requests} of {requests} requests "
                f"after {METRICS_DEADLINE_S} s: {app.metrics_urls}"
            )
        time.sleep(2)
    return seen


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 2),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


def test_fake_npu_64_streaming_clients_complete_and_queue_in_the_metrics(
    app: ServedApp, record_figure: Any
) -> None:
    figures = LoadFigures.read()
    before = queue_times(app)
    bodies = [
        chat_body(
            f"Client {index}",
            max_tokens=figures.tokens_per_answer,
            ignore_eos=True,
            stream_options={"include_usage": True},
        )
        for index in range(figures.clients)
    ]
    started = time.monotonic()
    outcomes = asyncio.run(stream_many(app.base_url, bodies, figures.client_timeout_s))
    wall_s = time.monotonic() - started

    incomplete = [outcome for outcome in outcomes if not outcome.completed]
    clients = figures.clients
    assert not incomplete, f"{len(incomplete)} of {clients} streams did not complete: {incomplete}"
    assert [outcome.completion_tokens for outcome in outcomes] == [
        figures.tokens_per_answer
    ] * clients
    assert all(outcome.finish_reason == "length" for outcome in outcomes)

    queued = _wait_for_queue_times(app, before, figures.clients)
    waited = queued.requests - queued.short_waits
    # All but the first batch had to wait for a whole answer to finish.
    assert waited >= figures.clients - guarantees()["max_num_seqs"], queued

    record_figure("clients completed", f"{figures.clients - len(incomplete)}/{figures.clients}")
    record_figure("wall time s", round(wall_s, 1))
    record_figure("first chunk s", _stats([o.first_chunk_s for o in outcomes if o.first_chunk_s]))
    record_figure("requests queued over 0.3 s", int(waited))
    record_figure("mean queue time s", round(queued.total_s / queued.requests, 2))
