"""The runs of vLLM-Ascend's nightly CI that the fake-NPU tier serves with serve_model.py.

``tests/fake_tier/test_fake_npu_serve_model.py`` serves them together, as one app of
``serve_model.py RUN RUN RUN``; the models page marks each as served there and every
other run as checked without an engine.
"""

from __future__ import annotations

#: By the names ``serve_model.py`` takes (``ray_serve_npu.model_recipes.run_key``), one
#: run for each architecture class that has a tiny model on the tier
#: (``ray_serve_npu.fake_npu.tiny_model.STAND_IN_SPECS``), by its class: the CI's
#: smallest dense run, on four A2 NPUs, and its smallest MoE run, on one, served as one
#: app; and a DeepSeek-R1 run, whose pages name multi-head latent attention and experts,
#: on its own, as its two data-parallel ranks are an app of their own.
FAKE_TIER_SERVED_RUNS: dict[str, str] = {
    "dense": "Qwen3-32B-W8A8-single-a2",
    "moe": "Qwen3-30B-A3B-W8A8-TP1",
    "mla-moe": "DeepSeek-R1-0528-W8A8-single",
}
