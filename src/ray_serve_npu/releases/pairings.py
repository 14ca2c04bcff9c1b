"""Which Ray runs beside which vLLM, as measured: the results of ``nox -s pairings``.

Each Ray release's Serve LLM pins one vLLM (:data:`ray_serve_npu.compat.RAY_VLLM_PINS`);
whether a Ray also runs beside a neighbouring vLLM is a measurement, not a pin. The
measurements live in ``pairings.json`` beside this module, written only by
``nox -s pairings`` (the repository's tooling), each pair with the steps it
passed and the first error of the step that stopped it, verbatim. This module is their
one reader; it imports no Ray.
"""

from __future__ import annotations

import json
from enum import Enum
from functools import cache
from pathlib import Path

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ray_serve_npu.releases.model import BadReleaseDataError

#: The measurements, package data shipped in the wheel.
PAIRINGS_FILE = Path(__file__).with_name("pairings.json")


class Step(str, Enum):
    """The steps of a pair, in order; a pair's furthest step is the last it passed."""

    #: ``ray[serve]`` and vLLM's CPU build of the version resolve and install together.
    INSTALL = "install"
    #: ``import ray.serve.llm`` and ``import vllm`` succeed.
    IMPORT = "import"
    #: ``LLMConfig(accelerator_config={"kind": "npu"})`` resolves to the plugin's kind.
    NPU_KIND = "npu_kind"
    #: ``recipes/serve_npu.py`` builds its app and answers a chat and a streamed chat
    #: request on the fake-NPU tier (``ray-serve-npu dry-run --keep-serving``).
    SERVE = "serve"


STEPS: tuple[Step, ...] = tuple(Step)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepResult(_Strict):
    step: Step
    passed: bool
    seconds: float = Field(ge=0)
    #: The first error of a step that failed, as the step printed it.
    error: str | None = None

    @model_validator(mode="after")
    def _error_iff_failed(self) -> StepResult:
        if self.passed == (self.error is not None):
            raise ValueError(f"step {self.step.value}: give an error exactly when it failed")
        return self


class MeasuredPair(_Strict):
    """One Ray beside one vLLM, as the pairing session measured it on one day."""

    ray: str
    vllm: str
    #: Why the session measures this pair (the pin, or a release's vLLM beside a near Ray).
    why: str = Field(min_length=1)
    date: str
    #: How the pair was installed: as published, or vLLM's CPU build beside the plain
    #: torch of the version its ``+cpu`` pin names, where no registry serves that build.
    installed: str = Field(min_length=1)
    #: The steps run, in order, up to the first that failed.
    steps: list[StepResult]

    @model_validator(mode="after")
    def _steps_in_order(self) -> MeasuredPair:
        names = [result.step for result in self.steps]
        if names != list(STEPS[: len(names)]) or not names:
            raise ValueError(f"steps run in the order {[s.value for s in STEPS]}; got {names}")
        if any(not result.passed for result in self.steps[:-1]):
            raise ValueError("a step after a failed one was recorded; the session stops there")
        return self

    @property
    def furthest(self) -> Step | None:
        """The last step the pair passed, None where it did not install."""
        passed = [result.step for result in self.steps if result.passed]
        return passed[-1] if passed else None

    @property
    def serves(self) -> bool:
        return self.furthest is Step.SERVE

    @property
    def first_error(self) -> str | None:
        return self.steps[-1].error


class Pairings(_Strict):
    #: The command that made the file.
    command: str = Field(min_length=1)
    pairs: list[MeasuredPair]

    @model_validator(mode="after")
    def _one_entry_per_pair(self) -> Pairings:
        keys = [(pair.ray, pair.vllm) for pair in self.pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("each (ray, vllm) pair appears once")
        return self

    def pair(self, ray: str, vllm: str) -> MeasuredPair | None:
        return next((p for p in self.pairs if (p.ray, p.vllm) == (ray, vllm)), None)

    def beside(self, vllm: str) -> list[MeasuredPair]:
        """The pairs measured beside this vLLM, oldest Ray first."""
        return sorted((p for p in self.pairs if p.vllm == vllm), key=lambda p: Version(p.ray))

    def beside_ray(self, ray: str) -> list[MeasuredPair]:
        """The pairs measured beside this Ray, oldest vLLM first."""
        return sorted((p for p in self.pairs if p.ray == ray), key=lambda p: Version(p.vllm))

    def serving_rays(self, vllm: str) -> list[str]:
        """The Rays whose Serve LLM served this vLLM when measured."""
        return [pair.ray for pair in self.beside(vllm) if pair.serves]

    def serves(self, ray: str, vllm: str) -> bool:
        measured = self.pair(ray, vllm)
        return measured is not None and measured.serves


def load_pairings(path: Path = PAIRINGS_FILE) -> Pairings:
    """Read and validate a pairings file; :class:`BadReleaseDataError` names what is wrong."""
    try:
        return Pairings.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, ValidationError) as error:
        raise BadReleaseDataError(
            f"{path}: {error}; fix: write it with `nox -s pairings`, which makes this file"
        ) from None


@cache
def pairings() -> Pairings:
    """The committed measurements."""
    return load_pairings()
