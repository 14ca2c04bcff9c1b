"""No Serve setting of a recipe admits fewer requests than its engine batches.

Ray Serve queues what a replica's ``max_ongoing_requests`` does not admit; below
the engine's ``max_num_seqs`` that would leave NPU batch slots empty under load.
Ray Serve LLM's own default for its deployments is 1e9
(``ray/llm/_internal/serve/constants.py``, DEFAULT_MAX_ONGOING_REQUESTS, at each
tested Ray); this keeps a recipe from setting less.
"""

from __future__ import annotations

import pytest
from ray.serve._private.build_app import build_app
from ray.serve.llm import build_openai_app
from recipe_modules import load_recipe

RECIPES = ("serve_npu", "serve_multi_node", "serve_span_nodes")


@pytest.mark.parametrize("name", RECIPES)
def test_every_deployment_admits_what_the_engine_batches(
    name: str, two_node_cluster: object
) -> None:
    llm_config = load_recipe(name).llm_config
    max_num_seqs = llm_config.engine_kwargs.get("max_num_seqs")
    assert max_num_seqs, f"{name}: the recipe sets no max_num_seqs for its engine"
    # Ray's own builder: the plugin's adds only a placement check.
    built = build_app(build_openai_app({"llm_configs": [llm_config]}), name=name)
    admitted = {d.name: d._deployment_config.max_ongoing_requests for d in built.deployments}
    assert len(admitted) == 2, admitted  # the LLM server and the OpenAI ingress
    capped = {deployment: n for deployment, n in admitted.items() if n < max_num_seqs}
    assert not capped, f"{name}: max_ongoing_requests {capped} < max_num_seqs {max_num_seqs}"
