"""The A3 recipe (recipes/serve_npu_a3.py) on a fake Atlas 800 A3 node: sixteen fake NPUs.

A reader's dry-run serves it: ``ray-serve-npu dry-run --node-kind A3 serve_npu_a3.py
--keep-serving`` starts a fake A3 node, runs the recipe unchanged through the fake
tier's adapter, sends one chat request, prints each engine worker's NPUs and keeps
serving. The adapter keeps the recipe's four data-parallel ranks, runs each on one
CPU engine worker instead of four (two cores can't start sixteen), serves a tiny
mixture-of-experts model and drops expert parallel, which crashes vLLM's CPU MoE
kernel (both changes logged; ray_serve_npu.fake_npu.adapter).

What is real: Ray Serve LLM's data-parallel gang, the npu kind's bundles, Ray's
NPU assignment and ``ASCEND_RT_VISIBLE_DEVICES``, vLLM's data-parallel engine,
the OpenAI endpoint. The tests read what the command printed, then the cluster
it started (as a driver of it), then kill one rank and measure how Serve restarts
the gang; the last one stops the command with Ctrl+C, as a reader would. One
fake A3 node and one gang serve the whole module.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from dry_runs import ServingCluster, dry_run_serving, serving_cluster
from openai import OpenAI
from ray_serve_npu_tooling.stream_client import OpenStreams, StreamOutcome, stream_many

from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.fake_npu.dry_run import STOPPED_LINE, DryRunProcess
from ray_serve_npu.fake_npu.vllm_plugins import engine_worker_records
from ray_serve_npu.hardware import A3
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.streams import ENGINE_FAILED, REPLICA_LOST
from tests.resilience.fake_serving import (
    chat_body,
    pid_alive,
    wait_for_success,
)

RECIPE = "serve_npu_a3.py"
MODEL_ID = "deepseek-v4-flash"
#: Where the dry-run serves (its default port).
BASE_URL = "http://127.0.0.1:8000"
#: The recipe's data_parallel_size.
RANKS = SERVE_LLM_RELEASE.run("A3").data_parallel_size
#: Measured here: the command serves 206 to 246 s after it starts, on two cores (three
#: runs, 2026-12-02).
READY_TIMEOUT_S = 900
STOP_TIMEOUT_S = 180
#: How long the four ranks may take to be RUNNING once the command serves (Serve can
#: answer the command's request before it counts every rank as RUNNING).
RANKS_READY_TIMEOUT_S = 600
WORKER_LINE = re.compile(
    rf"^fake-npu tier: engine worker (\d+) holds NPU ([\d,]+); {VISIBLE_DEVICES_ENV_VAR}=(\S+)$",
    re.M,
)

pytestmark = pytest.mark.fake_npu


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DryRunProcess]:
    with dry_run_serving(
        ["--node-kind", "A3", RECIPE], tmp_path_factory, ready_timeout_s=READY_TIMEOUT_S
    ) as run:
        yield run


@pytest.fixture(scope="module")
def cluster(dry_run: DryRunProcess) -> ServingCluster:
    """The dry-run's cluster, once all its ranks are RUNNING."""
    cluster = serving_cluster(dry_run)
    deadline = time.monotonic() + RANKS_READY_TIMEOUT_S
    while (replicas := _dp_replicas(cluster)) != {"RUNNING": RANKS}:
        assert time.monotonic() < deadline, f"ranks not RUNNING: {replicas}"
        time.sleep(5)
    return cluster


@pytest.fixture
def client(cluster: ServingCluster) -> OpenAI:
    return OpenAI(base_url=f"{BASE_URL}/v1", api_key="not-used")


def test_fake_a3_dry_run_serves_the_ray_recipe_on_a_fake_a3_node(dry_run: DryRunProcess) -> None:
    output = dry_run.output()
    assert "fake-npu tier: 1 fake A3 node(s) at " in output
    assert f"fake-npu tier: running `python {RECIPE}`" in output
    reply = dry_run.chat_reply()
    assert reply["model"] == MODEL_ID
    assert reply["choices"][0]["message"]["role"] == "assistant"


