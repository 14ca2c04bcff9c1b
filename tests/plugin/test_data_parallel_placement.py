"""The npu kind's data-parallel app on a node's fake NPUs, mock engine: four ranks filling it.

``ray_serve_npu.build_dp_openai_app`` is deployed on the in-process Ray (fixture
``ray_with_fake_npus``) at each Ray of the supported range, on a fake A3 node: DP 4 x
TP 4 over sixteen NPUs, the layout of ``recipes/serve_npu_a3.py`` (the fake tier's A3
run keeps one CPU engine worker per rank, so this is where each rank's four NPUs are
shown). No recipe runs data parallel on one A2 node; the slices are the same formula
for any TP, so an A2 layout would add a Ray start and four replicas (about 70 s of the
fake-NPU tier, and as much at each older Ray), not a case. The engine is
:class:`ray_serve_npu_tooling.mock_engine.PlacementProbeEngine`, the mock engine
plus what the test reads: the NPUs Ray assigns to the workers that vLLM's Ray
executor would start on each rank's bundles. ``DPServer`` asks nothing of the
engine class before it builds it (dp_server.py:108-217), so the mock needs no
data-parallel support of its own.

What the test relies on, read in each wheel (``ray/llm/_internal/serve/...`` as
``llm/``, ``ray/serve/_private/`` as ``serve/``):

- ``llm/serving_patterns/data_parallel/dp_server.py`` and ``llm/utils/pg_utils.py``
  are the same file in 2.56.1, 2.57.1 and 2.60.0. ``DPServer.get_deployment_options``
  makes ``data_parallel_size`` Serve replicas one gang, strategy ``PACK``, restart
  policy ``RESTART_GANG`` (dp_server.py:252-287). Each rank takes the slice
  ``[rank * B, (rank + 1) * B)`` of the gang's bundle indices sorted by node, rank 0's
  node first, and hands it to vLLM in ``VLLM_RAY_BUNDLE_INDICES`` (dp_server.py:204-211,
  238-241; pg_utils.py:24-36). Rank 0 publishes the DP master address in GCS and the
  other ranks poll for it (dp_server.py:133-162).
- ``llm/serving_patterns/data_parallel/builder.py``: ``build_dp_openai_app`` builds
  ``DPServer`` through ``build_llm_deployment`` (builder.py:53-59, 131 at 2.57.1 and
  2.60.0; 2.56.1 differs only in the direct-streaming branch, line 126).
- Serve makes one placement group per gang: the replica's bundles repeated
  ``gang_size`` times, created with the gang's strategy (serve/deployment_scheduler.py
  2.56.1:788, 851, 889; 2.57.1:800, 863, 901; 2.60.0:871, 935, 973), places rank ``i``'s
  replica actor on bundle ``i * B`` (serve/deployment_state.py 2.56.1:4013,
  2.57.1:4091, 2.60.0:4637), and captures its child tasks in the group
  (serve/deployment_scheduler.py 2.56.1:672, 2.57.1:680, 2.60.0:756).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from npu_configs import make_llm_config
from ray import serve
from ray.experimental.internal_kv import _internal_kv_del, _internal_kv_get, _internal_kv_list
from ray.util.placement_group import placement_group_table
from ray_serve_npu_tooling.mock_engine import PROBE_KEY_PREFIX
from test_placement import _wait_until_placement_groups_removed, _wait_until_running

from ray_serve_npu import build_dp_openai_app
from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.hardware import A3, NPU_RESOURCE, NodeKind

APP = "npu-dp-placement"
DP = 4
PROBE_ENGINE_ENV = {
    "RAYLLM_VLLM_ENGINE_CLS": "ray_serve_npu_tooling.mock_engine.PlacementProbeEngine"
}
#: Serve's prefix for a gang's placement group name (serve/_private/common.py:22 at 2.60.0).
GANG_PG_PREFIX = "SERVE_GANG::"
#: Four replicas start on two cores, each importing Ray Serve LLM, beside the other
#: worker's runs; longer than the probe's own bound (mock_engine.PROBE_TIMEOUT_S).
RUNNING_TIMEOUT_S = 900


#: The fixture's cluster is one node of this kind, with four CPUs; a cluster of fake NPUs
#: with four replicas on it belongs to the fake-NPU tier.
pytestmark = [
    pytest.mark.fake_npu,
    pytest.mark.parametrize(
        "ray_with_fake_npus", [A3], indirect=True, ids=lambda kind: f"fake-{kind.name}"
    ),
]


@pytest.fixture
def node_kind(request: pytest.FixtureRequest) -> NodeKind:
    return request.node.callspec.params["ray_with_fake_npus"]


@pytest.fixture
def dp_app(ray_with_fake_npus: None, node_kind: NodeKind) -> Iterator[str]:
    config = make_llm_config(
        accelerator_config={"kind": "npu"},
        engine_kwargs={
            "data_parallel_size": DP,
            "tensor_parallel_size": node_kind.devices_per_node // DP,
        },
        runtime_env={"env_vars": PROBE_ENGINE_ENV},
    )
    app = build_dp_openai_app(
        {
            "llm_config": config,
            # The four ranks' replica actors take the cluster's four CPUs.
            "ingress_deployment_config": {"ray_actor_options": {"num_cpus": 0}},
        }
    )
    # serve.run waits forever for an unplaceable group; _run returns at once.
    serve._run(app, name=APP, route_prefix=None, _blocking=False)
    try:
        _wait_until_running(APP, timeout_s=RUNNING_TIMEOUT_S)
        yield APP
    finally:
        serve.delete(APP)
        _wait_until_placement_groups_removed()
        for key in _internal_kv_list(PROBE_KEY_PREFIX.encode()):
            _internal_kv_del(key)


def _probe_records() -> list[dict[str, Any]]:
    keys = _internal_kv_list(PROBE_KEY_PREFIX.encode())
    return [json.loads(_internal_kv_get(key)) for key in keys]


def test_dp4_ranks_get_disjoint_npu_slices_of_one_packed_gang(
    dp_app: str, node_kind: NodeKind
) -> None:
    npus = node_kind.devices_per_node
    tp = npus // DP
    deployments = serve.status().applications[dp_app].deployments
    (dp_name,) = [name for name in deployments if name.startswith("DPServer")]
    # One gang: four Serve replicas, all running.
    assert deployments[dp_name].replica_states == {"RUNNING": DP}

    # One placement group, the gang's: an NPU bundle per device on the one node, PACK.
    tables = [t for t in placement_group_table().values() if t["state"] != "REMOVED"]
    assert len(tables) == 1, tables
    (table,) = tables
    assert table["name"].startswith(GANG_PG_PREFIX), table["name"]
    assert table["state"] == "CREATED"
    assert table["strategy"] == "PACK"
    bundles = [table["bundles"][index] for index in sorted(table["bundles"])]
    assert bundles == ([{"CPU": 1.0, NPU_RESOURCE: 1.0}] + [{NPU_RESOURCE: 1.0}] * (tp - 1)) * DP
    assert len(set(table["bundles_to_node_id"].values())) == 1

    # Each rank: its own slice of the group.
    records = sorted(_probe_records(), key=lambda record: record["data_parallel_rank"])
    assert [record["data_parallel_rank"] for record in records] == list(range(DP))
    assert [record["gang_rank"] for record in records] == list(range(DP))
    assert len({record["gang_id"] for record in records}) == 1
    assert {record["placement_group_id"] for record in records} == {table["placement_group_id"]}
    slices = [record["bundle_indices"] for record in records]
    assert all(len(indices) == tp for indices in slices), slices
    assert sorted(index for indices in slices for index in indices) == list(range(npus))
    # One node, so sorting by node keeps the order: rank i's slice is the bundles
    # from its replica actor's, i * tp, on.
    assert slices == [list(range(rank * tp, (rank + 1) * tp)) for rank in range(DP)], slices

    # What Ray gives the workers on each rank's bundles: one NPU each, named in
    # ASCEND_RT_VISIBLE_DEVICES; the ranks' sets are disjoint and cover the node.
    npu_sets = []
    for record in records:
        workers = record["workers"]
        assert all(len(worker["npu_ids"]) == 1 for worker in workers), workers
        assert all(worker[VISIBLE_DEVICES_ENV_VAR] == worker["npu_ids"][0] for worker in workers)
        assert {worker["node_id"] for worker in workers} == set(
            table["bundles_to_node_id"].values()
        )
        npu_sets.append({worker["npu_ids"][0] for worker in workers})
    assert all(len(devices) == tp for devices in npu_sets), npu_sets
    assert set().union(*npu_sets) == {str(npu) for npu in range(npus)}, npu_sets
