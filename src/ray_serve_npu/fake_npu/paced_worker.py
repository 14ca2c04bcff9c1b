"""vLLM's CPU worker with NPU pacing (:mod:`ray_serve_npu.fake_npu.npu_pacing`).

The fake platform selects this worker only when ``RAY_SERVE_NPU_FAKE_STEP_PACING``
is set; vLLM imports it by name in its worker processes.
"""

from __future__ import annotations

from vllm.v1.worker.cpu_worker import CPUWorker

from ray_serve_npu.fake_npu.npu_pacing import StepPacer, pace_model_runner, pacing_from_env


class PacedCPUWorker(CPUWorker):
    """Runs each step on the CPU, then holds it to the paced duration."""

    pacer: StepPacer | None = None

    def init_device(self) -> None:
        super().init_device()
        pacing = pacing_from_env()
        if pacing is not None:
            self.pacer = pace_model_runner(self.model_runner, pacing)
