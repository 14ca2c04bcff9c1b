"""Fixtures for the plugin's own tests: they need no NPU, no GPU and no engine."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import ray

import ray_serve_npu
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.hardware import A2, NPU_RESOURCE, NodeKind

# Installed, the package's .pth hook activates the npu kind when Ray Serve LLM
# loads; the explicit call covers a run from a source tree, where no hook runs.
ray_serve_npu.activate()


@pytest.fixture(scope="module")
def ray_with_fake_npus(request: pytest.FixtureRequest) -> Iterator[None]:
    """A local Ray instance that advertises a node's fake NPUs (no device behind them).

    An A2 node's eight, or a node kind's own when a test parametrizes the fixture
    indirectly with one (``ray_serve_npu.hardware.NodeKind``).
    """
    node_kind: NodeKind = getattr(request, "param", A2)
    # Ray's socket paths must stay short, hence a short temp dir.
    with tempfile.TemporaryDirectory(prefix="rsn-", dir="/tmp") as temp_dir:
        # A test elsewhere in the session may have left its own connection open.
        if ray.is_initialized():
            ray.shutdown()
        # address="local": a new instance even where RAY_ADDRESS or a running
        # cluster of another test points elsewhere.
        ray.init(
            address="local",
            num_cpus=4,
            resources={NPU_RESOURCE: node_kind.devices_per_node},
            include_dashboard=False,
            _temp_dir=temp_dir,
        )
        from ray import serve

        # Serve's proxy would take port 8000, which the pages' servers use; a proxy
        # left there would answer their clients. No test here sends HTTP to Serve.
        serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
        try:
            yield
        finally:
            serve.shutdown()
            ray.shutdown()


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compute deployment options without a cluster; fail where anything would start Ray.

    ``LLMServer.get_deployment_options`` reads only the driver's runtime_env from
    the runtime context, which an empty one stands in for. A worker that ran a
    cluster's test before has Ray initialized, and Ray's log filter would then read
    the stand-in's job and node: the process counts as one without Ray.
    """

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("this test must not start Ray")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(runtime_env={}))
