"""vLLM's CPU worker with NPU pacing (:mod:`ray_serve_npu_tooling.npu_pacing`).

An engine runs it when its ``worker_cls`` names
:data:`~ray_serve_npu_tooling.npu_pacing.PACED_CPU_WORKER`; vLLM imports it by name in
its worker processes.
"""

from __future__ import annotations

from vllm.v1.worker.cpu_worker import CPUWorker

from ray_serve_npu_tooling.npu_pacing import (
    PACED_CPU_WORKER,
    PACING_ENV_VAR,
    StepPacer,
    pace_model_runner,
    pacing_from_env,
)


class PacedCPUWorker(CPUWorker):
    """Runs each step on the CPU, then holds it to the paced duration."""

    pacer: StepPacer | None = None

    def init_device(self) -> None:
        # Read before the device starts: an engine that asked for this worker and
        # runs unpaced would measure the wrong thing without a word.
        pacing = pacing_from_env()
        if pacing is None:
            raise ValueError(
                f"the engine runs {PACED_CPU_WORKER}, but {PACING_ENV_VAR} is unset or empty "
                f"in its worker; set it to 'baseline' or NAME=SECONDS pairs where the engine "
                "starts, or drop worker_cls (--worker-cls) to run unpaced"
            )
        super().init_device()
        self.pacer = pace_model_runner(self.model_runner, pacing)
