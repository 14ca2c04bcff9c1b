"""The npu kind with Ray Serve LLM's data-parallel pattern (``build_dp_openai_app``, ``DPServer``).

Runs at every Ray of the supported range: the pattern's module is the same in
Ray 2.57.1 and 2.60.0, and differs in Ray 2.56.1 only in the direct-streaming
branch of its builder. What is tested here is what the plugin adds to it: NPU
bundles for every rank, no GPU key, and a build-time error for a gang that no
node set can hold. That each rank gets NPUs of its own is tested by deploying the
app on a fake A3 node (test_data_parallel_placement.py), and with vLLM's
engine on the fake tier (tests/fake_tier/test_fake_npu_a3_data_parallel.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from npu_configs import make_llm_config
from ray.llm._internal.serve.serving_patterns.data_parallel.dp_server import DPServer
from ray.serve.config import GangPlacementStrategy, GangRuntimeFailurePolicy
from ray.serve.llm import LLMConfig

from ray_serve_npu import build_dp_openai_app
from ray_serve_npu.hardware import A2, A3, NPU_RESOURCE
from ray_serve_npu.model_recipes import find_run, recipe_for
from ray_serve_npu.placement import (
    InfeasiblePlacementError,
    NodeCapacity,
    infeasibility,
    placement_request,
)
from ray_serve_npu.releases import SERVE_LLM_RELEASE


def _dp_config(data_parallel_size: int = 4, tensor_parallel_size: int = 4) -> LLMConfig:
    return make_llm_config(
        accelerator_config={"kind": "npu"},
        deployment_config={"num_replicas": 1},
        engine_kwargs={
            "data_parallel_size": data_parallel_size,
            "tensor_parallel_size": tensor_parallel_size,
            "enable_expert_parallel": True,
        },
    )


def _node(kind: Any, cpus: int = 64) -> NodeCapacity:
    return NodeCapacity(
        name=f"an {kind.name} node",
        resources={NPU_RESOURCE: kind.devices_per_node, "CPU": cpus},
    )


def test_dp_ranks_are_one_gang_of_npu_replicas(no_ray: None) -> None:
    options = DPServer.get_deployment_options(_dp_config())
    # One DP group of four ranks: four Serve replicas, scheduled and restarted together.
    assert options["num_replicas"] == 4
    gang = options["gang_scheduling_config"]
    assert gang.gang_size == 4
    assert gang.gang_placement_strategy == GangPlacementStrategy.PACK
    assert gang.runtime_failure_policy == GangRuntimeFailurePolicy.RESTART_GANG
    # Each rank: four NPU bundles, the replica actor's CPU in the first, no GPU key.
    assert options["placement_group_bundles"] == [
        {"CPU": 1, NPU_RESOURCE: 1},
        {NPU_RESOURCE: 1},
        {NPU_RESOURCE: 1},
        {NPU_RESOURCE: 1},
    ]
    assert "placement_group_strategy" not in options


def test_dp_placement_request_is_the_whole_gang(no_ray: None) -> None:
    request = placement_request(_dp_config())
    assert request is not None
    assert request.data_parallel_size == 4
    assert request.strategy == "PACK"
    assert len(request.bundles) == 16
    assert all(bundle[NPU_RESOURCE] == 1 for bundle in request.bundles)
    assert all("GPU" not in bundle for bundle in request.bundles)
    # Rank i's slice starts with its replica actor's CPU.
    assert [bundle.get("CPU", 0) for bundle in request.bundles] == [1, 0, 0, 0] * 4


def test_dp4_tp4_fits_one_a3_node_and_not_one_a2_node(no_ray: None) -> None:
    request = placement_request(_dp_config())
    assert request is not None
    assert infeasibility(request, [_node(A3)]) is None
    problem = infeasibility(request, [_node(A2)])
    assert problem is not None
    assert "gang of 4 data-parallel replicas" in problem
    assert f"{NPU_RESOURCE}: 16" in problem
    assert "Fix: lower data_parallel_size x tensor_parallel_size" in problem


def test_dp2_tp4_fits_one_a2_node(no_ray: None) -> None:
    request = placement_request(_dp_config(data_parallel_size=2))
    assert request is not None
    assert len(request.bundles) == 8
    assert infeasibility(request, [_node(A2)]) is None


def test_build_dp_app_refuses_a_gang_beyond_the_cluster(ray_with_fake_npus: None) -> None:
    # The fixture's cluster has eight NPUs; DP4 x TP4 asks for sixteen.
    with pytest.raises(InfeasiblePlacementError) as error:
        build_dp_openai_app({"llm_config": _dp_config()})
    message = str(error.value)
    assert message.startswith("tiny: the placement group of a gang")
    assert "gang of 4 data-parallel replicas" in message
    assert "Fix: lower data_parallel_size x tensor_parallel_size" in message
    assert "Serve would wait for it forever" in message


def test_build_dp_app_accepts_a_gang_the_cluster_holds(ray_with_fake_npus: None) -> None:
    app = build_dp_openai_app({"llm_config": _dp_config(data_parallel_size=2)})
    assert app is not None


def test_a_two_node_ci_run_is_a_gang_two_a2_nodes_hold_and_one_does_not(no_ray: None) -> None:
    # serve_model.py's recipe of vLLM-Ascend's Kimi-K2.5 A2 dual-node config: DP2 x TP8.
    run = find_run("Kimi-K2_5-W4A8-A2-dual-nodes", SERVE_LLM_RELEASE.tag)
    request = placement_request(LLMConfig(**recipe_for(run, "/models/Kimi").llm_config))
    assert request is not None and (request.data_parallel_size, request.strategy) == (2, "PACK")
    assert infeasibility(request, [_node(A2), _node(A2)]) is None
    problem = infeasibility(request, [_node(A2)])
    assert problem is not None and f"{NPU_RESOURCE}: 16" in problem
