"""Application builders with the npu kind active, for Python and for Serve config files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray_serve_npu.placement import check_placement

if TYPE_CHECKING:
    from ray.serve.deployment import Application
    from ray.serve.llm import LLMConfig, LLMServingArgs

#: Set by ``ray-serve-npu dry-run`` and the fake-NPU tier to a tiny model's
#: directory: the builder then serves each config's fake-tier variant
#: (:mod:`ray_serve_npu.fake_npu.adapter`) and logs every change.
DRY_RUN_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MODEL"
#: Set beside :data:`DRY_RUN_MODEL_ENV_VAR` to a tiny mixture-of-experts model's
#: directory, which the fake tier serves for data-parallel configs (vLLM refuses
#: data parallel for a dense model).
DRY_RUN_MOE_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MOE_MODEL"


def build_openai_app(llm_serving_args: dict[str, Any] | Any) -> Application:
    """Build Ray Serve LLM's OpenAI-compatible app; same arguments as Ray's.

    Use it as ``import_path: ray_serve_npu:build_openai_app`` in a Serve config
    (``serve run``, ``serve deploy``, KubeRay), so that the process that reads
    the config has the npu kind before it validates ``accelerator_config``.

    Args:
        llm_serving_args: What :func:`ray.serve.llm.build_openai_app` takes: a dict
            ``{"llm_configs": [...]}`` (configs as dicts, ``LLMConfig`` objects or
            YAML paths) or ``LLMServingArgs``.
    """
    # Imported here: ray.serve.llm imports vLLM, which the package import must not.
    from ray.serve.llm import LLMServingArgs
    from ray.serve.llm import build_openai_app as ray_build_openai_app

    serving_args = LLMServingArgs.model_validate(llm_serving_args)
    dry_run_model = os.environ.get(DRY_RUN_MODEL_ENV_VAR)
    if dry_run_model:
        serving_args = _fake_tier_variant(serving_args, Path(dry_run_model))
    # Ray's builder connects to the cluster (it reads the runtime context), so the
    # nodes are known after it. Serve would wait forever for a placement group no
    # node can hold: fail here instead.
    app = ray_build_openai_app(serving_args)
    check_placement(serving_args.llm_configs)
    return app


def build_dp_openai_app(builder_config: dict[str, Any]) -> Application:
    """Build Ray Serve LLM's data-parallel OpenAI app; same arguments as Ray's.

    Ray's ``build_dp_openai_app`` (``ray/llm/_internal/serve/serving_patterns/
    data_parallel/builder.py``) deploys ``DPServer`` in gangs of
    ``engine_kwargs["data_parallel_size"]`` replicas: ``num_replicas`` counts gangs,
    and Serve multiplies it by the DP size (``dp_server.py``). For each gang, Serve
    reserves one placement group for all its bundles (strategy ``PACK``), rank ``i``
    takes the ``i``-th slice of it, and a rank that fails restarts the whole gang.
    With the npu kind each slice is one ``{"NPU": 1}`` bundle per engine worker, so
    each rank's engine sees its own NPUs. Like :func:`build_openai_app`, it fails at
    build time where no set of nodes can hold the gang.

    Args:
        builder_config: What Ray's builder takes: ``{"llm_config": ...}`` (an
            ``LLMConfig``, its dict or a YAML path), optionally with
            ``ingress_cls_config`` and ``ingress_deployment_config``.
    """
    from ray.llm._internal.serve.serving_patterns.data_parallel.builder import (
        DPOpenAiServingArgs,
    )
    from ray.llm._internal.serve.serving_patterns.data_parallel.builder import (
        build_dp_openai_app as ray_build_dp_openai_app,
    )

    serving_args = DPOpenAiServingArgs.model_validate(builder_config)
    llm_config: LLMConfig = serving_args.llm_config  # type: ignore[assignment]
    dry_run_model = os.environ.get(DRY_RUN_MODEL_ENV_VAR)
    if dry_run_model:
        from ray.serve.llm import LLMServingArgs

        (llm_config,) = _fake_tier_variant(
            LLMServingArgs(llm_configs=[llm_config]), Path(dry_run_model)
        ).llm_configs
        serving_args = serving_args.model_copy(update={"llm_config": llm_config})
    builder = {name: getattr(serving_args, name) for name in serving_args.model_fields_set}
    app = ray_build_dp_openai_app({**builder, "llm_config": llm_config})
    check_placement([llm_config])
    return app


def _fake_tier_variant(serving_args: LLMServingArgs, model_dir: Path) -> LLMServingArgs:
    """Each config's fake-tier variant, every change logged."""
    from ray.serve.llm import LLMServingArgs

    from ray_serve_npu.fake_npu.adapter import adapt_llm_config, log_changes

    adapted = []
    moe_model = os.environ.get(DRY_RUN_MOE_MODEL_ENV_VAR)
    for config in serving_args.llm_configs:
        fields, changes = adapt_llm_config(
            config, model_dir, moe_model_dir=Path(moe_model) if moe_model else None
        )
        log_changes(changes)
        adapted.append(fields)
    configs = LLMServingArgs.model_validate({"llm_configs": adapted}).llm_configs
    return serving_args.model_copy(update={"llm_configs": configs})
