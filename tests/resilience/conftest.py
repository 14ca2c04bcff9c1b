"""One fake NPU cluster and one served recipe for every test of this package: no NPUs,
load, bad input, faults, the head restarted and a worker node lost.

Both live as long as this package's tests run, and the modules run in the order that
:data:`MODULE_ORDER` gives. The cluster is laid out as the KubeRay recipe's
(docs/kuberay.md): a head with neither NPUs nor CPUs for replicas, whose GCS keeps its
tables in Redis where ``redis-server`` is installed. On the head alone the recipe must
fail at build time (test_fake_npu_infeasible.py). Then three workers join it: one
without NPUs that runs the ingress, and two fake A2 workers, one of which runs the
model's replica. Starting the engine takes about a minute on two cores, so the modules
share the app. The fault tests restart its replica and engine, the head-restart tests
kill the head twice, and the node-loss test, which takes the model's worker away,
runs last. Each worker's proxy listens on a port of its own, so a test picks the proxy
its clients go through. The loads and bounds the tests assert are in guarantees.json,
which docs/testing.md shows; the figures they measure are printed at the end of the run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ray_serve_npu_tooling.gcs_redis import gcs_redis, redis_server_missing

from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.fake_npu.tiny_model import tiny_model

from .fake_serving import (
    APP_NAME,
    CPU_ONLY,
    INGRESS_NODE,
    NPU_NODES,
    ServedApp,
    guarantees,
    on_node,
    served_app,
)

#: Where this package's modules run among its others (0): the one that needs a cluster
#: without NPUs before the workers join first; then the ones that restart the app's
#: replica or the head; the one that takes a worker away last.
MODULE_ORDER = {
    "test_fake_npu_infeasible.py": -1,
    "test_fake_npu_faults.py": 1,
    "test_fake_npu_head_restart.py": 2,
    "test_fake_npu_node_loss.py": 3,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put this package's modules in :data:`MODULE_ORDER`; leave every other item in place."""
    here = Path(__file__).parent
    positions = [index for index, item in enumerate(items) if item.path.parent == here]
    ours = sorted(
        (items[index] for index in positions), key=lambda item: MODULE_ORDER.get(item.path.name, 0)
    )
    for index, item in zip(positions, ours, strict=True):
        items[index] = item


@pytest.fixture(scope="package")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNPUCluster]:
    """The head alone, its GCS's tables in Redis where ``redis-server`` is installed (the
    head-restart tests skip without it); :func:`app` joins the workers."""
    # As KubeRay's head: no NPUs and num-cpus 0, so no replica runs there.
    head = FakeNode(node_kind=CPU_ONLY, num_cpus=0)
    with contextlib.ExitStack() as stack:
        storage = None
        if redis_server_missing() is None:
            workdir = tmp_path_factory.mktemp("gcs-redis")
            storage = stack.enter_context(gcs_redis(workdir, namespace="fake-npu-resilience"))
        cluster = FakeNPUCluster([head], gcs_storage=storage).start()
        stack.callback(cluster.stop)
        yield cluster


@pytest.fixture(scope="package")
def proxy_urls(cluster: FakeNPUCluster) -> dict[int, str]:
    """Each worker's proxy, by node index: on a port of its own (Serve's
    ``RAY_SERVE_WORKER_PROXY_HTTP_PORT``, which the head's proxy ignores)."""
    ports: set[int] = set()
    for _ in (INGRESS_NODE, *NPU_NODES):
        ports.add(free_port(taken=ports))
    return {
        index: f"http://127.0.0.1:{port}"
        for index, port in zip((INGRESS_NODE, *NPU_NODES), sorted(ports), strict=True)
    }


@pytest.fixture(scope="package")
def app(
    cluster: FakeNPUCluster,
    proxy_urls: dict[int, str],
    tiny_model_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServedApp]:
    """recipes/serve_npu.py on the fake tier, real engine, ``max_num_seqs`` cut to 8.

    The ingress replica is kept on its own worker, so that the node-loss test loses the
    model's replica without the ingress, which sends the plugin's events, and the head's
    loss loses neither (docs/testing.md says what a lost ingress does instead).
    """
    for index in (INGRESS_NODE, *NPU_NODES):
        port = str(httpx.URL(proxy_urls[index]).port)
        kind = {"node_kind": CPU_ONLY} if index == INGRESS_NODE else {}
        joined = cluster.add_node(FakeNode(env={"RAY_SERVE_WORKER_PROXY_HTTP_PORT": port}, **kind))
        assert joined == index, (joined, index)
    with served_app(
        cluster,
        tiny_model_dir,
        tmp_path_factory.mktemp("app"),
        APP_NAME,
        engine_kwargs={"max_num_seqs": guarantees()["max_num_seqs"]},
        ingress_options=on_node(cluster.node_ip(INGRESS_NODE)),
    ) as app:
        yield app
