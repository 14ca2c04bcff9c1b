"""The A3 recipe (recipes/serve_npu_a3.py) on a fake Atlas 800 A3 node: sixteen fake NPUs.

The recipe runs unchanged; the fake tier's adapter keeps its four data-parallel
ranks, runs each on one CPU engine worker instead of four (two cores can't start
sixteen), serves a tiny mixture-of-experts model and drops expert parallel, which
crashes vLLM's CPU MoE kernel (both changes logged; ray_serve_npu.testing.adapter).
What is real: Ray Serve LLM's data-parallel gang, the npu kind's bundles, Ray's
NPU assignment and ``ASCEND_RT_VISIBLE_DEVICES``, vLLM's data-parallel engine,
the OpenAI endpoint.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai import OpenAI

from ray_serve_npu.hardware import A3, VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.testing.cluster import FakeNode
from ray_serve_npu.testing.fake_tier import FakeNPUTier, fake_npu_tier
from ray_serve_npu.testing.processes import ProcessServer

RECIPES = Path(__file__).parents[2] / "recipes"
MODEL_ID = "deepseek-v4-flash"
PORT = 8000
#: The recipe's data_parallel_size.
RANKS = 4

pytestmark = pytest.mark.fake_npu


@pytest.fixture(scope="module")
def a3_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNPUTier]:
    node = FakeNode(node_kind=A3, soc_name=A3.soc_names[0])
    with fake_npu_tier(tmp_path_factory.mktemp("fake-npu-a3"), nodes=[node]) as tier:
        yield tier


#: How long the four ranks may take to start after the ingress answers. Measured
#: here: about 140 s on two cores shared with other work.
RANKS_READY_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def server(a3_tier: FakeNPUTier) -> Iterator[ProcessServer]:
    with a3_tier.serve("python serve_npu_a3.py", cwd=RECIPES, port=PORT) as server:
        # The ingress answers /v1/models before the ranks' engines are up.
        deadline = time.monotonic() + RANKS_READY_TIMEOUT_S
        while (replicas := _dp_replicas(a3_tier)) != {"RUNNING": RANKS}:
            assert time.monotonic() < deadline, f"ranks not RUNNING: {replicas}"
            time.sleep(5)
        yield server


@pytest.fixture
def client(server: ProcessServer) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1", api_key="not-used")


def _cluster_state(tier: FakeNPUTier) -> dict[str, object]:
    """The app's replicas and the live placement groups, read by a driver of the cluster."""
    script = """
import json, ray
from ray import serve
from ray.util.placement_group import placement_group_table
ray.init(logging_level="ERROR", log_to_driver=False)
app = serve.status().applications["default"]
print("STATE", json.dumps({
    "replicas": {
        name: {getattr(k, "value", k): n for k, n in d.replica_states.items()}
        for name, d in app.deployments.items()
    },
    "groups": [t for t in placement_group_table().values() if t["state"] == "CREATED"],
}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**tier.env()},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("STATE ")]
    return json.loads(line.removeprefix("STATE "))


def _dp_replicas(tier: FakeNPUTier) -> dict[str, int]:
    """The data-parallel deployment's replicas by state."""
    replicas = _cluster_state(tier)["replicas"]
    (states,) = [states for name, states in replicas.items() if name.startswith("DPServer")]
    return states


def test_fake_a3_four_dp_ranks_run_as_one_gang_on_npus(
    a3_tier: FakeNPUTier, server: ProcessServer
) -> None:
    state = _cluster_state(a3_tier)
    assert state["replicas"]["DPServer:deepseek-v4-flash"] == {"RUNNING": RANKS}
    (gang,) = [group for group in state["groups"] if group["name"].startswith("SERVE_GANG")]
    bundles = list(gang["bundles"].values())
    # One NPU bundle per rank's engine worker; the first of each rank also holds
    # the replica actor's CPU; all on the one node.
    assert len(bundles) == RANKS
    assert all(bundle.get("NPU") == 1.0 and "GPU" not in bundle for bundle in bundles)
    assert len(set(gang["bundles_to_node_id"].values())) == 1


def test_fake_a3_each_rank_sees_its_own_npus(a3_tier: FakeNPUTier, server: ProcessServer) -> None:
    records = [json.loads(p.read_text()) for p in a3_tier.device_record_dir.glob("*.json")]
    # Engine workers are actors; the engine-config tasks hold a token fraction.
    workers = [record for record in records if record["ray_npu_ids"] and record["actor_id"]]
    visible = [frozenset(record[VISIBLE_DEVICES_ENV_VAR].split(",")) for record in workers]
    assert len(workers) == RANKS, records
    # Each engine worker sees exactly the NPUs Ray assigned it.
    for record, devices in zip(workers, visible, strict=True):
        assert devices == frozenset(record["ray_npu_ids"])
    # The ranks' sets are pairwise disjoint and together cover the gang's NPUs,
    # all of them devices of the fake A3 node.
    assert sum(len(devices) for devices in visible) == len(frozenset().union(*visible)) == RANKS
    assert frozenset().union(*visible) <= {str(i) for i in range(A3.devices_per_node)}


def test_fake_a3_chat_and_stream_through_the_openai_endpoint(client: OpenAI) -> None:
    # More requests than ranks, so that requests reach every rank's engine.
    for _ in range(RANKS * 2):
        reply = client.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
        )
        assert reply.model == MODEL_ID
        assert reply.choices[0].message.role == "assistant"
        assert 0 < reply.usage.completion_tokens <= 8
    stream = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, stream=True
    )
    chunks = list(stream)
    assert chunks and chunks[-1].choices[0].finish_reason in {"length", "stop"}


def test_fake_a3_adapter_says_what_it_changed(server: ProcessServer) -> None:
    log = server.log_file.read_text()
    assert "dropped engine_kwargs.enable_expert_parallel=True (vLLM's CPU build crashes" in log
    assert "engine_kwargs.tensor_parallel_size: 4 -> 1 (one CPU engine worker per" in log
    assert "engine_kwargs.data_parallel_size" not in log
