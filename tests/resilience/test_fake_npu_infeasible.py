"""An npu deployment on a cluster that has no NPU: a clear error at build time, never a silent wait.

The check is ray_serve_npu.placement's, reached the way users reach it: the app is
built by ``ray_serve_npu.build_openai_app`` in a driver connected to the cluster.
A replica larger than any node is tested in tests/multinode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ray_serve_npu.hardware import NPU_RESOURCE, NodeKind
from ray_serve_npu.testing.cluster import FakeNode, FakeNPUCluster, fake_npu_cluster

from .fake_serving import DRIVER, free_port, recipe_llm_config

pytestmark = pytest.mark.fake_npu

#: A node without NPUs (the fake cluster still gives it an accelerator-type
#: resource, which no bundle here asks for).
CPU_ONLY = NodeKind(name="CPU only", devices_per_node=0, soc_names=(), image_tag_suffix="")
#: A build-time check answers in seconds; without it, Serve would wait forever.
DEPLOY_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def cluster_without_npus() -> Iterator[FakeNPUCluster]:
    with fake_npu_cluster([FakeNode(node_kind=CPU_ONLY)]) as cluster:
        yield cluster


def test_fake_npu_kind_on_a_cluster_without_npus_fails_at_build_with_the_fix(
    cluster_without_npus: FakeNPUCluster, tiny_model_dir: Path, tmp_path: Path
) -> None:
    config_file = tmp_path / "llm_configs.json"
    config_file.write_text(json.dumps([recipe_llm_config(tiny_model_dir)]))
    result = subprocess.run(
        [sys.executable, str(DRIVER), "deploy", str(config_file)]
        + [f"--port={free_port()}", "--app=no-npus"],
        env={**os.environ, **cluster_without_npus.env()},
        capture_output=True,
        text=True,
        timeout=DEPLOY_TIMEOUT_S,
    )
    assert result.returncode != 0, result.stdout
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("ray_serve_npu.placement.InfeasiblePlacementError:"), result.stderr
    assert f"{NPU_RESOURCE}: 1" in error and "no node can hold" in error, error
    assert "Fix:" in error and "Serve would wait for it forever" in error, error
