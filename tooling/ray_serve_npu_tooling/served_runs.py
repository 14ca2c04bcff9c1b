"""The runs of vLLM-Ascend's nightly CI that the fake-NPU tier serves with serve_model.py.

``tests/fake_tier/test_fake_npu_serve_model.py`` serves the Ray Serve LLM ones together,
as one app of ``serve_model.py RUN RUN``, and dry-runs the Compose file that
``serve_model.py --compose RUN`` writes for the Compose one; the models page marks each
as served there.
"""

from __future__ import annotations

#: By the names ``serve_model.py`` takes (``ray_serve_npu.model_recipes.run_key``), by the
#: architecture class whose tiny model serves it
#: (``ray_serve_npu.fake_npu.tiny_model.STAND_IN_SPECS``): the CI's smallest dense run,
#: on four A3 NPUs, and its smallest MoE run, on one, as the models page serves them on
#: an A3 node.
FAKE_TIER_SERVED_RUNS: dict[str, str] = {
    "dense": "Qwen3-32B-W8A8-single-a3",
    "moe": "Qwen3-30B-A3B-W8A8-TP1",
}
#: The run whose Compose file the tier dry-runs, by its class: the class with latent
#: attention, whose one family's runs (DeepSeek-R1) are data parallel, an app of their own
#: that can't join the one above. Its Compose file's dry-run took 59 s in the dry-run of
#: every model (``ray_serve_npu_tooling.model_dry_runs``), against 103 s there for its
#: Ray Serve LLM app, which the fake-NPU tier's budget has no room for.
FAKE_TIER_COMPOSE_RUN: tuple[str, str] = ("mla-moe", "DeepSeek-R1-0528-W8A8-single")


def fake_tier_served() -> dict[str, str]:
    """Each run the fake-NPU tier serves, by name, with the path it serves it on:
    ``ray-serve-llm`` or ``compose``."""
    return {
        **dict.fromkeys(FAKE_TIER_SERVED_RUNS.values(), "ray-serve-llm"),
        FAKE_TIER_COMPOSE_RUN[1]: "compose",
    }
