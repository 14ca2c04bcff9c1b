"""The runs of vLLM-Ascend's nightly CI that the fake-NPU tier serves with serve_model.py.

``tests/fake_tier/test_fake_npu_serve_model.py`` dry-runs each one; the models page
marks each as served there and every other run as checked without an engine.
"""

from __future__ import annotations

#: By the names ``serve_model.py`` takes (``ray_serve_npu.model_recipes.run_key``): the
#: CI's smallest dense run, on four A2 NPUs.
FAKE_TIER_SERVED_RUNS: tuple[str, ...] = ("Qwen3-32B-W8A8-single-a2",)
