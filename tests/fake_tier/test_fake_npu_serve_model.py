"""recipes/serve_model.py on the fake-NPU tier: a run of vLLM-Ascend's nightly CI, served
by Ray Serve LLM as the recipe builds it from the CI's config (#39).

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs and a tiny random dense model in
place of the run's weights. The runs are those the models page marks as served
(``ray_serve_npu_tooling.served_runs``): the adapter's lines show each run's own values
arriving (its tensor parallel size, its context, its quantization), which only the
builder could have put there.
"""

from __future__ import annotations

import pytest
from dry_runs import RECIPES, dry_run
from ray_serve_npu_tooling.served_runs import FAKE_TIER_SERVED_RUNS

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.model_recipes import find_run

pytestmark = pytest.mark.fake_npu


@pytest.mark.parametrize("name", FAKE_TIER_SERVED_RUNS)
def test_fake_npu_serve_model_serves_a_ci_run_with_the_runs_own_settings(name: str) -> None:
    run = find_run(name, compat.VLLM_ASCEND.tag)
    model_path = f"/models/{run.model.rsplit('/', 1)[-1]}"
    done = dry_run(RECIPES / "serve_model.py", name, env={"MODEL_PATH": model_path})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"fake-npu tier: running `python serve_model.py {name}`" in done.stdout
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
    assert f"{model_path!r} -> " in done.stdout
    assert f"serves {run.model.rsplit('/', 1)[-1].lower()!r}; {CHAT_LINE_END}" in done.stdout
    assert done.stdout.rstrip().endswith(STOPPED_LINE)
