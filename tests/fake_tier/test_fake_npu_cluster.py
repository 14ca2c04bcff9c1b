"""The fake NPU cluster itself: what it advertises, that a node can be lost and another
added while it runs, and that it stops promptly and leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from ray_serve_npu.fake_npu.cluster import (
    FakeNode,
    FakeNPUCluster,
    fake_npu_cluster,
    still_running,
)
from ray_serve_npu.hardware import A3

pytestmark = pytest.mark.fake_npu

#: Lists the live nodes, and leaves a detached actor running, as a Serve app leaves its
#: replicas: a node whose workers hold leases is not idle, so Ray's drain on SIGTERM
#: would wait for them.
NODES_SCRIPT = """
import json, ray
ray.init(logging_level="ERROR")
@ray.remote(num_cpus=1)
class Holder:
    def ready(self):
        return True
holder = Holder.options(name="holder", lifetime="detached").remote()
ray.get(holder.ready.remote())
print(json.dumps([[n["NodeManagerAddress"], n["Resources"]] for n in ray.nodes() if n["Alive"]]))
"""

#: The addresses of the nodes Ray counts alive.
ALIVE_SCRIPT = """
import ray
ray.init(logging_level="ERROR")
print(" ".join(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]))
"""


def _last_line(cluster: FakeNPUCluster, script: str) -> str:
    """The last line that ``script`` prints, run as a driver of ``cluster``."""
    probe = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **cluster.env()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-4000:]
    return probe.stdout.splitlines()[-1]


def test_fake_npu_cluster_on_loopback_loses_a_node_adds_one_and_leaves_nothing_behind() -> None:
    with fake_npu_cluster(
        [FakeNode(), FakeNode(node_kind=A3, soc_name="Ascend910_9391")]
    ) as cluster:
        nodes = json.loads(_last_line(cluster, NODES_SCRIPT))
        processes = cluster.processes()
        lost = cluster.node_processes(1)
        with pytest.raises(
            ValueError, match=r"index: 2 is not a running node; give one of \[0, 1\]"
        ):
            cluster.lose_node(2)
        cluster.lose_node(1)
        # The lost node's raylet and everything on it are gone at once; the head lives on.
        assert lost and not still_running(lost)
        assert cluster.running_nodes == [0] and cluster.node_processes(0)
        # A new node joins the running cluster at an address of its own: add_node returns
        # once Ray counts it alive (and the lost node's address can't stand in for it).
        added = cluster.add_node(FakeNode())
        assert added == 2 and cluster.node_ip(added) not in {cluster.node_ip(0), cluster.node_ip(1)}
        assert cluster.node_ip(added) in _last_line(cluster, ALIVE_SCRIPT).split()
        assert cluster.running_nodes == [0, 2] and cluster.node_processes(2)
        processes = cluster.processes()
        gcs = (cluster.node_ip(0), cluster.gcs_port)
        stopping = time.monotonic()
    stop_s = time.monotonic() - stopping
    addresses = [address for address, _ in nodes]
    assert all(address.startswith("127.") for address in addresses)
    assert len(set(addresses)) == 2
    resources = sorted(
        (r["NPU"], [k for k in r if k.startswith("accelerator_type:")]) for _, r in nodes
    )
    assert resources == [
        (8.0, ["accelerator_type:Ascend910B4"]),
        (16.0, ["accelerator_type:Ascend910_9391"]),
    ]
    # Ray's daemons and workers ran under the nodes' process groups...
    assert len(processes) > 4
    # ...and none of them, nor a listener on the GCS port, outlived the cluster.
    assert not still_running(processes)
    listeners = [
        c for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr == gcs
    ]
    assert not listeners
    # Ray 2.57+ drains a node for 30 s on SIGTERM, unless the cluster turns it off.
    # Measured here: 2 s to stop with the drain off.
    assert stop_s < 15, f"the cluster took {stop_s:.0f} s to stop"
