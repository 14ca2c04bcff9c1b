"""One fake NPU cluster and one served recipe for the load, bad-input and fault tests.

Both live as long as this package's tests run.

Starting the engine takes about a minute on two cores, so the modules share the
app; the fault tests restart it and run last. The loads and bounds the tests
assert are in guarantees.json, which docs/testing.md shows; the figures
they measure are printed at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ray_serve_npu.fake_npu.cluster import FakeNPUCluster, fake_npu_cluster
from ray_serve_npu.fake_npu.tiny_model import tiny_model

from .fake_serving import ServedApp, guarantees, served_app

#: Modules whose tests restart the shared app: they run after the others.
_RESTARTING_MODULES = ("test_fake_npu_faults.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move this package's restarting tests after its others; leave every other item in place."""
    here = Path(__file__).parent
    positions = [index for index, item in enumerate(items) if item.path.parent == here]
    ours = sorted(
        (items[index] for index in positions),
        key=lambda item: item.path.name in _RESTARTING_MODULES,
    )
    for index, item in zip(positions, ours, strict=True):
        items[index] = item


@pytest.fixture(scope="package")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="package")
def cluster() -> Iterator[FakeNPUCluster]:
    with fake_npu_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="package")
def app(
    cluster: FakeNPUCluster, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApp]:
    """recipes/serve_npu.py on the fake tier, real engine, ``max_num_seqs`` cut to 8."""
    with served_app(
        cluster,
        tiny_model_dir,
        tmp_path_factory.mktemp("app"),
        "resilience",
        engine_kwargs={"max_num_seqs": guarantees()["max_num_seqs"]},
    ) as app:
        yield app
