"""One fake NPU cluster and one served recipe for the no-NPU, load, bad-input, fault and
node-loss tests (the head-restart test has a cluster of its own, with Redis, and runs
before this one starts).

Both live as long as this package's tests run, and the modules run in the order that
:data:`MODULE_ORDER` gives. The cluster starts as a head without NPUs, on which the
recipe must fail at build time (test_fake_npu_infeasible.py). Then two fake A2 workers
join it, as on a multi-node cluster (docs/multi-node.md), and the recipe is served:
starting the engine takes about a minute on two cores, so the modules share the app.
The fault tests restart it, and the node-loss test, which takes a worker away, runs
last. The loads and bounds the tests assert are in guarantees.json, which
docs/testing.md shows; the figures they measure are printed at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, fake_npu_cluster
from ray_serve_npu.fake_npu.tiny_model import tiny_model

from .fake_serving import CPU_ONLY, ServedApp, guarantees, on_node, served_app

#: Where this package's modules run among its others (0): the head restart, on a cluster
#: and app of its own, before the shared cluster starts (two engines would share two
#: cores); the one that needs a cluster without NPUs before the workers join; and the
#: ones that restart the shared app after.
MODULE_ORDER = {
    "test_fake_npu_head_restart.py": -2,
    "test_fake_npu_infeasible.py": -1,
    "test_fake_npu_faults.py": 1,
    "test_fake_npu_node_loss.py": 2,
}
#: The workers that join the head before the app is served.
WORKERS = 2


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
def cluster() -> Iterator[FakeNPUCluster]:
    """A head without NPUs; :func:`app` joins the workers."""
    with fake_npu_cluster([FakeNode(node_kind=CPU_ONLY)]) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def app(
    cluster: FakeNPUCluster, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApp]:
    """recipes/serve_npu.py on the fake tier, real engine, ``max_num_seqs`` cut to 8.

    The ingress replica is kept on the head, where Serve's controller runs, so that the
    node-loss test loses the model's replica without the ingress, which sends the
    plugin's events (docs/testing.md says what a lost ingress does instead).
    """
    for _ in range(WORKERS):
        cluster.add_node(FakeNode())
    with served_app(
        cluster,
        tiny_model_dir,
        tmp_path_factory.mktemp("app"),
        "resilience",
        engine_kwargs={"max_num_seqs": guarantees()["max_num_seqs"]},
        ingress_options=on_node(cluster.node_ip(0)),
    ) as app:
        yield app
