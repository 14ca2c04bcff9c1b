"""A local Ray cluster that advertises fake Ascend NPUs: one node, or several on one machine.

Each node is a real ``ray start --block`` process group with a ``NPU`` resource
count and the accelerator-type resource a real Ascend node reports; no device
is behind them. Ray schedules NPU bundles and sets ``ASCEND_RT_VISIBLE_DEVICES``
exactly as on Ascend nodes. Everything binds to 127.0.0.1, the dashboard is off,
files go to a private temp dir, and :meth:`FakeNPUCluster.stop` proves that no
Ray or vLLM process of the cluster is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psutil
from pydantic import BaseModel

from ray_serve_npu.hardware import A2, NPU_RESOURCE, NodeKind

#: Process names and command-line pieces of what Ray and vLLM start.
_RAY_OR_VLLM = ("raylet", "gcs_server", "ray::", "default_worker.py", "vllm", "EngineCore", "ray/")


class FakeNode(BaseModel, frozen=True):
    """One node of the fake cluster."""

    node_kind: NodeKind = A2
    #: The SoC name the node reports as its accelerator type. Ascend910B4 is one of
    #: the A2 names Ray itself defines (``ray/util/accelerators/accelerators.py``).
    soc_name: str = "Ascend910B4"
    #: Logical CPUs Ray may schedule; not tied to the machine's two cores.
    num_cpus: int = 8

    @property
    def resources(self) -> dict[str, float]:
        return {
            NPU_RESOURCE: self.node_kind.devices_per_node,
            f"accelerator_type:{self.soc_name}": 1,
        }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ClusterLeftovers(RuntimeError):
    """Processes or ports of a stopped cluster are still alive."""


class FakeNPUCluster:
    """Start with :meth:`start`, stop with :meth:`stop` (or use :func:`fake_npu_cluster`)."""

    def __init__(
        self, nodes: Sequence[FakeNode] = (FakeNode(),), *, startup_timeout_s: float = 120
    ):
        if not nodes:
            raise ValueError("nodes: give at least one FakeNode (the head).")
        self.nodes = list(nodes)
        self.startup_timeout_s = startup_timeout_s
        # Ray's socket paths must stay under about 100 characters.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="rsn-", dir="/tmp"))
        self.gcs_port = _free_port()
        self._node_processes: list[subprocess.Popen[bytes]] = []
        self._started_at = 0.0

    @property
    def address(self) -> str:
        """The GCS address: ``RAY_ADDRESS`` for drivers."""
        return f"127.0.0.1:{self.gcs_port}"

    def env(self) -> dict[str, str]:
        """Environment for a driver of this cluster."""
        return {
            "RAY_ADDRESS": self.address,
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
            # Ray turns 127.0.0.1 into the host's routable address, except where
            # clusters are off (ray/_private/services.py get_node_ip_address):
            # this keeps every node, driver and worker on loopback.
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        }

    def _ray_start(self, node: FakeNode, index: int) -> subprocess.Popen[bytes]:
        role = (
            ["--head", f"--port={self.gcs_port}"] if index == 0 else [f"--address={self.address}"]
        )
        command = [
            str(Path(sys.executable).with_name("ray")),
            "start",
            *role,
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={node.num_cpus}",
            f"--resources={json.dumps(node.resources)}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            # Ray sizes the object store from the machine's memory; the recipes
            # pass little data through it.
            "--object-store-memory=500000000",
        ]
        if index == 0:
            command.append(f"--temp-dir={self.temp_dir}")
        log = open(self.temp_dir / f"node-{index}.log", "wb")  # noqa: SIM115 - owned by the process
        return subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env(), "RAY_ADDRESS": ""},
            start_new_session=True,  # its own process group, killed as one
        )

    def start(self) -> FakeNPUCluster:
        self._started_at = time.time()
        try:
            for index, node in enumerate(self.nodes):
                self._node_processes.append(self._ray_start(node, index))
                self._wait_for_nodes(index + 1)
        except BaseException:
            self.stop()
            raise
        return self

    def node_log(self, index: int) -> str:
        return (self.temp_dir / f"node-{index}.log").read_text(errors="replace")

    def _wait_for_nodes(self, count: int) -> None:
        script = (
            "import ray, sys; ray.init(logging_level='ERROR'); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            for index, process in enumerate(self._node_processes):
                if process.poll() is not None:
                    raise RuntimeError(
                        f"fake NPU node {index} exited with {process.returncode}:\n"
                        f"{self.node_log(index)[-4000:]}"
                    )
            probe = subprocess.run(
                [sys.executable, "-c", script],
                env={**os.environ, **self.env()},
                capture_output=True,
                text=True,
                timeout=60,
            )
            if probe.returncode == 0 and probe.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(1)
        raise TimeoutError(
            f"the fake NPU cluster did not reach {count} node(s) in {self.startup_timeout_s}s:\n"
            + "\n".join(self.node_log(i)[-2000:] for i in range(len(self._node_processes)))
        )

    def stop(self) -> None:
        """Stop every node (workers first), then check that nothing is left."""
        for process in reversed(self._node_processes):
            _stop_process_group(process)
        self._node_processes.clear()
        leftovers = self._wait_for_leftovers_to_exit()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        if leftovers:
            for pid in leftovers:
                with contextlib.suppress(psutil.Error):
                    psutil.Process(pid).kill()
            raise ClusterLeftovers(
                "Ray or vLLM processes outlived the fake NPU cluster (now killed): "
                + "; ".join(f"{pid} {text[:120]}" for pid, text in leftovers.items())
            )

    def _wait_for_leftovers_to_exit(self, timeout_s: float = 15) -> dict[int, str]:
        deadline = time.monotonic() + timeout_s
        while (leftovers := self.leftover_processes()) and time.monotonic() < deadline:
            time.sleep(0.5)
        return {pid: text for pid, (_, text) in leftovers.items()}

    def leftover_processes(self) -> dict[int, tuple[psutil.Process, str]]:
        """Live Ray and vLLM processes started since this cluster started, by pid."""
        found = {}
        for process in psutil.process_iter(["pid", "name", "cmdline", "create_time", "status"]):
            info = process.info
            if (
                info["pid"] == os.getpid()
                or info["status"] == psutil.STATUS_ZOMBIE  # exited, not yet reaped
                or (info["create_time"] or 0) < self._started_at - 1
            ):
                continue
            text = " ".join([info["name"] or "", *(info["cmdline"] or [])])
            if any(marker in text for marker in _RAY_OR_VLLM):
                found[info["pid"]] = (process, text)
        return found


def _stop_process_group(process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    """SIGTERM to `ray start --block` (it drains, then stops its Ray processes), then
    SIGKILL to whatever of its process group is still there."""
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@contextmanager
def fake_npu_cluster(nodes: Sequence[FakeNode] = (FakeNode(),)) -> Iterator[FakeNPUCluster]:
    """A started :class:`FakeNPUCluster`, stopped (and checked) on exit, also on error."""
    cluster = FakeNPUCluster(nodes).start()
    try:
        yield cluster
    finally:
        cluster.stop()
