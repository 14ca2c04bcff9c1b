"""Application builders with the npu kind active, for Python and for Serve config files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray_serve_npu.placement import check_placement

if TYPE_CHECKING:
    from ray.serve.deployment import Application
    from ray.serve.llm import LLMServingArgs

#: Set by ``ray-serve-npu dry-run`` and the fake-NPU tier to a tiny model's
#: directory: the builder then serves each config's fake-tier variant
#: (:mod:`ray_serve_npu.testing.adapter`) and logs every change.
DRY_RUN_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MODEL"


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


def _fake_tier_variant(serving_args: LLMServingArgs, model_dir: Path) -> LLMServingArgs:
    """Each config's fake-tier variant, every change logged."""
    from ray.serve.llm import LLMServingArgs

    from ray_serve_npu.testing.adapter import adapt_llm_config, log_changes

    adapted = []
    for config in serving_args.llm_configs:
        fields, changes = adapt_llm_config(config, model_dir)
        log_changes(changes)
        adapted.append(fields)
    configs = LLMServingArgs.model_validate({"llm_configs": adapted}).llm_configs
    return serving_args.model_copy(update={"llm_configs": configs})
