"""The fake NPU cluster itself: what it advertises, and that it stops promptly and leaves
nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from ray_serve_npu.fake_npu.cluster import FakeNode, fake_npu_cluster
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


def test_fake_npu_cluster_of_two_nodes_on_loopback_leaves_nothing_behind() -> None:
    with fake_npu_cluster(
        [FakeNode(), FakeNode(node_kind=A3, soc_name="Ascend910_9391")]
    ) as cluster:
        probe = subprocess.run(
            [sys.executable, "-c", NODES_SCRIPT],
            env={**os.environ, **cluster.env()},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        nodes = json.loads(probe.stdout.splitlines()[-1])
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
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    listeners = [
        c for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr == gcs
    ]
    assert not listeners
    # Ray 2.57+ drains a node for 30 s on SIGTERM, unless the cluster turns it off.
    # Measured here: 2 s to stop with the drain off.
    assert stop_s < 15, f"the cluster took {stop_s:.0f} s to stop"
