"""A fake cluster of two A2 nodes (eight fake NPUs each) that this test process drives."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import ray
from ray import serve

import ray_serve_npu  # noqa: F401  (activates the npu kind)
from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, fake_npu_cluster


@pytest.fixture(scope="package")
def two_node_cluster() -> Iterator[FakeNPUCluster]:
    """Two fake A2 nodes; this process is connected to them and Serve runs without proxies.

    No HTTP proxy: the tests send their requests through Serve handles, and each
    node's proxy would share one port of this machine (Serve opens it for port
    reuse), so a request would reach either node's.
    """
    with fake_npu_cluster([FakeNode(), FakeNode()]) as cluster, cluster.driver_env():
        ray.init(address=cluster.address, logging_level="ERROR")
        try:
            serve.start(proxy_location="Disabled")
            yield cluster
        finally:
            serve.shutdown()
            ray.shutdown()