def test_fake_a3_adapter_says_what_it_changed(dry_run: DryRunProcess) -> None:
    output = dry_run.output()
    assert "dropped engine_kwargs.enable_expert_parallel=True (vLLM's CPU build crashes" in output
    assert "engine_kwargs.tensor_parallel_size: 4 -> 1 (one CPU engine worker per" in output
    assert "engine_kwargs.data_parallel_size" not in output


def test_fake_a3_dry_run_prints_one_engine_worker_per_rank_on_its_own_npu(
    dry_run: DryRunProcess,
) -> None:
    workers = WORKER_LINE.findall(dry_run.output())
    # Only the ranks' engine workers: the engine-config tasks' token NPU share is no worker.
    assert len(workers) == RANKS, dry_run.output()[-4000:]
    assert all(visible == npus for _, npus, visible in workers), workers
    held = [int(npu) for _, npus, _ in workers for npu in npus.split(",")]
    assert len(held) == len(set(held)), f"two ranks share an NPU: {workers}"
    assert set(held) <= set(range(A3.devices_per_node))


def _cluster_state(cluster: ServingCluster) -> dict[str, object]:
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
    # Serve names each replica's actor SERVE_REPLICA::<app>#<deployment>#<replica id>.
    "replica_actors": sorted(
        actor["name"] for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith("SERVE_REPLICA::default#")
    ),
}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **cluster.driver_env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("STATE ")]
    return json.loads(line.removeprefix("STATE "))


def _dp_replicas(cluster: ServingCluster) -> dict[str, int]:
    """The data-parallel deployment's replicas by state."""
    replicas = _cluster_state(cluster)["replicas"]
    (states,) = [states for name, states in replicas.items() if name.startswith("DPServer")]
    return states


def test_fake_a3_four_dp_ranks_run_as_one_gang_on_npus(cluster: ServingCluster) -> None:
    state = _cluster_state(cluster)
    assert state["replicas"]["DPServer:deepseek-v4-flash"] == {"RUNNING": RANKS}
    (gang,) = [group for group in state["groups"] if group["name"].startswith("SERVE_GANG")]
    bundles = list(gang["bundles"].values())
    # One NPU bundle per rank's engine worker; the first of each rank also holds
    # the replica actor's CPU; all on the one node.
    assert len(bundles) == RANKS
    assert all(bundle.get("NPU") == 1.0 and "GPU" not in bundle for bundle in bundles)
    assert len(set(gang["bundles_to_node_id"].values())) == 1


def _engine_workers(cluster: ServingCluster, *, live_only: bool = False) -> list[dict[str, Any]]:
    """The device records of the ranks' engine workers, by pid; with ``live_only``,
    only the workers whose process still runs."""
    workers = engine_worker_records(cluster.device_record_dir)
    return [record for record in workers if pid_alive(record["pid"])] if live_only else workers


def _assert_ranks_see_their_own_npus(workers: list[dict[str, Any]]) -> None:
    visible = [frozenset(record[VISIBLE_DEVICES_ENV_VAR].split(",")) for record in workers]
    assert len(workers) == RANKS, workers
    # Each engine worker sees exactly the NPUs Ray assigned it.
    for record, devices in zip(workers, visible, strict=True):
        assert devices == frozenset(record["ray_npu_ids"])
    # The ranks' sets are pairwise disjoint and together cover the gang's NPUs,
    # all of them devices of the fake A3 node.
    assert sum(len(devices) for devices in visible) == len(frozenset().union(*visible)) == RANKS
    assert frozenset().union(*visible) <= {str(i) for i in range(A3.devices_per_node)}


def test_fake_a3_each_rank_sees_its_own_npus(cluster: ServingCluster) -> None:
    _assert_ranks_see_their_own_npus(_engine_workers(cluster))


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


