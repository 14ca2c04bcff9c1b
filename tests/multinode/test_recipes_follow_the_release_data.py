"""The Ray recipes carry the release data's tutorial run for their node kind.

recipes/serve_npu.py (A2) and recipes/serve_npu_a3.py (A3) spell their engine
settings out, as a reader expects of a runnable file; the release data
(src/ray_serve_npu/releases/<tag>.yaml) owns the values. These tests hold the two
together, so a value changed in one place and not the other fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from recipe_modules import load_recipe

from ray_serve_npu.releases import SERVE_LLM_RELEASE

RECIPES = {"A2": "serve_npu", "A3": "serve_npu_a3"}

#: Flags of the tutorial's `vllm serve` line with no engine setting behind them in
#: Ray Serve LLM: the served name is the LLMConfig's model_id, Serve owns the port,
#: and the OpenAI ingress is the API server.
NO_ENGINE_SETTING = {"served-model-name", "port", "api-server-count"}
#: Tutorial flags the recipes leave out where a release's tutorial has them (v0.23.0 and
#: earlier): beside enable_multithread_load the strategy does nothing, and vLLM 0.25.1
#: refuses the pair (rule load-strategy-with-multithread-load).
LEFT_OUT = {"safetensors-load-strategy"}
#: What the recipes set differently from the tutorial, on purpose; each recipe's
#: comments say why. Nothing at v0.25.1rc1, whose tutorial writes the loader's
#: settings as the recipes do.
OURS: dict[str, Any] = {}
OURS_BY_KIND: dict[str, dict[str, Any]] = {
    "A2": {},
    # Prefix caching on explicitly: vLLM's default in the tutorial's A3 run, and the
    # nightly A3 case's first flag.
    "A3": {"enable_prefix_caching": True},
}
#: FlashComm1 through additional_config instead of its deprecated variable.
OURS_ADDITIONAL = {"enable_flashcomm1": True}
FLASHCOMM1_ENV_VAR = "VLLM_ASCEND_ENABLE_FLASHCOMM1"


def _engine_kwargs(args: dict[str, Any]) -> dict[str, Any]:
    """The tutorial's flags as Ray Serve LLM's engine_kwargs name them."""
    kwargs = {}
    for flag, value in args.items():
        if flag in NO_ENGINE_SETTING or flag in LEFT_OUT:
            continue
        if flag.startswith("no-"):
            kwargs[flag.removeprefix("no-").replace("-", "_")] = not value
        else:
            kwargs[flag.replace("-", "_")] = value
    return kwargs


@pytest.mark.parametrize("kind", sorted(RECIPES))
def test_the_recipe_runs_the_tutorials_engine_settings(kind: str) -> None:
    run = SERVE_LLM_RELEASE.run(kind)
    engine_kwargs = dict(load_recipe(RECIPES[kind]).llm_config.engine_kwargs)
    additional = engine_kwargs.pop("additional_config")
    expected = {**_engine_kwargs(run.args), **OURS, **OURS_BY_KIND[kind]}
    # The default, one rank, needs no setting.
    if expected.get("data_parallel_size") == 1 and "data_parallel_size" not in engine_kwargs:
        del expected["data_parallel_size"]
    assert engine_kwargs == expected
    assert additional == {**run.additional_config, **OURS_ADDITIONAL}


@pytest.mark.parametrize("kind", sorted(RECIPES))
def test_the_recipe_sets_the_tutorials_environment(kind: str) -> None:
    run = SERVE_LLM_RELEASE.run(kind)
    env_vars = dict(load_recipe(RECIPES[kind]).llm_config.runtime_env["env_vars"])
    expected = dict(run.env)
    # Replaced by additional_config's enable_flashcomm1.
    assert expected.pop(FLASHCOMM1_ENV_VAR) == "1"
    # A runtime_env sets the variable; there is no earlier value to append to.
    expected["LD_PRELOAD"] = expected["LD_PRELOAD"].removesuffix(":$LD_PRELOAD")
    assert env_vars == expected
