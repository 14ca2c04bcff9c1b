"""The head node restarted under load, with GCS fault tolerance, on the fake NPU tier.

Laid out as the KubeRay recipe is (docs/kuberay.md): a head with neither NPUs nor CPUs
for replicas, one fake A2 worker that runs the ingress and the model's replica, and the
GCS's tables in Redis (Debian's ``redis-server`` on loopback, with a password). While
clients stream, the head, its GCS, Serve's controller and the head's proxy with it, is
killed with SIGKILL and, after a while, started again at its address, as Kubernetes
restarts a head pod. Real Ray, Serve, plugin, vLLM (CPU build) and Redis; fake NPUs,
fake nodes on one machine, and a tiny random model.

Both nodes' proxies listen on the same loopback port, so the kernel spreads new
connections over them; once the head is gone, only the worker's proxy is there.
Measured: streams through the head's proxy break; requests through the worker's proxy
wait while the head is away and complete once it is back (none completed while it was
away, where Ray's documentation says Serve keeps answering: the test records the count).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ray_serve_npu_tooling.gcs_redis import gcs_redis, redis_server_missing
from ray_serve_npu_tooling.stream_client import StreamOutcome, stream_chat

from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster

from .fake_serving import CPU_ONLY, ServedApp, chat_body, guarantees, run_driver, served_app

pytestmark = pytest.mark.fake_npu

APP = "head-restart"
#: Clients stream before the head goes, for a warm, busy engine.
WARM_S = 5
#: And after it is back, to see the cluster serve on.
AFTER_S = 10
CLIENT_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def restarting_app(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApp]:
    if missing := redis_server_missing():
        pytest.skip(missing)
    workdir = tmp_path_factory.mktemp("head-restart")
    with gcs_redis(workdir, namespace="fake-npu-head-restart") as storage:
        # As KubeRay's head: no NPUs and num-cpus 0, so no replica runs there.
        head = FakeNode(node_kind=CPU_ONLY, num_cpus=0)
        cluster = FakeNPUCluster([head, FakeNode()], gcs_storage=storage).start()
        try:
            with served_app(
                cluster,
                tiny_model_dir,
                workdir,
                APP,
                engine_kwargs={"max_num_seqs": guarantees()["max_num_seqs"]},
            ) as app:
                yield app
        finally:
            cluster.stop()


async def _stream_until(app: ServedApp, stop: asyncio.Event) -> list[StreamOutcome]:
    """Clients that each send one streaming request after another until ``stop``, each on
    a new connection, so that a new request reaches whichever proxy is there."""
    figures = guarantees()
    body = chat_body(max_tokens=figures["head_restart_tokens_per_answer"], ignore_eos=True)
    outcomes: list[StreamOutcome] = []

    async def client() -> None:
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits, timeout=CLIENT_TIMEOUT_S) as http:
            while not stop.is_set():
                outcomes.append(await stream_chat(http, app.base_url, body, CLIENT_TIMEOUT_S))

    await asyncio.gather(*(client() for _ in range(figures["head_restart_clients"])))
    return outcomes


async def _restart_head_under_load(app: ServedApp) -> tuple[list[StreamOutcome], float, float]:
    """The load's outcomes; when the head was gone, and when it was back."""
    stop = asyncio.Event()
    load = asyncio.create_task(_stream_until(app, stop))
    try:
        await asyncio.sleep(WARM_S)
        await asyncio.to_thread(app.cluster.lose_node, 0)
        gone_at = time.time()
        await asyncio.sleep(guarantees()["head_restart_down_s"])
        await asyncio.to_thread(app.cluster.start_head)
        back_at = time.time()
        await asyncio.sleep(AFTER_S)
    finally:
        # Also when the head does not come back: the clients stop, none is left looping.
        stop.set()
    return await load, gone_at, back_at


def _wait_for_running(app: ServedApp, deadline_s: float) -> float:
    """Poll Serve's status of the app until it is RUNNING; the time.time() it was."""
    deadline = time.monotonic() + deadline_s
    statuses: list[str] = []
    while time.monotonic() < deadline:
        statuses.append(run_driver(app.cluster, "status", APP, timeout_s=120)["status"])
        if statuses[-1] == "RUNNING":
            return time.time()
        time.sleep(2)
    raise AssertionError(f"the app was not RUNNING within {deadline_s} s: {statuses}")


def test_fake_npu_head_restart_with_redis_serve_holds_requests_and_keeps_its_replicas(
    restarting_app: ServedApp, record_figure: Any
) -> None:
    app = restarting_app
    before = run_driver(app.cluster, "replica-pids", "", timeout_s=120)["pids"]

    outcomes, gone_at, back_at = asyncio.run(_restart_head_under_load(app))

    hung = [o for o in outcomes if o.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    # Only a stream through the head's own proxy could fail: its connection broke.
    cut = [o for o in outcomes if not o.completed]
    assert cut and all(o.connection_broke for o in cut), cut
    # Every other request got its whole answer, those in flight while the head was away
    # included: measured, they waited and went on once it was back.
    held = [o for o in outcomes if o.completed and o.ended_at - o.total_s < gone_at < o.ended_at]
    assert held, "no request was in flight through the worker's proxy when the head went"

    running_at = _wait_for_running(app, guarantees()["head_restart_serve_running_within_s"])
    # Serve's controller came back on the new head and took up the replicas it had.
    after = run_driver(app.cluster, "replica-pids", "", timeout_s=120)["pids"]
    assert after == before, (before, after)

    record_figure("head away s", round(back_at - gone_at, 1))
    record_figure(
        "completed while the head was away",
        sum(1 for o in outcomes if o.completed and gone_at < o.ended_at < back_at),
    )
    record_figure("held across the restart", len(held))
    record_figure(
        "held: last one ended, s after the head was back",
        round(max(o.ended_at for o in held) - back_at, 1),
    )
    record_figure("cut: connection broken", len(cut))
    record_figure("head back to app RUNNING s", round(running_at - back_at, 1))
