"""Helpers shared by the plugin's tests."""

from __future__ import annotations

from typing import Any

from ray.serve.llm import LLMConfig


def make_llm_config(**overrides: Any) -> LLMConfig:
    """An LLMConfig with a model id and whatever the test sets."""
    return LLMConfig(model_loading_config={"model_id": "tiny"}, **overrides)
