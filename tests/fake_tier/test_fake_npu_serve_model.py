"""recipes/serve_model.py on the fake-NPU tier: runs of vLLM-Ascend's nightly CI, served by
Ray Serve LLM as the recipe builds them from the CI's configs (#39), one run for each
architecture class the tier has a tiny model of.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs, and tiny random models in place
of the runs' weights: a dense one, a mixture-of-experts one, and one with multi-head
latent attention and experts, as the families' pages at the tag class each model
(``ray_serve_npu.releases.architectures``). The dense and MoE runs are one app of two
models (``serve_model.py RUN RUN``); the DeepSeek-R1 run's two data-parallel ranks are an
app of their own. The adapter's lines show each run's own values arriving (its tensor
parallel size, its context, its quantization), which only the builder could have put
there, and the tiny model of its class standing in.
"""

from __future__ import annotations

import subprocess

import pytest
from dry_runs import RECIPES, dry_run
from ray_serve_npu_tooling.served_runs import FAKE_TIER_SERVED_RUNS

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.model_recipes import find_run
from ray_serve_npu.releases.architectures import family_of

pytestmark = pytest.mark.fake_npu

TAG = compat.VLLM_ASCEND.tag
#: The runs served as one app, and the data-parallel one served alone.
ONE_APP = (FAKE_TIER_SERVED_RUNS["dense"], FAKE_TIER_SERVED_RUNS["moe"])
ALONE = FAKE_TIER_SERVED_RUNS["mla-moe"]


@pytest.fixture(scope="module")
def dry_runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Each served run's name, and the dry-run that served it (both served runs' is one)."""
    together = dry_run(RECIPES / "serve_model.py", *ONE_APP, env={"MODELS_DIR": "/models"})
    alone = dry_run(
        RECIPES / "serve_model.py", ALONE, env={"MODEL_PATH": "/models/DeepSeek-R1-0528-W8A8"}
    )
    return {**dict.fromkeys(ONE_APP, together), ALONE: alone}


@pytest.mark.parametrize(("architecture", "name"), sorted(FAKE_TIER_SERVED_RUNS.items()))
def test_fake_npu_serve_model_serves_a_ci_run_with_its_own_settings_on_its_classes_tiny_model(
    dry_runs: dict[str, subprocess.CompletedProcess[str]], architecture: str, name: str
) -> None:
    done = dry_runs[name]
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    run = find_run(name, TAG)
    assert f"fake-npu tier: running `python serve_model.py {' '.join(_runs_of(name))}`" in (
        done.stdout
    )
    # The CI's values, read from its config at the tag, reached the engine's config.
    if run.tensor_parallel > 1:
        tp = f"fake-npu tier: engine_kwargs.tensor_parallel_size: {run.tensor_parallel} -> 1"
        assert tp in done.stdout
    if run.max_model_len:
        context = f"fake-npu tier: engine_kwargs.max_model_len: {run.max_model_len} -> 1024"
        assert context in done.stdout
    if run.quantization:
        quantization = f"fake-npu tier: dropped engine_kwargs.quantization={run.quantization!r}"
        assert quantization in done.stdout
    # The tiny model of the run's class stood in, and the line says whose class it is.
    family = family_of(run.model, TAG)
    assert family is not None and family.architecture == architecture
    weights = f"/models/{run.model.rsplit('/', 1)[-1]}"
    tiny = f"tiny-{STAND_IN_SPECS[architecture].family}-{STAND_IN_SPECS[architecture].digest()}"
    (line,) = [line for line in done.stdout.splitlines() if f"{weights!r} -> " in line]
    assert f"{tiny}'" in line
    assert f"stands in for {family.family}'s weights, of its architecture class" in line
    assert f"serves {run.model.rsplit('/', 1)[-1].lower()!r}; {CHAT_LINE_END}" in done.stdout
    assert done.stdout.rstrip().endswith(STOPPED_LINE)


def _runs_of(name: str) -> tuple[str, ...]:
    return ONE_APP if name in ONE_APP else (ALONE,)
