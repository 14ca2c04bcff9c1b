"""The fake-NPU tier adapts a recipe however it builds its app (no cluster, no engine).

``ray-serve-npu dry-run`` and the docs tests start their processes with
``RAY_SERVE_NPU_DRY_RUN_MODEL`` set; the plugin then applies its fake-tier patch, which
turns each ``LLMConfig`` into its fake-tier variant where every builder passes it:
``LLMServer.get_deployment_options``. Here, where the plugin activated before, the
variable is set and the plugin activated again, which applies the patch it lacks. Here each way of
building an app that Ray's docs or ours show is built with that variable set,
and the deployment Serve would place must hold the tiny model on one NPU per
engine. Serving such an app is tested in tests/fake_tier/test_fake_npu_dry_run_ray_builder.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ray import serve
from ray.serve.deployment import Application
from ray.serve.llm import LLMConfig, LLMServer
from ray.serve.llm import build_dp_openai_app as ray_build_dp_openai_app
from ray.serve.llm import build_openai_app as ray_build_openai_app

import ray_serve_npu
from ray_serve_npu.envs import DRY_RUN_MODEL_ENV_VAR, DRY_RUN_STAND_INS_ENV_VAR

TINY = Path("/tmp/rsn-seam/tiny-llama")
TINY_MOE = Path("/tmp/rsn-seam/tiny-mixtral")
REAL = "/models/DeepSeek-V4-Flash-w8a8-mtp"


def _turn_on_fake_tier(monkeypatch: pytest.MonkeyPatch, model: str = str(TINY)) -> None:
    monkeypatch.setenv(DRY_RUN_MODEL_ENV_VAR, model)
    monkeypatch.setenv(DRY_RUN_STAND_INS_ENV_VAR, json.dumps({"moe": str(TINY_MOE)}))
    ray_serve_npu.activate()


def _production(data_parallel_size: int = 1) -> LLMConfig:
    return LLMConfig(
        model_loading_config={"model_id": "deepseek-v4-flash", "model_source": REAL},
        accelerator_config={"kind": "npu"},
        deployment_config={"num_replicas": 1},
        engine_kwargs={
            "tensor_parallel_size": 4 if data_parallel_size > 1 else 8,
            "data_parallel_size": data_parallel_size,
            "quantization": "ascend",
            "max_model_len": 133120,
        },
    )


def _llm_deployments(app: Application) -> Iterator[Any]:
    """The bound deployments of an app that hold an ``llm_config``."""
    bound = app._bound_deployment
    arguments = [*bound.init_args, *bound.init_kwargs.values()]
    if "llm_config" in bound.init_kwargs or any(isinstance(a, LLMConfig) for a in arguments):
        yield bound
    for argument in arguments:
        for value in argument.values() if isinstance(argument, dict) else [argument]:
            if isinstance(value, Application):
                yield from _llm_deployments(value)


def _bound_config(deployment: Any) -> LLMConfig:
    config = deployment.init_kwargs.get("llm_config")
    return config or next(a for a in deployment.init_args if isinstance(a, LLMConfig))


def _rays_own_deployment(config: LLMConfig) -> Application:
    # As Ray's docs deploy an LLMServer of their own (ray/serve/llm/deployment.py).
    options = LLMServer.get_deployment_options(config)
    return serve.deployment(LLMServer).options(**options).bind(config)


BUILDERS: dict[str, tuple[Callable[[LLMConfig], Application], int]] = {
    "ray.serve.llm.build_openai_app": (
        lambda config: ray_build_openai_app({"llm_configs": [config]}),
        1,
    ),
    "ray_serve_npu.build_openai_app": (
        lambda config: ray_serve_npu.build_openai_app({"llm_configs": [config]}),
        1,
    ),
    "an LLMServer deployment, as Ray's docs write it": (_rays_own_deployment, 1),
    "ray.serve.llm.build_dp_openai_app": (
        lambda config: ray_build_dp_openai_app({"llm_config": config}),
        4,
    ),
    "ray_serve_npu.build_dp_openai_app": (
        lambda config: ray_serve_npu.build_dp_openai_app({"llm_config": config}),
        4,
    ),
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_the_fake_tier_serves_the_tiny_model_however_the_app_is_built(
    builder: str, no_ray: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _turn_on_fake_tier(monkeypatch)
    build, ranks = BUILDERS[builder]
    app = build(_production(data_parallel_size=ranks))
    (deployment,) = _llm_deployments(app)
    config = _bound_config(deployment)
    assert config.model_loading_config.model_source == str(TINY_MOE if ranks > 1 else TINY)
    assert config.engine_kwargs["tensor_parallel_size"] == 1
    assert "quantization" not in config.engine_kwargs
    assert config.model_id == "deepseek-v4-flash"
    # One engine worker per replica (each data-parallel rank is a replica): one NPU.
    bundles = deployment._replica_config.placement_group_bundles
    assert sum(bundle.get("NPU", 0) for bundle in bundles) == 1, bundles


def test_without_the_fake_tier_a_config_is_served_as_written(no_ray: None) -> None:
    config = _production()
    (deployment,) = _llm_deployments(_rays_own_deployment(config))
    assert _bound_config(deployment).model_loading_config.model_source == REAL
    bundles = deployment._replica_config.placement_group_bundles
    assert sum(bundle.get("NPU", 0) for bundle in bundles) == 8, bundles


def test_a_config_deployed_twice_is_adapted_once(
    no_ray: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _turn_on_fake_tier(monkeypatch)
    config = _production()
    LLMServer.get_deployment_options(config)
    caplog.clear()
    options = LLMServer.get_deployment_options(config)
    assert not [r for r in caplog.records if "fake-npu tier" in r.getMessage()]
    assert sum(b.get("NPU", 0) for b in options["placement_group_bundles"]) == 1


def test_a_config_that_loads_from_a_bucket_gets_the_tiny_model_too(
    no_ray: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _turn_on_fake_tier(monkeypatch, str(TINY) + "/")
    config = LLMConfig(
        model_loading_config={
            "model_id": "deepseek-v4-flash",
            "model_source": {"bucket_uri": "s3://weights/DeepSeek-V4-Flash-w8a8-mtp"},
        },
        accelerator_config={"kind": "npu"},
        engine_kwargs={"tensor_parallel_size": 8},
    )
    LLMServer.get_deployment_options(config)
    assert config.model_loading_config.model_source == str(TINY)
    # Adapted once: the tiny model's path, written with a trailing slash, is the same path.
    before = config.model_dump()
    LLMServer.get_deployment_options(config)
    assert config.model_dump() == before
