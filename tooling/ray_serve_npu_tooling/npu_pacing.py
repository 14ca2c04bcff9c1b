"""NPU pacing for the fake tier's engine: each engine step takes as long as an NPU's would.

A simulation, for the benchmark harness (``nox -s bench``); no wheel ships it. An
engine started with vLLM's ``worker_cls`` set to :data:`PACED_CPU_WORKER` and
:data:`PACING_ENV_VAR` in its environment (:func:`paced_engine` gives both) runs each
step of the tiny model on the CPU as usual, then sleeps until the step has taken

    ``prefill_s_per_token`` × (prompt tokens in the step)
    + ``decode_s_per_step`` (when the step decodes any request)

so a step takes ``max(real, paced)``: the CPU's real step stands in for the
NPU's compute of that same step, so it counts towards the paced time, not on
top of it, and a step's duration doesn't depend on how fast this machine runs
the tiny model. When the CPU step takes longer than the paced time, the step
takes the real time (the worker logs the first such step). While the worker
sleeps, its CPU is idle, as an NPU host's engine process mostly waits on the
device; the rest of the engine (scheduling, detokenizing, the API server) runs
on the CPU for real.

What it doesn't model: how step time grows with the batch (a decode step of
one request takes as long as one of 64), attention cost growing with context
length, speculative decoding (MTP) and its acceptance rate, NPU memory and
KV-cache capacity (the CPU engine's own limits apply), collective
communication, data parallelism across engines (each engine is paced on its
own), prefill/decode interference beyond adding the two costs, and async
scheduling (``vllm/platforms/cpu.py`` turns it off, so the engine's own work
between steps adds to each step, where the baseline's ``--async-scheduling``
overlaps it).

Defaults: derived from vLLM-Ascend's CI baseline for DeepSeek-V4-Flash W8A8 on
one A3 node, ``tests/e2e/nightly/single_node/models/configs/DeepSeek-V4-Flash-W8A8-A3.yaml``
(baseline 181.8813 output tokens/s, set in commit 67b1ac5 of 2026-08-19; at the
tag v0.22.1rc1 the file holds a placeholder baseline of 1). Its server runs the
A3 settings of the DeepSeek-V4-Flash tutorial: ``--data-parallel-size 4
--tensor-parallel-size 4``, ``--max-num-seqs 64``, ``--max-num-batched-tokens
10240``, MTP with one speculative token. Its load: AISBench with 16 concurrent
streams (``batch_size: 16``, ``request_rate: 0``), prompts of the dataset
``GSM8K_prefix0_in32768_bs1000_deepseek`` (32768 tokens, as its name says) and
``max_out_len: 1024``. The arithmetic, for one of the four DP engines:

- request rate: 181.8813 / 1024 = 0.17762 requests/s for the node;
  with 16 streams always busy, a request lives 16 / 0.17762 = 90.08 s
  (Little's law);
- per DP engine (16 / 4 = 4 streams, assumed evenly spread): 0.17762 / 4 =
  0.044405 requests/s, so 0.044405 × 32768 = 1455.1 prompt tokens/s to prefill
  and 181.8813 / 4 = 45.470 output tokens/s, that is 45.470 / 4 = 11.368
  decode steps/s when every step decodes all four streams;
- the engine is always busy: 1455.1 × prefill_s_per_token + 11.368 ×
  decode_s_per_step = 1 s per second;
- the baseline gives one equation for two unknowns, so assume the engine
  spends half its time on each (:data:`BASELINE_PREFILL_SHARE`):
  decode_s_per_step = 0.5 / 11.368 = 0.04398 s and prefill_s_per_token =
  0.5 / 1455.1 = 0.0003436 s (a 32K prompt prefills in 11.3 s).

The bounds, whatever the split: decode_s_per_step below 1 / 11.368 = 0.088 s,
prefill_s_per_token below 1 / 1455.1 = 0.00069 s. The fake engine emits one
token per stream per decode step, so decode_s_per_step is the baseline's time
per output token of a stream, MTP's gain included, not the A3's time per
forward pass. Also assumed: AISBench's output throughput is output tokens over
wall time, every request produces 1024 tokens, no prompt hits the prefix cache,
and ramp-up and tail are negligible over 64 requests.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

logger = logging.getLogger(__name__)

#: Holds each paced engine step to an NPU's duration: ``baseline``, or ``NAME=SECONDS``
#: pairs separated by commas.
PACING_ENV_VAR = "RAY_SERVE_NPU_FAKE_STEP_PACING"
#: The worker that paces (:mod:`ray_serve_npu_tooling.paced_worker`), as vLLM's
#: ``worker_cls`` names it: vLLM's own seam for a worker class, which the fake
#: platform, like vLLM's CPU platform, leaves as set (``vllm/platforms/cpu.py``).
PACED_CPU_WORKER = "ray_serve_npu_tooling.paced_worker.PacedCPUWorker"
#: vLLM's Ray executor copies the variables this names from the engine's process to
#: its workers (``vllm/ray/ray_env.py``), which Ray Serve LLM starts as Ray actors.
VLLM_COPY_ENV_VAR = "VLLM_RAY_EXTRA_ENV_VARS_TO_COPY"

#: The value of :data:`PACING_ENV_VAR` that selects the baseline-derived defaults.
BASELINE = "baseline"

# The CI baseline and its load (see the module docstring for the sources).
BASELINE_OUTPUT_TOKENS_PER_S = 181.8813
BASELINE_CONCURRENCY = 16
BASELINE_DATA_PARALLEL = 4
BASELINE_INPUT_TOKENS = 32768
BASELINE_OUTPUT_TOKENS = 1024
#: Assumed: the share of an engine's time spent on prefill (the rest on decode).
BASELINE_PREFILL_SHARE = 0.5


def _baseline_rates() -> tuple[float, float]:
    """Prompt tokens prefilled and decode steps run per second by one DP engine."""
    requests_per_s = BASELINE_OUTPUT_TOKENS_PER_S / BASELINE_OUTPUT_TOKENS
    engine_requests_per_s = requests_per_s / BASELINE_DATA_PARALLEL
    prefill_tokens_per_s = engine_requests_per_s * BASELINE_INPUT_TOKENS
    streams_per_engine = BASELINE_CONCURRENCY / BASELINE_DATA_PARALLEL
    decode_steps_per_s = BASELINE_OUTPUT_TOKENS_PER_S / BASELINE_DATA_PARALLEL / streams_per_engine
    return prefill_tokens_per_s, decode_steps_per_s


_PREFILL_TOKENS_PER_S, _DECODE_STEPS_PER_S = _baseline_rates()
#: 0.5 / 1455.1 = 0.0003436 s per prompt token.
DEFAULT_PREFILL_S_PER_TOKEN = BASELINE_PREFILL_SHARE / _PREFILL_TOKENS_PER_S
#: 0.5 / 11.368 = 0.04398 s per decode step.
DEFAULT_DECODE_S_PER_STEP = (1 - BASELINE_PREFILL_SHARE) / _DECODE_STEPS_PER_S


class NPUStepPacing(BaseModel):
    """How long a paced engine step takes, in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Seconds per prompt token a step prefills.
    prefill_s_per_token: float = Field(
        default=DEFAULT_PREFILL_S_PER_TOKEN, ge=0, le=1, allow_inf_nan=False
    )
    #: Seconds a step takes when it decodes at least one request.
    decode_s_per_step: float = Field(
        default=DEFAULT_DECODE_S_PER_STEP, ge=0, le=10, allow_inf_nan=False
    )

    def step_seconds(self, prefill_tokens: int, decoding: bool) -> float:
        """The paced duration of a step that prefills ``prefill_tokens`` tokens."""
        return prefill_tokens * self.prefill_s_per_token + (
            self.decode_s_per_step if decoding else 0.0
        )

    def env_value(self) -> str:
        """This pacing as a value of :data:`PACING_ENV_VAR`."""
        return ",".join(f"{name}={value!r}" for name, value in self.model_dump().items())


