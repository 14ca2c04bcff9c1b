"""The fake NPU cluster's head lost and started again, as Kubernetes restarts a head pod:
with the GCS's tables in Redis (GCS fault tolerance, as the KubeRay recipe turns on), the
worker node and an actor on it live through the restart; without Redis, they don't.

Fake NPUs and fake nodes on one machine, real Ray, real Redis; no engine and no Serve,
so what clients get while the head is away is not tested here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_serve_npu_tooling.gcs_redis import gcs_redis, redis_server_missing
from ray_serve_npu_tooling.worker_groups import RAY_GROUP

from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, GcsStorage, still_running

#: Each test starts a fake cluster: one at a time in the fast tier (worker_groups.py).
pytestmark = pytest.mark.xdist_group(RAY_GROUP)

#: Finds the actor on the worker, made on first use, and counts one more call: the
#: count and the actor's pid say whether the same actor lived through the restart.
COUNT_SCRIPT = """
import json, os, sys, ray
ray.init(logging_level="ERROR", log_to_driver=False)
@ray.remote(num_cpus=0)
class Counter:
    def __init__(self):
        self.calls = 0
    def bump(self):
        self.calls += 1
        return os.getpid(), self.calls
counter = Counter.options(
    name="counter", namespace="head-restart", lifetime="detached", get_if_exists=True,
    resources={f"node:{sys.argv[1]}": 0.01},
).remote()
print("counted", json.dumps(ray.get(counter.bump.remote(), timeout=60)))
"""

#: What a worker's raylet logs, then exits on, when a head without Redis came back: the
#: new GCS knows another cluster ID (``node_manager.cc`` in Ray 2.60; not Ray's token).
REFUSED_WITHOUT_STORAGE = (
    "GCS returned an authentication error. This may happen when GCS is not backed by a DB "
    "and restarted or there is data loss in the DB."
)
#: The raylet finds out at its liveness self-check
#: (``raylet_liveness_self_check_interval_ms``): about 60 s after the restart by
#: default, as measured here; the test checks every 5 s.
QUICK_SELF_CHECK = {"RAY_raylet_liveness_self_check_interval_ms": "5000"}


def _count(cluster: FakeNPUCluster) -> tuple[int, int]:
    """The worker's actor's pid and how many calls it has counted."""
    probe = subprocess.run(
        [sys.executable, "-c", COUNT_SCRIPT, cluster.node_ip(1)],
        env={**os.environ, **cluster.env()},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert probe.returncode == 0, f"the counting driver exited with {probe.returncode}:\n" + (
        probe.stderr[-3000:] or probe.stdout[-3000:]
    )
    # Ray may print lines of its own after the answer (a reconnect, say).
    (answer,) = [line for line in probe.stdout.splitlines() if line.startswith("counted ")]
    pid, calls = json.loads(answer.removeprefix("counted "))
    return pid, calls


@pytest.fixture
def redis_storage(tmp_path: Path) -> Iterator[GcsStorage]:
    if missing := redis_server_missing():
        pytest.skip(missing)
    with gcs_redis(tmp_path, namespace="fake-npu-head-restart") as storage:
        yield storage


def test_fake_npu_cluster_head_restart_with_redis_keeps_the_worker_and_without_it_loses_it(
    redis_storage: GcsStorage,
) -> None:
    """One cluster, two restarts of its head: first with its Redis, which the worker and
    its actor live through; then without, a new cluster that turns the worker away. One
    cluster start serves both cases (the fast tier's budget)."""
    cluster = FakeNPUCluster(
        [FakeNode(), FakeNode()], gcs_storage=redis_storage, node_env=QUICK_SELF_CHECK
    ).start()
    try:
        before = _count(cluster)
        worker = cluster.node_processes(1)
        own = {process.pid: process.nice() for process in worker}
        autogroup = Path(f"/proc/{worker[0].pid}/autogroup")
        enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
        grouped = enabled.exists() and enabled.read_text().strip() == "1"
        # The worker niced, as the head-restart test under load nices its workers: each
        # of its processes, and its session where Linux shares the cores out by session
        # (autogroup). Ray's own nicer processes (its idle workers) stay nicer.
        with cluster.niced([1], 10):
            assert all(process.nice() == max(own[process.pid], 10) for process in worker)
            if grouped:
                assert autogroup.read_text().split()[-1] == "10", autogroup.read_text()
            cluster.lose_node(0)
            cluster.start_head()
        # As it was once the head is back.
        if grouped:
            assert autogroup.read_text().split()[-1] == "0", autogroup.read_text()
        assert {process.pid: process.nice() for process in worker} == own
        after = _count(cluster)
        # Every process of the worker node lived through the restart.
        assert still_running(worker) == worker
        # The same actor process, its state kept: the worker never left the cluster.
        assert before[1] == 1, before
        assert after == (before[0], 2), after

        # Now the head comes back without its tables, as a head without GCS fault
        # tolerance does: a new cluster, which turns the worker away, and it exits.
        cluster.lose_node(0)
        cluster.gcs_storage = None
        with pytest.raises(RuntimeError, match="fake NPU node 1 exited with 1"):
            cluster.start_head()
        # Its raylet logs under the first head's session, as raylet.1.out (the head's
        # came first and took raylet.out).
        raylet_logs = "".join(
            log.read_text(errors="replace")
            for log in cluster.temp_dir.glob("session_*/logs/raylet.*.out")
        )
    finally:
        cluster.stop()
    assert REFUSED_WITHOUT_STORAGE in raylet_logs, raylet_logs[-3000:]
    # Everything on the worker stopped with it.
    assert not still_running(worker), still_running(worker)
