"""Faults under load on the fake NPU tier: kill the replica, then an engine worker.

Each kill is a SIGKILL in the middle of a load of streaming clients, to a process
of this package's own fake cluster. Serve must bring the app back; every
in-flight stream must end in an error event the client raises on, never hang;
later requests must succeed. Real Ray Serve LLM, plugin and vLLM (CPU build);
fake NPUs and a tiny random model.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import pytest

from .fake_serving import (
    LLM_DEPLOYMENT_PREFIX,
    MAX_NUM_SEQS,
    ServedApp,
    StreamOutcome,
    chat_body,
    run_driver,
    stream_many,
    wait_for_success,
)

pytestmark = pytest.mark.fake_npu

#: Two batches of long answers: the engine is busy when the kill lands.
CLIENTS = 2 * MAX_NUM_SEQS
TOKENS_PER_ANSWER = 1000
#: A stream still open after this long counts as a hang.
CLIENT_TIMEOUT_S = 120
#: Serve's health check (10 s period in Ray Serve LLM) plus an engine start.
RECOVERY_DEADLINE_S = 300


async def _kill_under_load(app: ServedApp, pid: int) -> tuple[list[StreamOutcome], float]:
    """Stream :data:`CLIENTS` long answers; SIGKILL ``pid`` once the first chunk arrives."""
    first_chunk = asyncio.Event()
    bodies = [
        chat_body(f"In flight {index}", max_tokens=TOKENS_PER_ANSWER, ignore_eos=True)
        for index in range(CLIENTS)
    ]
    load = asyncio.ensure_future(
        stream_many(app.base_url, bodies, CLIENT_TIMEOUT_S, first_chunk=first_chunk)
    )
    await asyncio.wait_for(first_chunk.wait(), CLIENT_TIMEOUT_S)
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    return await load, killed_at


def _assert_recovers(app: ServedApp, killed_at: float, record_figure: Any) -> None:
    recovered_at = wait_for_success(app.base_url, RECOVERY_DEADLINE_S)
    record_figure("recovery s", round(recovered_at - killed_at, 1))
    later = asyncio.run(
        stream_many(app.base_url, [chat_body(max_tokens=16)] * MAX_NUM_SEQS, CLIENT_TIMEOUT_S)
    )
    assert all(outcome.completed for outcome in later), later


def _assert_cut_streams_end_in_errors(
    outcomes: list[StreamOutcome], killed_at: float, error_code: int, record_figure: Any
) -> None:
    hung = [outcome for outcome in outcomes if outcome.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    cut = [outcome for outcome in outcomes if not outcome.completed]
    # Requests were still queued or generating when the kill landed, so some
    # stream must be cut. Not necessarily a whole batch: Serve forwards stream
    # chunks in batches, and a CI run saw the first chunk arrive only after the
    # first batch of answers had finished.
    assert cut, outcomes
    # A stream that had begun (HTTP 200) ends in an error event, then [DONE]: the
    # OpenAI client raises APIError on it. A request that reached no replica gets
    # an HTTP error status instead, with a body.
    streamed = [outcome for outcome in cut if outcome.status == 200]
    refused = [outcome for outcome in cut if outcome.status != 200]
    assert all(outcome.error_events and outcome.done for outcome in streamed), streamed
    assert all(
        event["error"]["code"] == error_code
        for outcome in streamed
        for event in outcome.error_events
    ), streamed
    assert all(
        outcome.status is not None and outcome.status >= 500 and outcome.error
        for outcome in refused
    ), refused
    record_figure("cut streams: error event / HTTP error", f"{len(streamed)} / {len(refused)}")
    record_figure("in-flight streams cut", f"{len(cut)}/{len(outcomes)}")
    record_figure(
        "kill to last cut stream's end s",
        round(max(outcome.ended_at for outcome in cut) - killed_at, 1),
    )


def test_fake_npu_replica_killed_under_load_errors_streams_and_serve_restarts_it(
    app: ServedApp, record_figure: Any
) -> None:
    (pid,) = run_driver(app.cluster, "replica-pids", LLM_DEPLOYMENT_PREFIX, timeout_s=120)[
        "pids"
    ].values()
    outcomes, killed_at = asyncio.run(_kill_under_load(app, pid))

    # Ray's ingress would end these streams without a word; the plugin's guard
    # (ray_serve_npu.ingress) sends a 503 error event.
    _assert_cut_streams_end_in_errors(outcomes, killed_at, 503, record_figure)
    _assert_recovers(app, killed_at, record_figure)


def test_fake_npu_engine_worker_killed_under_load_errors_streams_and_serve_restarts(
    app: ServedApp, record_figure: Any
) -> None:
    (pid,) = app.engine_worker_pids()
    outcomes, killed_at = asyncio.run(_kill_under_load(app, pid))

    # The engine reports its death to every open stream as an error event.
    _assert_cut_streams_end_in_errors(outcomes, killed_at, 500, record_figure)
    _assert_recovers(app, killed_at, record_figure)
