"""Application builders with the npu kind active, for Python and for Serve config files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.serve.deployment import Application


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
    from ray.serve.llm import build_openai_app as ray_build_openai_app

    return ray_build_openai_app(llm_serving_args)
