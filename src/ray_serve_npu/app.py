"""Application builders with the npu kind active, for Python and for Serve config files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ray_serve_npu.placement import check_placement

if TYPE_CHECKING:
    from ray.serve.deployment import Application
    from ray.serve.llm import LLMConfig


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
    app = ray_build_dp_openai_app(serving_args)
    # Ray's builder validated the config in place of a dict or a YAML path.
    llm_config: LLMConfig = serving_args.llm_config  # type: ignore[assignment]
    check_placement([llm_config])
    return app
