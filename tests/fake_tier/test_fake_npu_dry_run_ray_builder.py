"""A Serve config written as Ray's docs write it, dry-run on the fake-NPU tier: it is served.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs and a tiny random model. The
config builds its app with ``ray.serve.llm:build_openai_app``, not the plugin's, and
asks for its real model with tensor parallel 8. ``serve run`` builds it in a task of
the cluster's (Serve's controller runs ``build_serve_application``), not in the
command's own process, so the tier must adapt there too: where every builder passes
its configs (tests/plugin/test_fake_tier_seam.py), on every node. It serves the tiny
model on one fake NPU and answers. (A script built with Ray's builder is what every
page's recipe is: ``ray_serve_npu.build_openai_app`` calls it.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dry_runs import dry_run

from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE

pytestmark = pytest.mark.fake_npu

RAYS_SERVE_CONFIG = """\
applications:
  - name: llm_app
    route_prefix: /
    import_path: ray.serve.llm:build_openai_app
    args:
      llm_configs:
        - model_loading_config:
            model_id: deepseek-v4-flash
            model_source: /models/DeepSeek-V4-Flash-w8a8-mtp
          accelerator_config:
            kind: npu
          engine_kwargs:
            tensor_parallel_size: 8
            max_model_len: 133120
"""


def test_fake_npu_dry_run_serves_a_serve_config_built_with_rays_own_builder(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "serve_config.yaml"
    recipe.write_text(RAYS_SERVE_CONFIG)
    done = dry_run(recipe)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "fake-npu tier: running `serve run serve_config.yaml`" in done.stdout
    # What the cluster's build task changed, read from its log.
    assert "fake-npu tier: engine_kwargs.tensor_parallel_size: 8 -> 1" in done.stdout
    assert "fake-npu tier: model_loading_config.model_source: " in done.stdout
    assert f"serves 'deepseek-v4-flash'; {CHAT_LINE_END}" in done.stdout
    # The engine's one worker held one fake NPU.
    assert len([line for line in done.stdout.splitlines() if " holds NPU " in line]) == 1
    assert done.stdout.rstrip().endswith(STOPPED_LINE)
