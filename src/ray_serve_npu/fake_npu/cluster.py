"""A local Ray cluster that advertises fake Ascend NPUs: one node, or several on one machine.

Each node is a real ``ray start --block`` process group with a ``NPU`` resource
count and the accelerator-type resource a real Ascend node reports; no device
is behind them. Ray schedules NPU bundles and sets ``ASCEND_RT_VISIBLE_DEVICES``
exactly as on Ascend nodes. Every node has its own loopback address, the dashboard is off,
files go to a private temp dir, and :meth:`FakeNPUCluster.stop` proves that no
Ray or vLLM process of the cluster is left.

The cluster runs under Ray's token authentication (``RAY_AUTH_MODE=token``), as
the recipes tell readers to run theirs: each cluster makes a token of its own, and
:meth:`FakeNPUCluster.env` hands it to the drivers the tests and pages start.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import psutil
from pydantic import BaseModel, Field, SecretStr

from ray_serve_npu.envs import AUTH_TOKEN_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.hardware import A2, NPU_RESOURCE, NodeKind

#: From Ray 2.57, ``ray start --block`` drains its node on SIGTERM, for up to
#: ``RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S`` (30 s), so that Serve can move traffic to
#: other nodes (``ray/_private/node.py``, ``_drain_node_before_shutdown``). The fake
#: cluster stops all its nodes, one after another, once it is done with them: nothing is
#: left to move to, and a node serving an engine waited out the whole 30 s (measured: 32 s of
#: a dry-run's stop, at 5 % CPU). 0 turns the drain off; Ray 2.56 has no drain.
NO_DRAIN_ON_STOP = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}


#: KubeRay gives worker pods this long to find a restarted head when GCS fault tolerance
#: is on (``RAY_gcs_rpc_server_reconnect_timeout_s`` in ``pod.go``), so the fake workers
#: get it too. A fake head is back within seconds.
WORKER_GCS_RECONNECT = {"RAY_gcs_rpc_server_reconnect_timeout_s": "600"}


#: Asks the GCS at ``RAY_ADDRESS`` every second until it has a node alive at each
#: address of ``argv[1]`` (JSON) with an ID not in ``argv[2]``, then prints those IDs by
#: address (JSON). One process for the whole wait: each start of Python and Ray takes
#: a core for a second or more, which a head starting on shared cores can't spare. It
#: gives up by itself after ``argv[3]`` seconds, or once its parent (``argv[4]``) is gone,
#: so a waiter killed before it can kill the probe leaves no probe polling.
_ALIVE_NODES_PROBE = """
import json, os, sys, time
from ray._raylet import GcsClient
from ray.core.generated.gcs_pb2 import GcsNodeInfo
wanted, lost = set(json.loads(sys.argv[1])), set(json.loads(sys.argv[2]))
deadline, parent = time.monotonic() + float(sys.argv[3]), int(sys.argv[4])
while True:
    try:
        nodes = GcsClient(address=os.environ["RAY_ADDRESS"]).get_all_node_info(
            timeout=10, state_filter=GcsNodeInfo.GcsNodeState.ALIVE
        )
    except Exception as error:  # the GCS is not up yet, or not answering
        print(f"the GCS did not answer: {error}", file=sys.stderr, flush=True)
        nodes = {}
    alive = {
        n.node_manager_address: n.node_id.hex()
        for n in nodes.values()
        if n.node_id.hex() not in lost
    }
    if wanted <= alive.keys():
        print(json.dumps(alive))
        break
    if time.monotonic() > deadline or os.getppid() != parent:
        sys.exit(f"gave up: alive {sorted(alive)}, wanted {sorted(wanted)}")
    time.sleep(1)
