"""Patches ``ray.llm._internal.serve.core.server.llm_server``: LLMServer's deployment options.

Why: ``LLMServer.get_deployment_options`` merges ``"GPU": 0`` into the first bundle of
every deployment, which an NPU deployment must not mention (drop_zero_gpu); and it is
the one place every way of building an app passes its configs through, where the
fake-NPU tier swaps in its tiny model (adapt_for_fake_tier).
Upstream: ray-project/ray#63617 (open) for drop_zero_gpu, whose review flags the same
merge; none yet for adapt_for_fake_tier, which is the fake tier's own.
Goes: drop_zero_gpu once every supported Ray has an npu kind of its own (it steps aside
on a Ray that has one); adapt_for_fake_tier stays with the fake tier.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ray_serve_npu import accelerators as npu
from ray_serve_npu.envs import DRY_RUN_MODEL_ENV_VAR


def _without_zero_gpu(deployment_options: dict[str, Any], llm_config: Any) -> dict[str, Any]:
    """Drop the ``GPU`` key Ray writes into every replica bundle, for npu deployments.

    Ray merges ``{"CPU": 1, "GPU": 0, ...}`` for the replica actor into the first
    bundle (``LLMServer.get_deployment_options``); an NPU deployment must not
    mention GPUs at all.
    """
    accelerator_config = llm_config.get_engine_config().accelerator_config
    bundles = deployment_options.get("placement_group_bundles")
    if not isinstance(accelerator_config, npu.NPUConfig) or bundles is None:
        return deployment_options
    if any(bundle.get("GPU", 0) > 0 for bundle in bundles):
        raise npu.HardwareMismatchError(
            "Hardware mismatch: accelerator_config kind 'npu' but the replica asks for GPUs "
            "(deployment_config.ray_actor_options.num_gpus). Fix: remove num_gpus; the "
            "engine workers get their NPUs from the placement group."
        )
    deployment_options["placement_group_bundles"] = [
        {key: value for key, value in bundle.items() if key != "GPU"} for bundle in bundles
    ]
    return deployment_options


def drop_zero_gpu(module: ModuleType) -> None:
    server_cls = module.LLMServer
    ray_get_options: Callable[..., dict[str, Any]] = server_cls.get_deployment_options.__func__

    @functools.wraps(ray_get_options)
    def get_deployment_options(cls: type, llm_config: Any) -> dict[str, Any]:
        return _without_zero_gpu(ray_get_options(cls, llm_config), llm_config)

    server_cls.get_deployment_options = classmethod(get_deployment_options)


def adapt_for_fake_tier(module: ModuleType) -> None:
    server_cls = module.LLMServer
    ray_get_options: Callable[..., dict[str, Any]] = server_cls.get_deployment_options.__func__

    @functools.wraps(ray_get_options)
    def get_deployment_options(cls: type, llm_config: Any) -> dict[str, Any]:
        # Read per call as well: a process that leaves the tier serves configs as written.
        if os.environ.get(DRY_RUN_MODEL_ENV_VAR):
            # Imported here: the adapter reads vLLM's argument tables, which only a
            # deployment on the fake tier needs.
            from ray_serve_npu.fake_npu.adapter import adapt_deployed_config

            adapt_deployed_config(llm_config)
        return ray_get_options(cls, llm_config)

    server_cls.get_deployment_options = classmethod(get_deployment_options)
