"""A recipe written as Ray's docs write it, dry-run on the fake-NPU tier: it is served.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs and a tiny random model. The
recipe builds its app with ``ray.serve.llm.build_openai_app``, not the plugin's, and
asks for its real model with tensor parallel 8; the tier adapts it where every
builder passes its configs (tests/plugin/test_fake_tier_seam.py), so it serves the
tiny model on one fake NPU and answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dry_runs import dry_run

from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE

pytestmark = pytest.mark.fake_npu

RAYS_WAY = """\
from ray import serve
from ray.serve.llm import LLMConfig, build_openai_app

llm_config = LLMConfig(
    model_loading_config={
        "model_id": "deepseek-v4-flash",
        "model_source": "/models/DeepSeek-V4-Flash-w8a8-mtp",
    },
    accelerator_config={"kind": "npu"},
    engine_kwargs={"tensor_parallel_size": 8, "max_model_len": 133120},
)
serve.run(build_openai_app({"llm_configs": [llm_config]}), blocking=True)
"""


def test_fake_npu_dry_run_serves_a_recipe_built_with_rays_own_builder(tmp_path: Path) -> None:
    recipe = tmp_path / "serve_rays_way.py"
    recipe.write_text(RAYS_WAY)
    done = dry_run(recipe)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "fake-npu tier: engine_kwargs.tensor_parallel_size: 8 -> 1" in done.stdout
    assert "fake-npu tier: model_loading_config.model_source: " in done.stdout
    assert f"serves 'deepseek-v4-flash'; {CHAT_LINE_END}" in done.stdout
    # The engine's one worker held one fake NPU.
    assert len([line for line in done.stdout.splitlines() if " holds NPU " in line]) == 1
    assert done.stdout.rstrip().endswith(STOPPED_LINE)
