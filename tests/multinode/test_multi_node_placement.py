"""On two fake A2 nodes: where Serve puts the multi-node recipes' replicas, and how it scales.

The recipes' own LLMConfigs are deployed through ``ray_serve_npu.build_openai_app``
with the mock engine (``ray_serve_npu_tooling.mock_engine``): Ray, Serve, the
placement groups and the requests are real; the engine is not.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import ray
from ray import serve
from ray.llm._internal.serve.core.configs.openai_api_models import ChatCompletionRequest
from ray.serve.llm import LLMConfig
from ray.util.placement_group import placement_group_table
from ray_serve_npu_tooling.mock_engine import HOLD_ENV_VAR, MOCK_ANSWER
from recipe_modules import load_recipe

from ray_serve_npu import build_openai_app
from ray_serve_npu.fake_npu.cluster import FakeNPUCluster
from ray_serve_npu.placement import InfeasiblePlacementError, autoscaler_nodes

MODEL_ID = "deepseek-v4-flash"
DEPLOYMENT = f"LLMServer:{MODEL_ID}"
NPUS_PER_NODE = 8


def mock_variant(recipe: str, **changes: Any) -> LLMConfig:
    """The recipe's LLMConfig with the mock engine in place of vLLM, plus ``changes``."""
    fields = load_recipe(recipe).llm_config.model_dump(exclude_unset=True)
    env = {"RAYLLM_VLLM_ENGINE_CLS": "ray_serve_npu_tooling.mock_engine.MockEngine"}
    return LLMConfig(**{**fields, "runtime_env": {"env_vars": env}, **changes})


@pytest.fixture
def deploy(two_node_cluster: FakeNPUCluster) -> Iterator[Any]:
    """Deploy an app built from LLMConfigs; delete it and its placement groups afterwards."""
    names: list[str] = []

    def run(config: LLMConfig, name: str) -> None:
        names.append(name)
        app = build_openai_app({"llm_configs": [config]})
        # serve.run would wait forever for an unplaceable group; _run returns at once.
        serve._run(app, name=name, route_prefix=None, _blocking=False)
        _wait_for(lambda: _app_status(name) == "RUNNING", f"app {name} RUNNING", 120)

    yield run
    for name in names:
        serve.delete(name)
    _wait_for(
        lambda: all(t["state"] == "REMOVED" for t in placement_group_table().values()),
        "placement groups removed",
        60,
    )


def test_one_replica_per_node_each_packed_on_its_node(deploy: Any) -> None:
    autoscaling = {"min_replicas": 2, "max_replicas": 2}
    deploy(
        mock_variant("serve_multi_node", deployment_config={"autoscaling_config": autoscaling}),
        "per-node",
    )
    groups = _replica_groups()
    assert len(groups) == 2, groups
    assert all(g["strategy"] == "STRICT_PACK" for g in groups)
    nodes = [_npus_per_node(g) for g in groups]
    # Each replica: its eight NPU bundles on one node ...
    assert all(list(per_node.values()) == [NPUS_PER_NODE] for per_node in nodes), nodes
    # ... and the two replicas on different nodes.
    assert len({node for per_node in nodes for node in per_node}) == 2, nodes


def test_spanning_replica_fills_both_nodes(deploy: Any) -> None:
    deploy(mock_variant("serve_span_nodes"), "span")
    (group,) = _replica_groups()
    assert group["strategy"] == "PACK"
    assert sorted(_npus_per_node(group).values()) == [NPUS_PER_NODE, NPUS_PER_NODE]


def test_serve_scales_from_one_to_two_replicas_under_load_and_back(deploy: Any) -> None:
    autoscaling = {
        "min_replicas": 1,
        "max_replicas": 2,
        "target_ongoing_requests": 2,
        "metrics_interval_s": 0.5,
        "look_back_period_s": 2,
        "upscale_delay_s": 1,
        "downscale_delay_s": 3,
    }
    config = mock_variant(
        "serve_multi_node",
        deployment_config={"autoscaling_config": autoscaling},
        runtime_env={
            "env_vars": {
                "RAYLLM_VLLM_ENGINE_CLS": "ray_serve_npu_tooling.mock_engine.MockEngine",
                HOLD_ENV_VAR: "1",
            }
        },
    )
    deploy(config, "scaling")
    assert _running_replicas("scaling") == 1

    answers = asyncio.run(_load_until(lambda: _running_replicas("scaling") == 2, "scaling"))
    assert answers and set(answers) == {MOCK_ANSWER}
    groups = _replica_groups()
    assert len(groups) == 2
    assert len({node for g in groups for node in _npus_per_node(g)}) == 2

    # No load: Serve goes back to min_replicas after downscale_delay_s.
    _wait_for(lambda: _running_replicas("scaling") == 1, "one replica again", 60)


