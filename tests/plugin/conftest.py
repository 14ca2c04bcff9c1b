"""Fixtures for the plugin's own tests: they need no NPU, no GPU and no engine."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest
import ray

import ray_serve_npu

# Installed, the package's .pth hook activates the npu kind when Ray Serve LLM
# loads; the explicit call covers a run from a source tree, where no hook runs.
ray_serve_npu.activate()


@pytest.fixture(scope="module")
def ray_with_fake_npus() -> Iterator[None]:
    """A local Ray instance that advertises eight fake NPUs (no device behind them)."""
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
            resources={"NPU": 8},
            include_dashboard=False,
            _temp_dir=temp_dir,
        )
        try:
            yield
        finally:
            from ray import serve

            serve.shutdown()
            ray.shutdown()
