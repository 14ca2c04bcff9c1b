"""A release's runs of each model, which the checker judges a deployment of that model by.

A run is how one of the release's sources serves a model: a test case of vLLM-Ascend's
nightly CI (:mod:`ray_serve_npu.releases.nightly`) or a node kind's run of the
DeepSeek-V4-Flash tutorial that the release data transcribes. Runs are keyed by the
folder name of the model's weights, which is what a recipe, a Compose service and a CI
config all end their model's path in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.releases.nightly import NIGHTLY_DIR
from ray_serve_npu.releases.runs import serve_runs
from ray_serve_npu.vllm_flags import stored_flags


class ModelRun(BaseModel):
    """One source's run of a model at a release."""

    #: The run's name: the CI case's, or the tutorial's node kind.
    name: str
    #: NPUs the run's engine uses: tensor × data × pipeline parallel.
    npus: int
    #: The engine settings the run gives, by engine keyword, as the release's vLLM parses them.
    engine: dict[str, Any]
    #: Where the run is written at the release's tag: ``FILE:LINE`` or ``FILE:LINES``.
    source: str


#: The engine settings whose product is the NPUs of the whole engine, on every node.
PARALLEL_KEYS = ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size")


def engine_npus(engine: Mapping[str, Any]) -> int:
    """NPUs of the whole engine that ``engine`` (settings by keyword) configures: tensor ×
    data × pipeline parallel, each 1 where unset; a value that isn't a whole number
    counts as 1, which vLLM's own check of the value reports."""
    npus = 1
    for key in PARALLEL_KEYS:
        try:
            npus *= int(engine.get(key) or 1)
        except (TypeError, ValueError):
            pass
    return npus


def model_key(model: str) -> str:
    """The name runs are keyed by: the last part of the model's path or repository id, in
    lower case (``/models/DeepSeek-V4-Flash-w8a8-mtp`` and
    ``Eco-Tech/DeepSeek-V4-Flash-w8a8-mtp`` are one model)."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower()


@cache
def runs_by_model(tag: str) -> dict[str, tuple[ModelRun, ...]]:
    """Every run of release ``tag``, by :func:`model_key`; empty where the release has
    neither stored CI configs nor release data."""
    runs: dict[str, list[ModelRun]] = defaultdict(list)
    if (NIGHTLY_DIR / tag).is_dir():
        for run in serve_runs(tag):
            runs[model_key(run.model)].append(
                ModelRun(
                    name=run_key(run),
                    npus=run.npus,
                    engine=run.settings,
                    source=f"{run.path}:{run.line}",
                )
            )
    data = RELEASES.get(tag)
    if data is not None:
        flags = stored_flags(data.vllm)
        tutorial = data.deepseek_v4_flash
        for kind, run in tutorial.runs.items():
            given = flags.given(run.serve_words())
            runs[model_key(run.model)].append(
                ModelRun(
                    name=f"the tutorial's {kind} run",
                    npus=engine_npus(given),
                    engine=given,
                    source=f"{tutorial.file}:{run.lines}",
                )
            )
    return {model: tuple(found) for model, found in runs.items()}
