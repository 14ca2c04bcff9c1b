"""The sweep tool's tests: ``recipes/bench`` is imported as the package ``bench``.

The live tests share one direct-vLLM server with the tiny model (about 30 s to
start on two cores), on a free port that is not the pages' 8000.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

RECIPES = Path(__file__).parents[2] / "recipes"
sys.path.insert(0, str(RECIPES))

from ray_serve_npu_tooling.bench.paths import direct_vllm, recipe_fields  # noqa: E402

from ray_serve_npu.fake_npu.tiny_model import tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def direct_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """recipes/serve_npu.py's engine settings (fake tier) behind vLLM's own OpenAI server."""
    workdir = tmp_path_factory.mktemp("direct")
    with direct_vllm(recipe_fields(tiny_model_dir), tiny_model_dir, workdir) as base_url:
        yield base_url
