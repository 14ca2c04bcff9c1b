"""A worker node lost under load on the fake NPU tier: the node that runs the model's replica.

In the middle of a load of streaming clients, the test takes away the fake A2 worker
whose NPUs the model replica holds: SIGKILL to its raylet and every process on it,
Serve's proxy and the engine included (``FakeNPUCluster.lose_node``). Every stream must
end, none may hang; Serve must place the replica on the other worker and answer again.
Real Ray, Serve, plugin and vLLM (CPU build); fake NPUs, fake nodes on one machine, and
a tiny random model.

Every node's proxy listens on the same loopback port here (Serve opens it for port
reuse), so the kernel spreads the clients over the proxies, as a load balancer over
the nodes would. A stream through the lost node's own proxy loses its connection; a
stream through a proxy that lives on must end in the plugin's event for a lost replica.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from ray_serve_npu_tooling.stream_client import OpenStreams, StreamOutcome, stream_many

from ray_serve_npu.streams import REPLICA_LOST

from .fake_serving import (
    LLM_DEPLOYMENT_PREFIX,
    FaultFigures,
    ServedApp,
    assert_the_fault_event,
    chat_body,
    guarantees,
    run_driver,
    wait_for_success,
)

pytestmark = pytest.mark.fake_npu

#: Serve's deployment name of the OpenAI ingress that the plugin builds.
INGRESS_DEPLOYMENT = "OpenAiIngress"


def _replica_nodes(app: ServedApp) -> dict[str, int]:
    """Each live replica's deployment and the index of the fake node it runs on."""
    pids = run_driver(app.cluster, "replica-pids", "", timeout_s=120)["pids"]
    return {name.split("#")[1]: app.cluster.node_of(pid) for name, pid in pids.items()}


def _model_node(nodes: dict[str, int]) -> int:
    (node,) = [node for name, node in nodes.items() if name.startswith(LLM_DEPLOYMENT_PREFIX)]
    return node


async def _lose_node_under_load(app: ServedApp, node: int) -> tuple[list[StreamOutcome], float]:
    """Stream the fault tests' load; take ``node`` away once enough streams are open."""
    figures = FaultFigures.read()
    open_streams = OpenStreams(figures.streams_open_at_kill)
    bodies = [
        chat_body(f"Node lost {index}", max_tokens=figures.tokens_per_answer, ignore_eos=True)
        for index in range(figures.clients)
    ]
    load = asyncio.ensure_future(
        stream_many(app.base_url, bodies, figures.client_timeout_s, open_streams=open_streams)
    )
    try:
        await asyncio.wait_for(open_streams.reached.wait(), figures.client_timeout_s)
    except asyncio.TimeoutError:
        raise AssertionError(
            f"{figures.streams_open_at_kill} streams were never open at once: {await load}"
        ) from None
    lost_at = time.time()
    app.cluster.lose_node(node)
    return await load, lost_at


def test_fake_npu_worker_node_lost_under_load_errors_streams_and_serve_moves_the_replica(
    app: ServedApp, record_figure: Any
) -> None:
    before = _replica_nodes(app)
    lost = _model_node(before)
    # The package's app keeps the ingress on the head (conftest.app).
    assert before[INGRESS_DEPLOYMENT] == 0 and lost != 0, before

    outcomes, lost_at = asyncio.run(_lose_node_under_load(app, lost))

    hung = [outcome for outcome in outcomes if outcome.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    cut = [outcome for outcome in outcomes if not outcome.completed]
    # Through the lost node's own proxy: the connection breaks, and the client raises.
    broken = [outcome for outcome in cut if outcome.connection_broke]
    # Through the head's proxy: the plugin's event for a lost replica, mid-stream or as
    # the response (503) of a request that had not begun.
    answered = [outcome for outcome in cut if not outcome.connection_broke]
    assert answered, f"no cut stream went through a proxy that lived on: {outcomes}"
    for outcome in answered:
        if outcome.status == 200:
            assert_the_fault_event(outcome, REPLICA_LOST)
        else:
            assert outcome.status == REPLICA_LOST.code and outcome.request_id, outcome
            assert outcome.error is not None, outcome
            assert REPLICA_LOST.error(outcome.request_id)["message"] in outcome.error, outcome
    last_end_s = max(outcome.ended_at for outcome in cut) - lost_at
    assert last_end_s <= guarantees()["node_loss_cut_streams_end_within_s"], [
        round(outcome.ended_at - lost_at, 1) for outcome in cut
    ]

    recovered_at = wait_for_success(app.base_url, FaultFigures.read().recovery_deadline_s)
    after = _replica_nodes(app)
    # Serve placed the model's replica on the worker that is left.
    assert _model_node(after) not in (0, lost), after
    later = asyncio.run(
        stream_many(
            app.base_url,
            [chat_body(max_tokens=16)] * guarantees()["max_num_seqs"],
            FaultFigures.read().client_timeout_s,
        )
    )
    assert all(outcome.completed for outcome in later), later

    record_figure("completed", len(outcomes) - len(cut))
    record_figure("cut: event or 503 / connection broken", f"{len(answered)} / {len(broken)}")
    record_figure("loss to last cut stream's end s", round(last_end_s, 1))
    record_figure("recovery s", round(recovered_at - lost_at, 1))
