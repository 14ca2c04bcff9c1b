"""Patches ``ray.llm._internal.serve.core.ingress.builder``: the API key with direct streaming.

Why: with ``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1`` the engine's replica serves
vLLM's own OpenAI app in place of the ingress that carries the key, so the endpoint
would answer without it.
Upstream: none yet.
Goes: when Ray Serve LLM's direct streaming requires a key of its own.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from ray_serve_npu import ingress

#: Ray's builders that import the direct-streaming builder by name from the core
#: builder module (the same at 2.56.1, 2.57.1 and 2.60.0).
DIRECT_STREAMING_IMPORTERS = (
    "ray.llm._internal.serve.serving_patterns.data_parallel.builder",
    "ray.llm._internal.serve.serving_patterns.prefill_decode.builder",
)


def require_api_key_with_direct_streaming(module: ModuleType) -> None:
    """Require the API key on the app a direct-streaming server builds, where one is set."""
    ray_build = module._build_direct_streaming_llm_deployment

    @functools.wraps(ray_build)
    def _build_direct_streaming_llm_deployment(llm_config: Any, **kwargs: Any) -> Any:
        digest = ingress.key_digest_from_env()
        if digest is not None:
            # Ray's own choice of server class, keyed.
            server_cls = kwargs.get("deployment_cls") or llm_config.server_cls or module.LLMServer
            kwargs["deployment_cls"] = ingress.keyed_server_class(server_cls, digest)
        return ray_build(llm_config, **kwargs)

    module._build_direct_streaming_llm_deployment = _build_direct_streaming_llm_deployment
    # Through the import hook, this runs before those builders are executed and they
    # import the keyed builder; after a late activate(), rebind the ones loaded.
    for name in DIRECT_STREAMING_IMPORTERS:
        importer = sys.modules.get(name)
        if getattr(importer, "_build_direct_streaming_llm_deployment", None) is ray_build:
            importer._build_direct_streaming_llm_deployment = _build_direct_streaming_llm_deployment
