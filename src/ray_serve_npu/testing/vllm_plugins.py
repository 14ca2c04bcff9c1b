"""vLLM plugins of the fake-NPU tier, registered as entry points of this package.

Both do nothing unless the fake tier turned them on (``RAY_SERVE_NPU_FAKE_PLATFORM=1``,
which the tier's adapter puts in the deployment's ``runtime_env``), so installing
the package changes nothing for a real vLLM or vLLM-Ascend.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ray_serve_npu.hardware import NPU_RESOURCE, VISIBLE_DEVICES_ENV_VAR

FAKE_PLATFORM_ENV_VAR = "RAY_SERVE_NPU_FAKE_PLATFORM"
#: Where engine processes record the devices Ray gave them (one JSON file per process).
DEVICE_RECORD_DIR_ENV_VAR = "RAY_SERVE_NPU_DEVICE_RECORD_DIR"


def fake_platform_enabled() -> bool:
    return os.environ.get(FAKE_PLATFORM_ENV_VAR) == "1"


def fake_npu_platform() -> str | None:
    """``vllm.platform_plugins`` entry point: the fake platform's class path, when enabled."""
    if fake_platform_enabled():
        return "ray_serve_npu.testing.fake_platform.FakeNPUPlatform"
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
