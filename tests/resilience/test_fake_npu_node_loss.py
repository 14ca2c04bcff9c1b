"""A worker node lost under load on the fake NPU tier: the node that runs the model's replica.

In the middle of a load of streaming clients, the test takes away the fake A2 worker
whose NPUs the model replica holds: SIGKILL to its raylet and every process on it,
Serve's proxy and the engine included (``FakeNPUCluster.lose_node``). Every stream must
end, none may hang; Serve must place the replica on the other worker and answer again.
Real Ray, Serve, plugin and vLLM (CPU build); fake NPUs, fake nodes on one machine, and
a tiny random model.

The clients are spread over every proxy that runs, the head's, the ingress worker's and
the lost node's, as a load balancer over the nodes would spread them. A stream through
the lost node's own proxy loses its connection; a stream through a proxy that lives on
must end in the plugin's event for a lost replica.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from ray_serve_npu.streams import REPLICA_LOST

from .fake_serving import (
    INGRESS_NODE,
    LLM_DEPLOYMENT_PREFIX,
    NPU_NODES,
    ServedApp,
    assert_recovers,
    assert_refused_with,
    assert_the_fault_event,
    every,
    guarantees,
    proxy_logs,
    run_driver,
    strike_under_load,
    wait_for_proxy,
)

pytestmark = pytest.mark.fake_npu

#: Serve's deployment name of the OpenAI ingress that the plugin builds.
INGRESS_DEPLOYMENT = "OpenAiIngress"


def _replica_nodes(app: ServedApp) -> dict[str, list[int]]:
    """The fake nodes that each deployment's live replicas run on."""
    pids = run_driver(app.cluster, "replica-pids", "", timeout_s=120)["pids"]
    nodes: dict[str, list[int]] = {}
    for name, pid in pids.items():
        deployment = name.split("#")[1]
        deployment = (
            LLM_DEPLOYMENT_PREFIX if deployment.startswith(LLM_DEPLOYMENT_PREFIX) else deployment
        )
        nodes.setdefault(deployment, []).append(app.cluster.node_of(pid))
    return {deployment: sorted(indices) for deployment, indices in nodes.items()}


def test_fake_npu_worker_node_lost_under_load_errors_streams_and_serve_moves_the_replica(
    app: ServedApp, proxy_urls: dict[int, str], record_figure: Any
) -> None:
    before = _replica_nodes(app)
    # One model replica on a fake A2 worker; the package's app keeps the ingress on a
    # worker of its own (conftest.app).
    assert before[INGRESS_DEPLOYMENT] == [INGRESS_NODE], before
    (lost,) = before[LLM_DEPLOYMENT_PREFIX]
    (other_worker,) = set(NPU_NODES) - {lost}
    # Serve starts a node's proxy with its first replica: the other A2 worker has none yet.
    proxies = [app.base_url, proxy_urls[INGRESS_NODE], proxy_urls[lost]]
    for proxy in proxies:
        wait_for_proxy(proxy)

    by_proxy, lost_at = asyncio.run(
        strike_under_load(app, functools.partial(app.cluster.lose_node, lost), proxies)
    )
    outcomes = every(by_proxy)

    hung = [outcome for outcome in outcomes if outcome.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    cut = [outcome for outcome in outcomes if not outcome.completed]
    # Through the lost node's own proxy: the connection breaks, and the client raises;
    # through no other.
    broken = [outcome for outcome in cut if outcome.connection_broke]
    survived = every({url: got for url, got in by_proxy.items() if url != proxy_urls[lost]})
    assert not [o for o in survived if o.connection_broke], survived
    # Through a proxy that lived on (the head's or the ingress worker's): the plugin's
    # event for a lost replica, mid-stream or as the response (503) of a request that
    # had not begun.
    answered = [outcome for outcome in cut if not outcome.connection_broke]
    assert answered, f"no cut stream went through a proxy that lived on: {outcomes}"
    for outcome in answered:
        if outcome.status == 200:
            assert_the_fault_event(outcome, REPLICA_LOST)
        else:
            assert_refused_with(outcome, REPLICA_LOST)
    last_end_s = max(outcome.ended_at for outcome in cut) - lost_at
    assert last_end_s <= guarantees()["node_loss_cut_streams_end_within_s"], [
        round(outcome.ended_at - lost_at, 1) for outcome in cut
    ]

    record_figure("completed", len(outcomes) - len(cut))
    record_figure("cut: event or 503 / connection broken", f"{len(answered)} / {len(broken)}")
    record_figure("loss to last cut stream's end s", round(last_end_s, 1))

    assert_recovers(app, lost_at, record_figure)
    # Long after the cut streams ended, so every proxy has logged what it answered: the
    # proxies that lived on answered the requests that got the event, and none of those
    # whose connection broke.
    survivors = proxy_logs(app.cluster, [0, INGRESS_NODE, other_worker])
    assert not [o for o in answered if o.request_id not in survivors], answered
    assert not [o for o in broken if o.request_id and o.request_id in survivors], broken
    # Serve placed the model's replica on the worker that is left.
    assert _replica_nodes(app)[LLM_DEPLOYMENT_PREFIX] == [other_worker]