"""


#: How much longer than the wait that starts it the probe may poll on its own.
PROBE_GRACE_S = 30


class HeadStartFailed(RuntimeError):
    """A head started again exited before Ray had its node alive."""


class GcsStorage(BaseModel, frozen=True):
    """A Redis that keeps the GCS's tables (GCS fault tolerance), as KubeRay's
    ``gcsFaultToleranceOptions`` give a head: a head started again with the same
    storage and namespace takes up the cluster it left."""

    #: ``host:port``, which the head reads from ``RAY_REDIS_ADDRESS``
    #: (``ray/_private/node.py``).
    address: str
    password: SecretStr
    #: ``RAY_external_storage_namespace``: the key prefix of this cluster's tables.
    namespace: str


class FakeNode(BaseModel, frozen=True):
    """One node of the fake cluster."""

    node_kind: NodeKind = A2
    #: The SoC name the node reports as its accelerator type. Ascend910B4 is one of
    #: the A2 names Ray itself defines (``ray/util/accelerators/accelerators.py``).
    soc_name: str = "Ascend910B4"
    #: Logical CPUs Ray may schedule; not tied to the machine's two cores.
    num_cpus: int = 8
    #: Fake GPUs beside the NPUs (``ray start --num-gpus``), for a ``gpu``-kind app
    #: on the fake platform's GPU variant. 0 leaves GPUs to Ray's detection.
    num_gpus: int = 0
    #: Set in this node's environment only, on top of the cluster's ``node_env`` (the
    #: cluster's own settings, such as its address and GCS storage, still win): what Ray
    #: reads per node, such as Serve's ``RAY_SERVE_WORKER_PROXY_HTTP_PORT``.
    env: dict[str, str] = Field(default_factory=dict)

    @property
    def resources(self) -> dict[str, float]:
        return {
            NPU_RESOURCE: self.node_kind.devices_per_node,
            f"accelerator_type:{self.soc_name}": 1,
        }


@contextmanager
def environ(changes: Mapping[str, str]) -> Iterator[None]:
    """``changes`` in os.environ until exit, then the values before them.

    A fake cluster's ``ray start`` and a driver's ``ray.init`` read os.environ.
    """
    saved = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _session_niceness(pid: int) -> int | None:
    """The niceness of the session that ``pid`` leads, where Linux shares the cores out
    by session (autogroup, ``/proc/sys/kernel/sched_autogroup_enabled``); else None."""
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
    try:
        if enabled.read_text().strip() != "1":
            return None
        # "/autogroup-123 nice 0"
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except FileNotFoundError:
        return None


def _nice_session(pid: int, niceness: int) -> None:
    """Give the session that ``pid`` leads ``niceness`` against the machine's others.

    Where the kernel groups each session's processes for the scheduler (Linux's
    autogroup), a process's niceness weighs only against its own session's: each
    node's session gets an equal share of the cores whatever ``nice`` says, unless
    the group's own niceness is set (``/proc/PID/autogroup``, sched(7)).
    """
    autogroup = Path(f"/proc/{pid}/autogroup")
    for _ in range(20):
        try:
            autogroup.write_text(str(niceness))
            return
        except BlockingIOError:  # the kernel takes one such write per 100 ms
            time.sleep(0.1)
    raise RuntimeError(f"niceness: the kernel kept refusing {niceness} for {autogroup}")


def _tail(path: Path, characters: int) -> str:
    """The last ``characters`` of the text file at ``path``; empty if there is none."""
    try:
        return path.read_text(errors="replace")[-characters:]
    except FileNotFoundError:
        return ""


def _reload_ray_auth() -> None:
    """Make this process's Ray read the authentication mode and token from the environment again.

    This resets the whole of Ray's config in this process, not just the mode: Ray
    keeps the mode in its C++ ``RayConfig`` (``GetAuthenticationMode`` in
    ``src/ray/rpc/authentication/authentication_mode.cc``), and the only reload
    that Python reaches, ``Config.initialize("")``, reads every ``RAY_*`` setting
    again from the environment and the defaults. Ray 2.60 reloads the mode the
    same way (``_enable_token_auth`` in
    ``ray/_private/authentication/authentication_token_setup.py``,
    ``reset_auth_token_state`` in ``ray/_private/authentication_test_utils.py``).
    It is safe in :meth:`FakeNPUCluster.driver_env`, which is entered before
    ``ray.init`` and left after ``ray.shutdown``: no connection of this process
    runs on the settings it drops, and settings passed to ``ray.init`` inside the
    block come after the reset.
    """
    from ray._raylet import AuthenticationTokenLoader, Config

    # The config first: a token reload under a stale mode would look for the old token.
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


class ClusterLeftovers(RuntimeError):
    """Processes or ports of a stopped cluster are still alive."""


class FakeNPUCluster:
    """Start with :meth:`start`, stop with :meth:`stop` (or use :func:`fake_npu_cluster`)."""

    def __init__(
        self,
        nodes: Sequence[FakeNode] = (FakeNode(),),
        *,
        startup_timeout_s: float = 120,
        node_env: Mapping[str, str] | None = None,
        gcs_storage: GcsStorage | None = None,
    ):
        if not nodes:
            raise ValueError("nodes: give at least one FakeNode (the head).")
        self.nodes = list(nodes)
        #: Set in every node's environment, so in every process Ray starts there
        #: (Serve's controller builds a Serve config's app in such a process).
        self.node_env = dict(node_env or {})
        self.startup_timeout_s = startup_timeout_s
        #: Where the head keeps the GCS's tables; None keeps them in the head's memory,
        #: and a head started again makes a new cluster.
        self.gcs_storage = gcs_storage
        # Ray's socket paths must stay under about 100 characters.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="rsn-", dir="/tmp"))
        self._loopback_prefix = f"127.{random.randint(1, 254)}.{random.randint(0, 255)}"
        self.gcs_port = free_port(self.node_ip(0))
        #: Ray's token for this cluster; Ray's own generator makes the same 256 bits
        #: (``ray/_private/authentication/authentication_token_generator.py``).
        self.auth_token = secrets.token_hex(32)
        #: The running nodes' ``ray start`` processes, by node index.
        self._node_processes: dict[int, subprocess.Popen[bytes]] = {}
        #: Each running node's ID in Ray, by node index, once Ray has it alive.
        self._node_ids: dict[int, str] = {}
        #: The IDs of lost nodes, which must not count for a node started again at
        #: their address: the GCS can list one alive until its health check fails.
        self._lost_node_ids: set[str] = set()

    def node_ip(self, index: int) -> str:
        """Node ``index``'s address: 127.X.Y.2, 127.X.Y.3, ... with X.Y this cluster's own.

        All in the loopback range, one per node, so Ray tells the nodes apart, and
        one range per cluster, so that Ray's fixed-port agents of two clusters on
        one machine do not collide. Not 127.0.0.1: Ray replaces that with the
        host's routable address (``resolve_ip_for_localhost`` in ``ray/_private/services.py``).
        """
        return f"{self._loopback_prefix}.{2 + index}"

    @property
    def address(self) -> str:
        """The GCS address: ``RAY_ADDRESS`` for drivers."""
        return f"{self.node_ip(0)}:{self.gcs_port}"

    def env(self) -> dict[str, str]:
        """Environment for a driver of this cluster (a process that it starts)."""
        return {
            "RAY_ADDRESS": self.address,
            # RAY_AUTH_TOKEN comes first among Ray's token sources, so a token in
            # the caller's environment or home directory can't stand in for it.
            RAY_AUTH_MODE_ENV_VAR: "token",
            AUTH_TOKEN_ENV_VAR: self.auth_token,
            "RAY_USAGE_STATS_ENABLED": "0",
        }

    @contextmanager
    def driver_env(self) -> Iterator[None]:
        """Make this process a driver of the cluster: :meth:`env` in os.environ until exit.

        Ray reads the authentication mode and token once per process and keeps them
        (``ray._raylet.Config``, ``AuthenticationTokenLoader``), so both are reloaded
        after the environment changes, on entry and on exit. The reload resets all
        of Ray's config in this process: enter before ``ray.init`` and leave after
        ``ray.shutdown``.
        """
        try:
            with environ(self.env()):
                _reload_ray_auth()
                yield
        finally:
            _reload_ray_auth()

    def _ray_start(self, node: FakeNode, index: int) -> subprocess.Popen[bytes]:
        role = (
            ["--head", f"--port={self.gcs_port}"] if index == 0 else [f"--address={self.address}"]
        )
        command = [
            str(Path(sys.executable).with_name("ray")),
            "start",
            *role,
            "--block",
            f"--node-ip-address={self.node_ip(index)}",
            f"--num-cpus={node.num_cpus}",
            f"--resources={json.dumps(node.resources)}",
            *([f"--num-gpus={node.num_gpus}"] if node.num_gpus else []),
            "--disable-usage-stats",
            # Ray sizes the object store from the machine's memory; the recipes
            # pass little data through it.
            "--object-store-memory=500000000",
        ]
        storage_env: dict[str, str] = {}
        if index == 0:
            command += [f"--temp-dir={self.temp_dir}", "--include-dashboard=false"]
            if self.gcs_storage:
                # As KubeRay starts a head with GCS fault tolerance.
                command.append(f"--redis-password={self.gcs_storage.password.get_secret_value()}")
                storage_env = {
                    "RAY_REDIS_ADDRESS": self.gcs_storage.address,
                    "RAY_external_storage_namespace": self.gcs_storage.namespace,
                }
        elif self.gcs_storage:
            storage_env = WORKER_GCS_RECONNECT
        # Appended to: a restarted head's node writes after the one it replaces.
        log = open(self.temp_dir / f"node-{index}.log", "ab")  # noqa: SIM115 - owned by the process
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                **self.env(),
                **self.node_env,
                **node.env,
                **storage_env,
                "RAY_ADDRESS": "",
                **NO_DRAIN_ON_STOP,
            },
            start_new_session=True,  # its own process group, killed as one
        )
        return process

    def start(self) -> FakeNPUCluster:
        try:
            for index, node in enumerate(self.nodes):
                self._node_processes[index] = self._ray_start(node, index)
                self._wait_for_nodes()
        except BaseException:
            self.stop()
            raise
        return self

    def add_node(self, node: FakeNode) -> int:
        """Join one more node to the running cluster, as an operator adds a host; its index."""
        if 0 not in self._node_processes:
            raise RuntimeError("add_node: the cluster's head is not running; start() it first")
        index = len(self.nodes)
        self.nodes.append(node)
        self._node_processes[index] = self._ray_start(node, index)
        self._wait_for_nodes()
        return index

    def lose_node(self, index: int) -> float:
        """Take node ``index`` away at once: SIGKILL to its raylet and everything on it.

        Returns the ``time.time()`` of the SIGKILL, once every process of the node is gone.

        The head (index 0) too, GCS and all, as a head pod dies; :meth:`start_head` starts
        it again. On one machine the kernel closes the lost node's connections at once,
        where a host that loses power leaves its peers to notice by timeouts: Ray's
        health check of the node then takes longer than here.
        """
        if index not in self._node_processes:
            raise ValueError(
                f"index: {index} is not a running node; give one of {self.running_nodes}"
            )
        process = self._node_processes.pop(index)
        if index in self._node_ids:
            self._lost_node_ids.add(self._node_ids.pop(index))
        doomed = _process_tree(process)
        killed_at = time.time()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        if leftovers := _wait_for_exit(doomed):
            for leftover in leftovers:
                with contextlib.suppress(psutil.Error):
                    leftover.kill()
            raise ClusterLeftovers(
                f"SIGKILL to fake node {index}'s process group left alive: "
                + "; ".join(f"process {p.pid} {_describe(p)} (now killed)" for p in leftovers)
            )
        return killed_at

    def start_head(self) -> None:
        """Start the lost head again at its address, as Kubernetes restarts a head pod, and
        wait until every running node is alive in Ray.

        With :attr:`gcs_storage`, the head takes up the cluster it left. Without it, Ray
        starts a new cluster, which turns the old workers away: they exit, and this raises
        ``RuntimeError`` naming the first one, with its output.

        A head whose ``ray start`` exits before its node is alive raises
        :class:`HeadStartFailed` with the head's output and counts as lost again, so it
        can be started again, as Kubernetes restarts a pod's container that exited.
        """
        if 0 in self._node_processes:
            raise RuntimeError("start_head: the head is running; lose_node(0) first")
        # A restarted pod starts with an empty /tmp/ray. Left in place, the lost head's
        # record of its address, with the workers' processes that name that address on
        # this machine, makes ``ray start`` refuse: "Ray is trying to start at ..., but
        # is already running at ..." (``ray/scripts/scripts.py``).
        (self.temp_dir / "ray_current_cluster").unlink(missing_ok=True)
        self._node_processes[0] = self._ray_start(self.nodes[0], 0)
        try:
            self._wait_for_nodes()
        except RuntimeError as error:
            if self._node_processes[0].poll() is None:
                raise
            _stop_process_group(self._node_processes.pop(0))
            raise HeadStartFailed(str(error)) from None

    @contextmanager
    def niced(self, indices: Sequence[int], niceness: int) -> Iterator[None]:
        """Running nodes ``indices`` at ``niceness`` or nicer until exit, then as they were.

        Fake nodes share the machine's cores, where real nodes don't: a busy node at a
        higher niceness leaves the others the CPU they would have on hosts of their own.
        Each process of the nodes goes to ``niceness`` unless Ray made it nicer, and the
        session they share too where Linux shares the cores out by session
        (:func:`_nice_session`). Processes the nodes start meanwhile inherit it and keep it.
        """
        unknown = sorted(set(indices) - set(self._node_processes))
        if unknown:
            raise ValueError(
                f"indices: {unknown} are not running nodes; give some of {self.running_nodes}"
            )
        own: dict[psutil.Process, int] = {}
        sessions: dict[int, int] = {}
        try:
            for index in indices:
                leader = self._node_processes[index].pid
                if (session := _session_niceness(leader)) is not None:
                    sessions[leader] = session
                    _nice_session(leader, niceness)
                for process in self.node_processes(index):
                    with contextlib.suppress(psutil.NoSuchProcess):
                        own[process] = process.nice()
                        process.nice(max(own[process], niceness))
            yield
        finally:
            # A lost node's processes are gone; what can't be undone must not hide why
            # the block ended.
            for leader, session in sessions.items():
                with contextlib.suppress(OSError, RuntimeError):
                    _nice_session(leader, session)
            for process, niceness_before in own.items():
                with contextlib.suppress(psutil.Error):
                    process.nice(niceness_before)

    @property
    def running_nodes(self) -> list[int]:
        """The indices of the nodes that run: started, not stopped, not lost."""
        return sorted(self._node_processes)

    def node_processes(self, index: int) -> list[psutil.Process]:
        """Running node ``index``'s ``ray start`` process and every process under it."""
        return _process_tree(self._node_processes[index])

    def node_of(self, pid: int) -> int:
        """The index of the running node whose processes include ``pid``."""
        for index, process in self._node_processes.items():
            if pid in {member.pid for member in _process_tree(process)}:
                return index
        raise LookupError(f"pid: process {pid} is not on a running node of this cluster")

    def node_id(self, index: int) -> str:
        """Running node ``index``'s ID in Ray: a head started again has a new one."""
        return self._node_ids[index]

    def node_log(self, index: int) -> str:
        return (self.temp_dir / f"node-{index}.log").read_text(errors="replace")

    def _wait_for_nodes(self) -> None:
        """Wait until every running node is alive in Ray, by its address and a node ID
        that no lost node had: one that Ray has not yet declared dead must not count for
        a node started again at its address."""
        wanted = {self.node_ip(index): index for index in self._node_processes}
        # Asked of the GCS alone: ``ray.init`` waits for a raylet on its node, which a
        # head started again may not have yet. Its own deadline is a little later than
        # this wait's, which kills it first.
        probe_deadline_s = self.startup_timeout_s + PROBE_GRACE_S
        probe_errors = self.temp_dir / "node-probe.err"
        with probe_errors.open("w") as errors:
            probe = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _ALIVE_NODES_PROBE,
                    json.dumps(sorted(wanted)),
                    json.dumps(sorted(self._lost_node_ids)),
                    str(probe_deadline_s),
                    str(os.getpid()),
                ],
                env={**os.environ, **self.env()},
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
        try:
            deadline = time.monotonic() + self.startup_timeout_s
            while probe.poll() is None:
                for index, process in self._node_processes.items():
                    if process.poll() is not None:
                        raise RuntimeError(
                            f"fake NPU node {index} exited with {process.returncode}:\n"
                            f"{self.node_log(index)[-4000:]}"
                        )
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"fake NPU nodes {sorted(wanted)} were not all alive in Ray within "
                        f"{self.startup_timeout_s}s; the probe of the GCS last printed:\n"
                        + _tail(probe_errors, 1000)
                        + "\n"
                        + "\n".join(self.node_log(i)[-2000:] for i in self._node_processes)
                    )
                time.sleep(1)
        finally:
            if probe.poll() is None:
                probe.kill()
            answer, _ = probe.communicate()
        if probe.returncode != 0:
            raise RuntimeError(
                f"the probe of the cluster's nodes exited with {probe.returncode}:\n"
                + _tail(probe_errors, 2000)
            )
        alive = json.loads(answer)
        self._node_ids = {index: alive[ip] for ip, index in wanted.items()}

    def stop(self) -> None:
        """Stop every node (workers first), then check that nothing of the cluster is left."""
        tracked = self.processes()
        for index in sorted(self._node_processes, reverse=True):
            _stop_process_group(self._node_processes[index])
        self._node_processes.clear()
        self._node_ids.clear()
        leftovers = _wait_for_exit(tracked)
        gcs_port_held = _port_in_use(self.node_ip(0), self.gcs_port)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        if leftovers or gcs_port_held:
            for process in leftovers:
                with contextlib.suppress(psutil.Error):
                    process.kill()
            raise ClusterLeftovers(
                "the fake NPU cluster left behind "
                + "; ".join(
                    [f"process {p.pid} {_describe(p)} (now killed)" for p in leftovers]
                    + [f"a listener on its GCS port {self.gcs_port}"] * gcs_port_held
                )
            )

    def worker_logs(self) -> str:
        """What the processes Ray started on the nodes printed (``session_latest/logs``),
        the file last written last, so that the latest error ends the text."""
        logs = (self.temp_dir / "session_latest" / "logs").glob("worker-*")
        by_time = sorted(logs, key=lambda log: log.stat().st_mtime)
        return "\n".join(log.read_text(errors="replace") for log in by_time)

    def processes(self) -> list[psutil.Process]:
        """The node processes and everything they started: Ray's daemons, workers, engines."""
        return [
            process for node in self._node_processes.values() for process in _process_tree(node)
        ]


def _process_tree(node: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """A node's ``ray start`` process and every process under it."""
    try:
        root = psutil.Process(node.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _describe(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())[:120]
    except psutil.Error:
        return "(gone)"


def _alive(process: psutil.Process) -> bool:
    try:
        # is_running() also tells a reused pid from the process we saw.
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` that have not exited (a zombie has)."""
    return [process for process in processes if _alive(process)]


def _wait_for_exit(processes: list[psutil.Process], timeout_s: float = 15) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while (alive := still_running(processes)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return alive


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((host, port)) == 0


def _stop_process_group(process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    """SIGTERM to `ray start --block` (it stops its Ray processes, without the drain:
    :data:`NO_DRAIN_ON_STOP`), then SIGKILL to whatever of its process group is still there."""
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
def fake_npu_cluster(
    nodes: Sequence[FakeNode] = (FakeNode(),), *, node_env: Mapping[str, str] | None = None
) -> Iterator[FakeNPUCluster]:
    """A started :class:`FakeNPUCluster`, stopped (and checked) on exit, also on error."""
    cluster = FakeNPUCluster(nodes, node_env=node_env).start()
    try:
        yield cluster
    finally:
        cluster.stop()
