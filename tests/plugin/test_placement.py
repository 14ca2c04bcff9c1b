"""Against a real local Ray cluster with eight fake NPUs: Serve places an npu deployment.

The engine is a mock (ray_serve_npu_tooling.mock_engine): placement is what is tested.
"""

from __future__ import annotations

import time

from npu_configs import make_llm_config
from ray import serve
from ray.serve.llm import build_llm_deployment
from ray.util.placement_group import placement_group_table

MOCK_ENGINE_ENV = {"RAYLLM_VLLM_ENGINE_CLS": "ray_serve_npu_tooling.mock_engine.MockEngine"}


def test_tp8_npu_deployment_gets_eight_npu_bundles_and_is_placed(ray_with_fake_npus: None) -> None:
    config = make_llm_config(
        accelerator_config={"kind": "npu"},
        engine_kwargs={"tensor_parallel_size": 8},
        runtime_env={"env_vars": MOCK_ENGINE_ENV},
    )
    # serve.run waits forever for an unplaceable group; _run returns at once.
    serve._run(
        build_llm_deployment(config), name="npu-placement", route_prefix=None, _blocking=False
    )
    try:
        _wait_until_running("npu-placement")
        tables = [t for t in placement_group_table().values() if t["state"] != "REMOVED"]
        assert len(tables) == 1, tables
        (table,) = tables
        bundles = list(table["bundles"].values())
        assert table["state"] == "CREATED"
        assert len(bundles) == 8
        assert all(bundle.get("NPU") == 1.0 for bundle in bundles)
        assert all("GPU" not in bundle for bundle in bundles)
        # Serve put the whole group on the one node that has the NPUs.
        assert len(set(table["bundles_to_node_id"].values())) == 1
    finally:
        serve.delete("npu-placement")
        _wait_until_placement_groups_removed()


def _wait_until_running(app: str, timeout_s: float = 120) -> None:
    # An unplaceable group leaves the app DEPLOYING forever: fail instead of hanging.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = serve.status().applications.get(app)
        if status is not None and status.status == "RUNNING":
            return
        time.sleep(0.5)
    raise AssertionError(
        f"app {app!r} not RUNNING after {timeout_s}s: {serve.status().applications.get(app)}; "
        f"placement groups: {placement_group_table()}"
    )


def _wait_until_placement_groups_removed(timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(t["state"] == "REMOVED" for t in placement_group_table().values()):
            return
        time.sleep(0.5)
    raise AssertionError(
        f"placement groups still held after {timeout_s}s: {placement_group_table()}"
    )
