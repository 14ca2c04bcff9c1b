"""vLLM's CPU platform, dressed as an Ascend NPU (or a GPU) for Ray's sake.

vLLM's CPU platform has no Ray device key, so vLLM's Ray executor refuses it
(``vllm/v1/executor/ray_utils.py``). vLLM-Ascend's platform has
``ray_device_key = "NPU"`` and ``device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES"``
(``vllm_ascend/platform.py``). This platform computes on the CPU and asks Ray for
NPUs with vLLM-Ascend's device key, so Ray assigns a (fake) NPU to every engine
worker. Unlike vLLM-Ascend's, it keeps vLLM's empty ``ray_noset_device_env_vars``, so
Ray also sets ``ASCEND_RT_VISIBLE_DEVICES`` to each worker's own NPU; on an Ascend
node vLLM sets the no-set variable and each worker binds its NPU from the ids vLLM
passes it (docs/npu-ascend.md, "Which NPU each engine worker sees").

:class:`FakeGPUPlatform` asks Ray for ``GPU`` instead, as vLLM's CUDA platform
does, so that a benchmark can run Ray Serve LLM's ``gpu`` kind on fake GPUs
beside the ``npu`` kind (:data:`~ray_serve_npu.envs.FAKE_DEVICE_ENV_VAR`).

Both leave vLLM's ``worker_cls`` as set, as vLLM's CPU platform does: the
repository's benchmark harness paces their steps like an NPU's with a worker of
its own (a simulation, which no wheel ships).
"""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform

from ray_serve_npu.fake_npu.vllm_plugins import FAKE_DEVICES, GPU_RESOURCE
from ray_serve_npu.hardware import NPU_RESOURCE


class FakeNPUPlatform(CpuPlatform):
    """CPU compute, NPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[NPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[NPU_RESOURCE].visible_devices_env_var


class FakeGPUPlatform(CpuPlatform):
    """CPU compute, GPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[GPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[GPU_RESOURCE].visible_devices_env_var
