"""recipes/serve_model.py on the fake-NPU tier: runs of vLLM-Ascend's nightly CI, served by
Ray Serve LLM as the recipe builds them from the CI's configs (#39), one run for each
architecture class the tier serves in its session.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs, and tiny random models in place
of the runs' weights: a dense one and a mixture-of-experts one, as the families' pages at
the tag class each model (``ray_serve_npu.releases.architectures``). The runs are one app
of two models (``serve_model.py RUN RUN``), as the models page serves them. The adapter's
lines show each run's own values arriving (its tensor parallel size, its context, its
quantization), which only the builder could have put there, and the tiny model of its
class standing in; the dry-run asks each model one chat request.

A run of the class with latent attention, which is data parallel and so can't join that
app, is served on the Compose path: the Compose file that ``serve_model.py --compose RUN``
prints, dry-run as the models page says, with vLLM's own server (CPU build) in place of
the container, on its class's tiny model.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dry_runs import RECIPES, dry_run
from ray_serve_npu_tooling.served_runs import FAKE_TIER_COMPOSE_RUN, FAKE_TIER_SERVED_RUNS

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.model_compose import compose_for
from ray_serve_npu.model_recipes import find_run
from ray_serve_npu.releases.architectures import family_of

pytestmark = pytest.mark.fake_npu

TAG = compat.VLLM_ASCEND.tag


@pytest.fixture(scope="module")
def one_app() -> subprocess.CompletedProcess[str]:
    """``ray-serve-npu dry-run serve_model.py -- RUN RUN``, every served run in one app."""
    return dry_run(
        RECIPES / "serve_model.py", *FAKE_TIER_SERVED_RUNS.values(), env={"MODELS_DIR": "/models"}
    )


@pytest.mark.parametrize(("architecture", "name"), sorted(FAKE_TIER_SERVED_RUNS.items()))
def test_fake_npu_serve_model_serves_a_ci_run_with_its_own_settings_on_its_classes_tiny_model(
    one_app: subprocess.CompletedProcess[str], architecture: str, name: str
) -> None:
    done = one_app
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    run = find_run(name, TAG)
    runs = " ".join(FAKE_TIER_SERVED_RUNS.values())
    assert f"fake-npu tier: running `python serve_model.py {runs}`" in done.stdout
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
    weights = f"/models/{run.weights_folder}"
    tiny = f"tiny-{STAND_IN_SPECS[architecture].family}-{STAND_IN_SPECS[architecture].digest()}"
    (line,) = [line for line in done.stdout.splitlines() if f"{weights!r} -> " in line]
    assert f"{tiny}'" in line
    assert f"stands in for {family.family}'s weights, of its architecture class" in line
    assert f"serves {run.served_name!r}; {CHAT_LINE_END}" in done.stdout
    assert done.stdout.rstrip().endswith(STOPPED_LINE)


@pytest.fixture(scope="module")
def compose_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Compose file ``serve_model.py --compose RUN`` prints for the Compose run."""
    _, name = FAKE_TIER_COMPOSE_RUN
    printed = subprocess.run(
        [sys.executable, RECIPES / "serve_model.py", "--compose", name],
        capture_output=True,
        text=True,
        check=True,
    )
    path = tmp_path_factory.mktemp("compose") / compose_for(find_run(name, TAG)).file_name
    path.write_text(printed.stdout)
    return path


def test_fake_npu_compose_file_of_a_ci_run_serves_it_on_its_classes_tiny_model(
    compose_file: Path,
) -> None:
    architecture, name = FAKE_TIER_COMPOSE_RUN
    run = find_run(name, TAG)
    compose = compose_for(run)
    weights = f"/models/{run.weights_folder}"
    done = dry_run(
        compose_file, env={"MODEL_PATH": weights}, options=["--node-kind", compose.node_kind]
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"fake-npu tier: 1 fake {compose.node_kind} node(s) at " in done.stdout
    assert f"running `docker compose -f {compose.file_name} up -d`" in done.stdout
    # The run's values, from its config at the tag, reached vLLM's own command line: the
    # adapter's lines, which vLLM's server process prints on its stderr.
    for flag, value in (
        ("--tensor-parallel-size", run.tensor_parallel),
        ("--max-model-len", run.max_model_len),
    ):
        assert f"fake-npu tier: vllm serve {flag}: '{value}' -> " in done.stderr
    # Its data-parallel ranks stay: the tier changes no --data-parallel-size.
    assert run.data_parallel > 1 and "vllm serve --data-parallel-size" not in done.stderr
    assert f"fake-npu tier: dropped vllm serve --quantization={run.quantization!r}" in done.stderr
    # The tiny model of the run's class stood in, and the line says whose class it is.
    family = family_of(run.model, TAG)
    assert family is not None and family.architecture == architecture
    tiny = f"tiny-{STAND_IN_SPECS[architecture].family}-{STAND_IN_SPECS[architecture].digest()}"
    (line,) = [line for line in done.stderr.splitlines() if f"{weights!r} -> " in line]
    assert f"{tiny}'" in line and f"of its architecture class `{architecture}`" in line
    assert f"serves {run.served_name!r}; {CHAT_LINE_END}" in done.stdout
    assert done.stdout.rstrip().endswith(STOPPED_LINE)
