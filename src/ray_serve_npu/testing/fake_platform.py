"""vLLM's CPU platform, dressed as an Ascend NPU for Ray's sake.

vLLM's CPU platform has no Ray device key, so vLLM's Ray executor refuses it
(``vllm/v1/executor/ray_utils.py``). vLLM-Ascend's platform has
``ray_device_key = "NPU"`` and ``device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES"``
(``vllm_ascend/platform.py``). This platform computes on the CPU and asks Ray for
NPUs the way vLLM-Ascend does, so Ray assigns a (fake) NPU to every engine worker
and sets ``ASCEND_RT_VISIBLE_DEVICES`` for it, as on an Ascend node.
"""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform

from ray_serve_npu.hardware import NPU_RESOURCE, VISIBLE_DEVICES_ENV_VAR


class FakeNPUPlatform(CpuPlatform):
    """CPU compute, NPU scheduling."""

    ray_device_key: str = NPU_RESOURCE
    device_control_env_var: str = VISIBLE_DEVICES_ENV_VAR