#: Concurrent streaming clients during the kill, and how many of them must have
#: begun their answers (sent a chunk, still open) when it lands.
KILL_CLIENTS = RANKS * 2
STREAMS_OPEN_AT_KILL = RANKS
#: Long answers, so that the kill lands mid-answer; the fake tier's context is 1024.
KILL_TOKENS_PER_ANSWER = 900
#: A stream still open this long after it began counts as a hang.
KILL_STREAM_TIMEOUT_S = 300
#: Every stream the kill cuts ends within this long after it: at worst three failed
#: health checks 10 s apart, then the gang's force-stop. Measured: 2.7 to 8.2 s, as
#: the other ranks' engines fail with the killed one.
CUT_STREAMS_END_WITHIN_S = 60
#: Kill to a served chat request: the health check, then four new ranks start
#: (the first start, with the cluster's: READY_TIMEOUT_S).
RECOVERY_DEADLINE_S = 600
#: What Serve's controller logs for each replica it stops in a gang restart
#: (ray/serve/_private/deployment_state.py at 2.60.0): a healthy member of the gang
#: (lines 5270-5275), and the member that failed its health check (lines 5289-5293).
STOPPED_AS_HEALTHY_MEMBER = "Forcefully stopping it because RESTART_GANG runtime failure policy"
STOPPED_AS_FAILED_MEMBER = "failed health check, forcefully stopping it as part of gang restart"


def _replica_id(actor_name: str) -> str:
    """The replica id in a replica actor's name, ``SERVE_REPLICA::<app>#<deployment>#<id>``."""
    return actor_name.rsplit("#", 1)[-1]


def _dp_replica_ids(state: dict[str, Any]) -> set[str]:
    return {
        _replica_id(name)
        for name in state["replica_actors"]
        if name.split("#")[1].startswith("DPServer")
    }


def _gang_group_ids(state: dict[str, Any]) -> list[str]:
    """The ids (first 8 digits) of the gangs' placement groups in a :func:`_cluster_state`."""
    return sorted(
        group["placement_group_id"][:8]
        for group in state["groups"]
        if group["name"].startswith("SERVE_GANG")
    )


def _controller_warnings(cluster: ServingCluster, replica_ids: set[str]) -> dict[str, set[str]]:
    """Replica id -> what Serve's controller logged about it at WARNING or above.

    The controller writes serve/controller_<pid>.log and, the same lines, its
    stderr (worker-*-<pid>.err); measured here, its gang-restart lines were in the
    stderr file and not yet in the .log file when the test read them. Read both.
    """
    said: dict[str, set[str]] = {replica_id: set() for replica_id in replica_ids}
    logs = cluster.temp_dir / "session_latest" / "logs"
    paths = []
    for path in sorted((logs / "serve").glob("controller_*.log")):
        pid = path.stem.removeprefix("controller_")
        paths += [path, *sorted(logs.glob(f"worker-*-{pid}.err"))]
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(("WARNING", "ERROR")) and "Replica(id='" in line:
                replica_id = line.split("Replica(id='", 1)[1].split("'", 1)[0]
                if replica_id in said:
                    said[replica_id].add(line.split(" -- ", 1)[-1])
    return said


