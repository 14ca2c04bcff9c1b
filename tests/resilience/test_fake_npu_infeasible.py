"""The recipe on a cluster that has no NPU: a clear error at build time, never a silent wait.

The check is ray_serve_npu.placement's, reached the way ``python serve_npu.py``
reaches it: ``ray_serve_npu.build_openai_app`` builds the recipe's app in a driver
of the cluster. A replica larger than any node is tested in tests/multinode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.fake_npu.cluster import FakeNPUCluster
from ray_serve_npu.hardware import NPU_RESOURCE

from .fake_serving import CPU_ONLY, DriverFailed, served_app

pytestmark = pytest.mark.fake_npu

#: The check answers as soon as the driver has imported Serve LLM and run the recipe.
DEPLOY_TIMEOUT_S = 180


def test_fake_npu_recipe_on_a_cluster_without_npus_fails_at_build_with_the_fix(
    cluster: FakeNPUCluster, tiny_model_dir: Path, tmp_path: Path
) -> None:
    assert [node.node_kind for node in cluster.nodes] == [CPU_ONLY], (
        "this test needs the package's cluster before the app fixture joins its NPU "
        "workers: conftest.MODULE_ORDER runs it first, and an option that reorders "
        f"tests (such as --ff) breaks that; the cluster has {cluster.nodes}"
    )
    # Without the check, the deploy would wait for NPUs until the timeout.
    with pytest.raises(DriverFailed) as failure:
        with served_app(cluster, tiny_model_dir, tmp_path, "no-npus", {}, DEPLOY_TIMEOUT_S):
            pass
    error = failure.value.stderr.strip().splitlines()[-1]
    assert error.startswith("ray_serve_npu.placement.InfeasiblePlacementError:"), error
    assert f"{NPU_RESOURCE}: 1" in error and "no node can hold" in error, error
    assert "Fix:" in error and "Serve would wait for it forever" in error, error