def _usage() -> str:
    names = ", ".join(NPUStepPacing.model_fields)
    return (
        f"set it to {BASELINE!r} for the defaults derived from vLLM-Ascend's CI baseline, "
        f"or to NAME=SECONDS pairs separated by commas (names: {names}), "
        f"for example 'decode_s_per_step=0.05,prefill_s_per_token=0.0003'; to turn the "
        f"pacing off, start the engine without worker_cls {PACED_CPU_WORKER}"
    )


def paced_engine(
    pacing: NPUStepPacing, env: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """What an engine with environment ``env`` needs to run paced by ``pacing``: its
    engine keyword arguments (vLLM's ``worker_cls``) and the variables its environment
    then holds (the copy list keeps what ``env`` already names)."""
    copied = [name.strip() for name in env.get(VLLM_COPY_ENV_VAR, "").split(",") if name.strip()]
    return {"worker_cls": PACED_CPU_WORKER}, {
        PACING_ENV_VAR: pacing.env_value(),
        VLLM_COPY_ENV_VAR: ",".join(dict.fromkeys([*copied, PACING_ENV_VAR])),
    }


def pacing_from_env(environ: Mapping[str, str] = os.environ) -> NPUStepPacing | None:
    """The pacing :data:`PACING_ENV_VAR` sets; None when it's unset or empty.

    Raises ValueError, naming the variable and the fix, for any other value.
    """
    raw = environ.get(PACING_ENV_VAR, "").strip()
    if not raw:
        return None
    if raw == BASELINE:
        return NPUStepPacing()
    fields: dict[str, str] = {}
    for pair in raw.split(","):
        name, sep, value = (part.strip() for part in pair.partition("="))
        if not sep or not name or not value:
            raise ValueError(
                f"{PACING_ENV_VAR}={raw!r}: {pair.strip()!r} is not NAME=SECONDS; {_usage()}"
            )
        if name in fields:
            raise ValueError(f"{PACING_ENV_VAR}={raw!r}: {name} is given twice; {_usage()}")
        fields[name] = value
    try:
        return NPUStepPacing.model_validate(fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors(include_url=False)
        )
        raise ValueError(f"{PACING_ENV_VAR}={raw!r}: {problems}; {_usage()}") from None


def scheduled_work(scheduler_output: Any) -> tuple[int, bool]:
    """Prompt tokens a step prefills, and whether it decodes any request.

    ``scheduler_output`` is vLLM's ``SchedulerOutput``
    (``vllm/v1/core/sched/output.py``): a request is prefilling when it's new in
    this step or, scheduled before, has no output token yet
    (``CachedRequestData.is_context_phase``); every other scheduled request decodes.
    """
    new = {request.req_id for request in scheduler_output.scheduled_new_reqs}
    cached = scheduler_output.scheduled_cached_reqs
    prefill_tokens = 0
    decoding = False
    for req_id, tokens in scheduler_output.num_scheduled_tokens.items():
        if req_id in new or cached.is_context_phase(req_id):
            prefill_tokens += tokens
        else:
            decoding = True
    return prefill_tokens, decoding


class StepPacer:
    """Wraps a model runner's ``execute_model`` and ``sample_tokens`` so each step is paced.

    A step starts when ``execute_model`` is called and ends when its output is
    returned: from ``execute_model`` when that returns one, else from the
    ``sample_tokens`` that follows (``vllm/v1/engine/core.py``, ``EngineCore.step``).
    vLLM's Ray executor calls the model runner directly
    (``vllm/v1/executor/ray_utils.py``), so the pacer wraps the runner, not the worker.
    """

    def __init__(
        self,
        pacing: NPUStepPacing,
        execute_model: Callable[..., Any],
        sample_tokens: Callable[..., Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pacing = pacing
        self._execute_model = execute_model
        self._sample_tokens = sample_tokens
        self._clock = clock
        self._sleep = sleep
        self._deadline: float | None = None
        self._paced_s = 0.0
        self.overruns = 0

    def execute_model(self, scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        start = self._clock()
        self._paced_s = self.pacing.step_seconds(*scheduled_work(scheduler_output))
        self._deadline = start + self._paced_s
        output = self._execute_model(scheduler_output, *args, **kwargs)
        if output is not None:
            self._hold()
        return output

    def sample_tokens(self, *args: Any, **kwargs: Any) -> Any:
        output = self._sample_tokens(*args, **kwargs)
        self._hold()
        return output

    def _hold(self) -> None:
        """Sleep until the step's paced duration is over."""
        if self._deadline is None:
            return
        remaining = self._deadline - self._clock()
        self._deadline = None
        if remaining > 0:
            self._sleep(remaining)
        elif self._paced_s > 0:
            self.overruns += 1
            if self.overruns == 1:
                logger.warning(
                    "%s: a step took %.4f s on the CPU, longer than its paced %.4f s; "
                    "such steps take their real time",
                    PACING_ENV_VAR,
                    self._paced_s - remaining,
                    self._paced_s,
                )


def pace_model_runner(model_runner: Any, pacing: NPUStepPacing) -> StepPacer:
    """Pace ``model_runner`` (a vLLM model runner) in place; return the pacer."""
    pacer = StepPacer(pacing, model_runner.execute_model, model_runner.sample_tokens)
    model_runner.execute_model = pacer.execute_model
    model_runner.sample_tokens = pacer.sample_tokens
    return pacer
