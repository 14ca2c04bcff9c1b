"""vLLM's CPU platform, dressed as an Ascend NPU (or a GPU) for Ray's sake.

vLLM's CPU platform has no Ray device key, so vLLM's Ray executor refuses it
(``vllm/v1/executor/ray_utils.py``). vLLM-Ascend's platform has
``ray_device_key = "NPU"`` and ``device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES"``
(``vllm_ascend/platform.py``). This platform computes on the CPU and asks Ray for
NPUs the way vLLM-Ascend does, so Ray assigns a (fake) NPU to every engine worker
and sets ``ASCEND_RT_VISIBLE_DEVICES`` for it, as on an Ascend node.

:class:`FakeGPUPlatform` asks Ray for ``GPU`` instead, as vLLM's CUDA platform
does, so that a benchmark can run Ray Serve LLM's ``gpu`` kind on fake GPUs
beside the ``npu`` kind (:data:`~ray_serve_npu.testing.vllm_plugins.FAKE_DEVICE_ENV_VAR`).
"""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform

from ray_serve_npu.hardware import NPU_RESOURCE
from ray_serve_npu.testing.vllm_plugins import FAKE_DEVICES, GPU_RESOURCE


class FakeNPUPlatform(CpuPlatform):
    """CPU compute, NPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[NPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[NPU_RESOURCE].visible_devices_env_var


class FakeGPUPlatform(CpuPlatform):
    """CPU compute, GPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[GPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[GPU_RESOURCE].visible_devices_env_var
