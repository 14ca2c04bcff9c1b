"""Load on the fake NPU tier: many more streaming clients than the engine runs at once.

Real Ray Serve LLM, plugin and vLLM (CPU build); fake NPUs and a tiny random model.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import pytest

from .fake_serving import (
    GUARANTEES,
    MAX_NUM_SEQS,
    QueueTimes,
    ServedApp,
    chat_body,
    queue_times,
    stream_many,
)

pytestmark = pytest.mark.fake_npu

CLIENTS: int = GUARANTEES["load_clients"]
#: Long enough that a full batch takes a visible time, so the clients beyond
#: ``max_num_seqs`` wait in vLLM's queue; ``ignore_eos`` makes every answer this long.
TOKENS_PER_ANSWER: int = GUARANTEES["load_tokens_per_answer"]
#: Every stream must complete within this.
CLIENT_TIMEOUT_S: float = GUARANTEES["load_client_timeout_s"]
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
    before = queue_times(app)
    bodies = [
        chat_body(
            f"Client {index}",
            max_tokens=TOKENS_PER_ANSWER,
            ignore_eos=True,
            stream_options={"include_usage": True},
        )
        for index in range(CLIENTS)
    ]
    started = time.monotonic()
    outcomes = asyncio.run(stream_many(app.base_url, bodies, CLIENT_TIMEOUT_S))
    wall_s = time.monotonic() - started

    incomplete = [outcome for outcome in outcomes if not outcome.completed]
    assert not incomplete, f"{len(incomplete)} of {CLIENTS} streams did not complete: {incomplete}"
    assert [outcome.completion_tokens for outcome in outcomes] == [TOKENS_PER_ANSWER] * CLIENTS
    assert all(outcome.finish_reason == "length" for outcome in outcomes)

    queued = _wait_for_queue_times(app, before, CLIENTS)
    waited = queued.requests - queued.short_waits
    # All but the first batch had to wait for a whole answer to finish.
    assert waited >= CLIENTS - MAX_NUM_SEQS, queued

    record_figure("clients completed", f"{CLIENTS - len(incomplete)}/{CLIENTS}")
    record_figure("wall time s", round(wall_s, 1))
    record_figure("first chunk s", _stats([o.first_chunk_s for o in outcomes if o.first_chunk_s]))
    record_figure("requests queued over 0.3 s", int(waited))
    record_figure("mean queue time s", round(queued.total_s / queued.requests, 2))