async def _kill_while_streaming(base_url: str, pid: int) -> tuple[list[StreamOutcome], float]:
    """Stream KILL_CLIENTS long answers; SIGKILL ``pid`` once enough have begun."""
    open_streams = OpenStreams(STREAMS_OPEN_AT_KILL)
    bodies = [
        chat_body(f"Rank kill {index}", max_tokens=KILL_TOKENS_PER_ANSWER, ignore_eos=True)
        for index in range(KILL_CLIENTS)
    ]
    load = asyncio.ensure_future(
        stream_many(base_url, bodies, KILL_STREAM_TIMEOUT_S, open_streams=open_streams)
    )
    try:
        await asyncio.wait_for(open_streams.reached.wait(), KILL_STREAM_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise AssertionError(
            f"{STREAMS_OPEN_AT_KILL} streams were never open at once within "
            f"{KILL_STREAM_TIMEOUT_S} s: {await load}"
        ) from None
    # No await between the count and the kill: the streams counted are open at the kill.
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    return await load, killed_at


def _fault_of(outcome: StreamOutcome) -> str:
    """How one stream ended, as its client saw it."""
    if outcome.completed:
        return "completed"
    if outcome.timed_out:
        return "hung"
    if outcome.status == 200 and outcome.error_events:
        return f"error event {outcome.error_events[-1]['error']['type']}"
    if outcome.status is not None and outcome.status != 200:
        return f"HTTP {outcome.status}"
    return f"broken: {outcome.error}"


def test_fake_a3_killing_one_rank_restarts_its_whole_gang(
    cluster: ServingCluster, record_figure: Any
) -> None:
    """SIGKILL one rank's engine worker mid-answer: Serve replaces all four ranks.

    The kill is what a device fault does on an NPU host: the process that holds
    the NPU dies, the replica actor above it lives. Ray 2.60.0's policy, read in
    its wheel (paths under ``ray/``):

    - ``llm/_internal/serve/serving_patterns/data_parallel/dp_server.py:283-287``:
      ``DPServer`` deploys its ranks as one gang of ``data_parallel_size`` replicas,
      ``PACK`` placement, ``runtime_failure_policy=RESTART_GANG``.
    - ``serve/config.py:1266-1282``: ``RESTART_GANG`` is the default and the only
      policy accepted; ``RESTART_REPLICA`` raises ``NotImplementedError``.
    - ``llm/_internal/serve/core/server/llm_server.py:590-601``: a replica's health
      check raises once its engine is dead; ``llm/_internal/serve/constants.py:36-41``
      and ``core/server/builder.py:27-31``: checked every 10 s, 10 s timeout;
      ``serve/_private/constants.py:329``: unhealthy after three failures in a row.
    - ``serve/_private/deployment_state.py:5475-5489`` (``check_and_update_replicas``)
      hands the health-check results to ``_forcefully_stop_gang_replicas``
      (lines 5204-5304): every member of a gang with an unhealthy or missing
      member is stopped, healthy siblings too, without a graceful stop, and the
      gang is scheduled again as a whole.

    Measured here: the other ranks' engines fail with the killed one, so every
    open stream ends in ENGINE_FAILED's event; the first rank to fail three checks
    is stopped as the failed member and the other three as healthy members.
    """
    before = _cluster_state(cluster)
    old_replicas = _dp_replica_ids(before)
    old_workers = _engine_workers(cluster, live_only=True)
    assert len(old_replicas) == RANKS, before["replica_actors"]
    assert len(old_workers) == RANKS, old_workers
    victim = old_workers[0]

    outcomes, killed_at = asyncio.run(_kill_while_streaming(BASE_URL, victim["pid"]))

    # What the streams saw.
    ends = Counter(_fault_of(outcome) for outcome in outcomes)
    record_figure(
        "streams at the kill (open / all)",
        f"{sum(o.open_at(killed_at) for o in outcomes)}/{len(outcomes)}",
    )
    record_figure("stream ends", dict(sorted(ends.items())))
    cut = [outcome for outcome in outcomes if not outcome.completed]
    if cut:
        record_figure(
            "kill to last cut stream's end s", round(max(o.ended_at for o in cut) - killed_at, 1)
        )

    # The app answers chat again.
    answered_at = wait_for_success(BASE_URL, RECOVERY_DEADLINE_S)
    record_figure("kill to chat answered again s", round(answered_at - killed_at, 1))

    # The new gang: four running replicas, none of them an old one, and four live
    # engine workers, none of them an old process.
    deadline = time.monotonic() + RECOVERY_DEADLINE_S
    while True:
        after = _cluster_state(cluster)
        new_replicas = _dp_replica_ids(after)
        new_workers = _engine_workers(cluster, live_only=True)
        settled = (
            after["replicas"]["DPServer:deepseek-v4-flash"] == {"RUNNING": RANKS}
            and len(new_replicas) == RANKS
            and len(new_workers) == RANKS
        )
        if settled:
            break
        assert time.monotonic() < deadline, (
            f"no settled gang {RECOVERY_DEADLINE_S} s after the kill: replicas "
            f"{after['replicas']}, replica ids {new_replicas}, live engine workers "
            f"{[w['pid'] for w in new_workers]}"
        )
        time.sleep(5)
    record_figure("kill to four new ranks RUNNING s", round(time.time() - killed_at, 1))
    old_pids = {worker["pid"] for worker in old_workers}
    new_pids = {worker["pid"] for worker in new_workers}
    said = _controller_warnings(cluster, old_replicas)
    failed = {
        id_ for id_, lines in said.items() if any(STOPPED_AS_FAILED_MEMBER in x for x in lines)
    }
    siblings = {
        id_ for id_, lines in said.items() if any(STOPPED_AS_HEALTHY_MEMBER in x for x in lines)
    }
    record_figure(
        "old ranks the controller stopped (failed member / healthy members, RESTART_GANG)",
        f"{len(failed)} / {len(siblings)}",
    )
    record_figure(
        "old ranks replaced (replica / engine worker)",
        f"{len(old_replicas - new_replicas)} / {len(old_pids - new_pids)}",
    )
    record_figure(
        "gang placement groups (before / after)",
        f"{_gang_group_ids(before)} / {_gang_group_ids(after)}",
    )
    record_figure("killed worker's NPUs", victim[VISIBLE_DEVICES_ENV_VAR])
    record_figure("new ranks' NPUs", sorted(w[VISIBLE_DEVICES_ENV_VAR] for w in new_workers))

    # RESTART_GANG: all four ranks are new, not just the killed one's, and the
    # controller says it stopped each old rank as part of the gang.
    assert new_replicas.isdisjoint(old_replicas), (old_replicas, new_replicas)
    assert new_pids.isdisjoint(old_pids), (old_pids, new_pids)
    assert {w["actor_id"] for w in new_workers}.isdisjoint({w["actor_id"] for w in old_workers})
    # The new ranks again each see only their own NPUs, disjoint, on the A3 node.
    _assert_ranks_see_their_own_npus(new_workers)
    # No stream hung; every stream the kill cut ended in one of the plugin's error
    # events (ray_serve_npu.streams) or, before its first chunk, an HTTP 5xx.
    hung = [outcome for outcome in outcomes if outcome.timed_out]
    assert not hung, f"{len(hung)} streams hung: {hung}"
    assert cut, f"the kill cut no stream: {outcomes}"
    faults = {fault.error_type: fault for fault in (ENGINE_FAILED, REPLICA_LOST)}
    for outcome in cut:
        if outcome.status == 200:
            (event,) = outcome.error_events
            fault = faults[event["error"]["type"]]
            assert event == fault.error(outcome.request_id), outcome
            assert outcome.done, outcome
        else:
            assert outcome.status is not None and outcome.status >= 500, outcome
    assert max(o.ended_at for o in cut) - killed_at <= CUT_STREAMS_END_WITHIN_S
    # RESTART_GANG, in the controller's words: it stopped every old rank as a member
    # of the gang, the failed one and the healthy ones alike.
    assert failed, said
    assert failed | siblings == old_replicas, said


def test_fake_a3_dry_run_stops_cleanly_on_ctrl_c(dry_run: DryRunProcess) -> None:
    dry_run.process.send_signal(signal.SIGINT)
    assert dry_run.process.wait(timeout=STOP_TIMEOUT_S) == 0, dry_run.output()[-6000:]
    assert dry_run.output().rstrip().endswith(STOPPED_LINE)
