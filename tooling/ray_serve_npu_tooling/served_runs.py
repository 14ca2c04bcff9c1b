"""The runs of vLLM-Ascend's nightly CI that the fake-NPU tier serves with serve_model.py.

``tests/fake_tier/test_fake_npu_serve_model.py`` serves them together, as one app of
``serve_model.py RUN RUN``; the models page marks each as served there and every other
run as checked without an engine.
"""

from __future__ import annotations

#: By the names ``serve_model.py`` takes (``ray_serve_npu.model_recipes.run_key``), by the
#: architecture class whose tiny model serves it
#: (``ray_serve_npu.fake_npu.tiny_model.STAND_IN_SPECS``): the CI's smallest dense run,
#: on four A3 NPUs, and its smallest MoE run, on one, as the models page serves them on
#: an A3 node. The class with latent attention has no run here: its one family's runs
#: (DeepSeek-R1) are data parallel, an app of their own, and a second dry-run of about
#: 95 s does not fit the fake-NPU tier's budget; the probe of vLLM's CPU build serves its
#: tiny model instead (``ray_serve_npu_tooling.cpu_architectures``), and the dry-run of
#: every model serves a DeepSeek-R1 run on it outside the suite
#: (``ray_serve_npu_tooling.model_dry_runs``).
FAKE_TIER_SERVED_RUNS: dict[str, str] = {
    "dense": "Qwen3-32B-W8A8-single-a3",
    "moe": "Qwen3-30B-A3B-W8A8-TP1",
}
