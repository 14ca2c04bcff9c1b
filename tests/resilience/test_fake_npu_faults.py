"""Faults under load on the fake NPU tier: kill the replica, then an engine worker.

Each kill is a SIGKILL in the middle of a load of streaming clients, to a process
of this package's own fake cluster, once a whole batch of streams has begun. Serve
must bring the app back; every stream the kill cuts must end in the plugin's error
event for that fault (ray_serve_npu.streams), whose request id is in the server
log; none may hang; later requests must succeed. Real Ray Serve LLM, plugin and
vLLM (CPU build); fake NPUs and a tiny random model.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
from typing import Any

import pytest
from ray_serve_npu_tooling.stream_client import StreamOutcome

from ray_serve_npu.streams import ENGINE_FAILED, REPLICA_LOST, StreamFault

from .fake_serving import (
    LLM_DEPLOYMENT_PREFIX,
    FaultFigures,
    ServedApp,
    assert_recovers,
    assert_refused_with,
    assert_the_fault_event,
    every,
    guarantees,
    run_driver,
    strike_under_load,
)

pytestmark = pytest.mark.fake_npu


def test_the_kill_waits_for_at_most_the_streams_the_engine_runs_at_once() -> None:
    figures = FaultFigures.read()
    assert figures.streams_open_at_kill <= guarantees()["max_num_seqs"] < figures.clients


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def _assert_cut_streams_end_in_errors(
    app: ServedApp,
    outcomes: list[StreamOutcome],
    killed_at: float,
    fault: StreamFault,
    record_figure: Any,
) -> None:
    figures = FaultFigures.read()
    hung = [outcome for outcome in outcomes if outcome.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    # The streams open at the kill had begun their answers (HTTP 200 sent): each
    # must end in the fault's error event, on which the OpenAI client raises.
    open_at_kill = [outcome for outcome in outcomes if outcome.open_at(killed_at)]
    assert len(open_at_kill) >= figures.streams_open_at_kill, outcomes
    for outcome in open_at_kill:
        assert_the_fault_event(outcome, fault)
    # The others either completed, were cut too (the same event), or had not
    # begun and got an HTTP error status with a body instead: for a lost replica,
    # the same error as a 503 response.
    cut = [outcome for outcome in outcomes if not outcome.completed]
    streamed = [outcome for outcome in cut if outcome.status == 200]
    refused = [outcome for outcome in cut if outcome.status != 200]
    for outcome in streamed:
        assert_the_fault_event(outcome, fault)
    for outcome in refused:
        assert outcome.status is not None and outcome.status >= 500 and outcome.error, outcome
        if fault is REPLICA_LOST:
            assert_refused_with(outcome, fault)
    last_end_s = max(outcome.ended_at for outcome in cut) - killed_at
    assert last_end_s <= figures.cut_streams_end_within_s, [o.ended_at - killed_at for o in cut]
    # The plugin logged each failed request's cause beside its request id, in its
    # own words (Serve's proxy logs every request id).
    failures = {
        f"Request {outcome.request_id} failed"
        for outcome in cut
        if outcome.status == 200 or fault is REPLICA_LOST
    }
    logged = app.logged(failures)
    missing = failures - logged.keys()
    assert not missing, f"not in the cluster's logs: {missing}"

    record_figure("open at the kill", f"{len(open_at_kill)}/{len(outcomes)}")
    record_figure("cut: error event / HTTP error", f"{len(streamed)} / {len(refused)}")
    record_figure("completed", len(outcomes) - len(cut))
    record_figure("kill to last cut stream's end s", round(last_end_s, 1))
    record_figure("HTTP error statuses", sorted({o.status for o in refused if o.status}))
    record_figure("error event", json.dumps(streamed[0].error_events[0]) if streamed else None)
    record_figure("request ids logged in", sorted(set(logged.values())))


def test_fake_npu_replica_killed_under_load_errors_streams_and_serve_restarts_it(
    app: ServedApp, record_figure: Any
) -> None:
    (pid,) = run_driver(app.cluster, "replica-pids", LLM_DEPLOYMENT_PREFIX, timeout_s=120)[
        "pids"
    ].values()
    by_proxy, killed_at = asyncio.run(strike_under_load(app, functools.partial(_kill, pid)))
    outcomes = every(by_proxy)

    # Ray's ingress would end these streams without a word.
    _assert_cut_streams_end_in_errors(app, outcomes, killed_at, REPLICA_LOST, record_figure)
    assert_recovers(app, killed_at, record_figure)


def test_fake_npu_engine_worker_killed_under_load_errors_streams_and_serve_restarts(
    app: ServedApp, record_figure: Any
) -> None:
    (pid,) = app.engine_worker_pids()
    by_proxy, killed_at = asyncio.run(strike_under_load(app, functools.partial(_kill, pid)))
    outcomes = every(by_proxy)

    # vLLM's own event for its dead engine becomes the plugin's.
    _assert_cut_streams_end_in_errors(app, outcomes, killed_at, ENGINE_FAILED, record_figure)
    assert_recovers(app, killed_at, record_figure)
