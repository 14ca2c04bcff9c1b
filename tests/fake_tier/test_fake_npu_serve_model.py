"""recipes/serve_model.py on the fake-NPU tier: a run of vLLM-Ascend's nightly CI, served
by Ray Serve LLM as the recipe builds it from the CI's config (#39).

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs and a tiny random dense model in
place of the run's weights. The run is the CI's smallest dense one, Qwen3-32B-W8A8 on
four A2 NPUs: the adapter's lines show the run's own values arriving (its tensor
parallel size, its context, its quantization), which only the builder could have put
there.
"""

from __future__ import annotations

import pytest
from dry_runs import RECIPES, dry_run

from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE

pytestmark = pytest.mark.fake_npu

RUN = "Qwen3-32B-W8A8-single-a2"


def test_fake_npu_serve_model_serves_a_ci_run_with_the_runs_own_settings() -> None:
    done = dry_run(RECIPES / "serve_model.py", RUN, env={"MODEL_PATH": "/models/Qwen3-32B-W8A8"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"fake-npu tier: running `python serve_model.py {RUN}`" in done.stdout
    # The CI's values, read from its config at the tag, reached the engine's config.
    assert "fake-npu tier: engine_kwargs.tensor_parallel_size: 4 -> 1" in done.stdout
    assert "fake-npu tier: engine_kwargs.max_model_len: 40960 -> 1024" in done.stdout
    assert "fake-npu tier: dropped engine_kwargs.quantization='ascend'" in done.stdout
    assert "'/models/Qwen3-32B-W8A8' -> " in done.stdout
    assert f"serves 'qwen3-32b-w8a8'; {CHAT_LINE_END}" in done.stdout
    assert done.stdout.rstrip().endswith(STOPPED_LINE)
