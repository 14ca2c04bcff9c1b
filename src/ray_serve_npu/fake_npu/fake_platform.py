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

With ``RAY_SERVE_NPU_FAKE_STEP_PACING`` set, both hold each engine step to an
NPU's duration (:mod:`ray_serve_npu.fake_npu.npu_pacing`, a simulation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm.platforms.cpu import CpuPlatform

from ray_serve_npu.envs import PACING_ENV_VAR
from ray_serve_npu.fake_npu.npu_pacing import pacing_from_env
from ray_serve_npu.fake_npu.vllm_plugins import FAKE_DEVICES, GPU_RESOURCE
from ray_serve_npu.hardware import NPU_RESOURCE

if TYPE_CHECKING:
    from vllm.config import VllmConfig

#: The worker vLLM's CPU platform picks (``vllm/platforms/cpu.py``), and its paced variant.
CPU_WORKER = "vllm.v1.worker.cpu_worker.CPUWorker"
PACED_CPU_WORKER = "ray_serve_npu.fake_npu.paced_worker.PacedCPUWorker"


class _FakePlatform(CpuPlatform):
    """vLLM's CPU platform, with NPU pacing when ``RAY_SERVE_NPU_FAKE_STEP_PACING`` asks for it."""

    # vLLM's Ray executor copies these to its workers (``vllm/v1/executor/ray_executor.py``).
    additional_env_vars: list[str] = [*CpuPlatform.additional_env_vars, PACING_ENV_VAR]

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        super().check_and_update_config(vllm_config)
        # Parsed here as well as in each worker, so that a bad value stops the engine
        # before it starts its workers.
        if pacing_from_env() is None:
            return
        parallel_config = vllm_config.parallel_config
        # vLLM may check a config twice (in the API server and in the engine).
        if parallel_config.worker_cls not in (CPU_WORKER, PACED_CPU_WORKER):
            raise ValueError(
                f"{PACING_ENV_VAR} paces vLLM's CPU worker, but the engine runs "
                f"{parallel_config.worker_cls}; unset {PACING_ENV_VAR} or drop --worker-cls"
            )
        parallel_config.worker_cls = PACED_CPU_WORKER


class FakeNPUPlatform(_FakePlatform):
    """CPU compute, NPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[NPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[NPU_RESOURCE].visible_devices_env_var


class FakeGPUPlatform(_FakePlatform):
    """CPU compute, GPU scheduling."""

    ray_device_key: str = FAKE_DEVICES[GPU_RESOURCE].ray_resource
    device_control_env_var: str = FAKE_DEVICES[GPU_RESOURCE].visible_devices_env_var
