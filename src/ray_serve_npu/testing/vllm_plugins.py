"""vLLM plugins of the fake-NPU tier, registered as entry points of this package.

Both do nothing unless the fake tier turned them on (``RAY_SERVE_NPU_FAKE_PLATFORM=1``,
which the tier's adapter puts in the deployment's ``runtime_env``), so installing
the package changes nothing for a real vLLM or vLLM-Ascend.

The fake platform asks Ray for NPUs unless ``RAY_SERVE_NPU_FAKE_DEVICE=GPU`` says
GPUs: ``nox -s bench`` sets that for its ``gpu``-kind app only, to compare the
``npu`` kind with a kind that runs the same Ray executor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

# Ray Core's NVIDIA support owns the GPU resource name and its visibility variable.
from ray._private.accelerators.nvidia_gpu import (
    CUDA_VISIBLE_DEVICES_ENV_VAR,
    NvidiaGPUAcceleratorManager,
)

from ray_serve_npu.hardware import NPU_RESOURCE, VISIBLE_DEVICES_ENV_VAR

FAKE_PLATFORM_ENV_VAR = "RAY_SERVE_NPU_FAKE_PLATFORM"
#: The Ray resource the fake platform asks for: a key of :data:`FAKE_DEVICES` (default NPU).
FAKE_DEVICE_ENV_VAR = "RAY_SERVE_NPU_FAKE_DEVICE"
#: Where engine processes record the devices Ray gave them (one JSON file per process).
DEVICE_RECORD_DIR_ENV_VAR = "RAY_SERVE_NPU_DEVICE_RECORD_DIR"


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
        "ray_serve_npu.testing.fake_platform.FakeNPUPlatform",
    ),
    GPU_RESOURCE: FakeDevice(
        GPU_RESOURCE,
        CUDA_VISIBLE_DEVICES_ENV_VAR,
        "ray_serve_npu.testing.fake_platform.FakeGPUPlatform",
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


def record_visible_devices() -> None:
    """``vllm.general_plugins`` entry point: vLLM loads it in every engine process.

    In a Ray worker, write down the NPUs Ray assigned and what
    ``ASCEND_RT_VISIBLE_DEVICES`` holds, so tests can check what the engine saw.
    """
    record_dir = os.environ.get(DEVICE_RECORD_DIR_ENV_VAR)
    if not (fake_platform_enabled() and record_dir):
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
        VISIBLE_DEVICES_ENV_VAR: os.environ.get(VISIBLE_DEVICES_ENV_VAR),
    }
    path = Path(record_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{os.getpid()}.json").write_text(json.dumps(record))