def test_replica_larger_than_any_node_fails_at_build_with_the_fix(
    two_node_cluster: FakeNPUCluster,
) -> None:
    fields = mock_variant("serve_multi_node").model_dump(exclude_unset=True)
    too_big = LLMConfig(
        **{**fields, "engine_kwargs": {**fields["engine_kwargs"], "tensor_parallel_size": 16}}
    )
    with pytest.raises(InfeasiblePlacementError) as error:
        build_openai_app({"llm_configs": [too_big]})
    message = str(error.value)
    assert "STRICT_PACK" in message and "NPU: 16" in message, message
    assert f"largest node, {two_node_cluster.node_ip(0)[:-1]}" in message, message
    assert "NPU: 8" in message and 'strategy "PACK"' in message, message
    assert not placement_group_table() or all(
        t["state"] == "REMOVED" for t in placement_group_table().values()
    )


def test_replica_larger_than_the_cluster_fails_even_when_it_may_span_nodes(
    two_node_cluster: FakeNPUCluster,
) -> None:
    fields = mock_variant("serve_span_nodes").model_dump(exclude_unset=True)
    too_big = LLMConfig(
        **{**fields, "engine_kwargs": {**fields["engine_kwargs"], "tensor_parallel_size": 24}}
    )
    with pytest.raises(InfeasiblePlacementError, match=r"NPU: 24.*2 node\(s\).*NPU: 16"):
        build_openai_app({"llm_configs": [too_big]})


def test_the_fake_cluster_reports_no_autoscaler_node_types(
    two_node_cluster: FakeNPUCluster,
) -> None:
    # What makes the checks above errors, not warnings.
    assert autoscaler_nodes() == []


# -- helpers -----------------------------------------------------------------


def _wait_for(condition: Any, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(
        f"not reached in {timeout_s}s: {what}; Serve: {serve.status().applications}; "
        f"placement groups: {placement_group_table()}"
    )


def _app_status(name: str) -> str | None:
    status = serve.status().applications.get(name)
    # ApplicationStatus is a str enum.
    return None if status is None else status.status


def _running_replicas(app: str) -> int:
    deployment = serve.status().applications[app].deployments[DEPLOYMENT]
    return sum(n for state, n in deployment.replica_states.items() if str(state) == "RUNNING")


def _replica_groups() -> list[dict[str, Any]]:
    return [t for t in placement_group_table().values() if t["state"] == "CREATED"]


def _npus_per_node(group: dict[str, Any]) -> dict[str, int]:
    """Node IP -> NPU bundles of ``group`` on that node."""
    ips = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes()}
    counts: Counter[str] = Counter()
    for index, bundle in group["bundles"].items():
        if bundle.get("NPU"):
            counts[ips[group["bundles_to_node_id"][index]]] += int(bundle["NPU"])
    return dict(counts)


async def _load_until(done: Any, app: str, in_flight: int = 8, timeout_s: float = 90) -> list[str]:
    """Keep ``in_flight`` chat requests going until ``done()``; return the answers."""
    handle = serve.get_deployment_handle(DEPLOYMENT, app).options(stream=True)
    answers: list[str] = []
    stop = asyncio.Event()

    async def client() -> None:
        while not stop.is_set():
            request = ChatCompletionRequest(
                model=MODEL_ID, messages=[{"role": "user", "content": "hi"}], stream=False
            )
            async for response in handle.chat.remote(request):
                answers.append(response.choices[0].message.content)

    clients = [asyncio.create_task(client()) for _ in range(in_flight)]
    deadline = time.monotonic() + timeout_s
    try:
        while not await asyncio.to_thread(done):
            if time.monotonic() > deadline:
                raise AssertionError(f"not done under load after {timeout_s}s")
            for task in clients:
                if task.done():
                    task.result()  # a client that failed fails the test
            await asyncio.sleep(0.5)
    finally:
        stop.set()
        await asyncio.gather(*clients)
    return answers
