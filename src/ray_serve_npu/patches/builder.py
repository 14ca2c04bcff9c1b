"""Patches ``ray.llm._internal.serve.core.ingress.builder``: direct streaming's protections.

Why: with ``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1`` the engine's replica serves
vLLM's own OpenAI app in place of the ingress that carries the key and ends failed
streams in stable error events, so the endpoint would answer without the key and
with vLLM's own errors; and the ingress request router that Ray Serve LLM adds
answers anyone who reaches its port.
Upstream: none yet.
Goes: when Ray Serve LLM's direct streaming requires a key of its own and ends a failed
stream in an error event that names no internals.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from ray_serve_npu import ingress

#: Ray's builders that import the direct-streaming and request-router builders by name
#: from the core builder module (the same at 2.56.1, 2.57.1, 2.58.1 and 2.60.0).
DIRECT_STREAMING_IMPORTERS = (
    "ray.llm._internal.serve.serving_patterns.data_parallel.builder",
    "ray.llm._internal.serve.serving_patterns.prefill_decode.builder",
)


def protect_direct_streaming(module: ModuleType) -> None:
    """Give the app a direct-streaming server builds the plugin's stream error events,
    and the API key where one is set."""
    ray_build = module._build_direct_streaming_llm_deployment

    @functools.wraps(ray_build)
    def _build_direct_streaming_llm_deployment(llm_config: Any, **kwargs: Any) -> Any:
        # Ray's own choice of server class, protected.
        server_cls = kwargs.get("deployment_cls") or llm_config.server_cls or module.LLMServer
        digest = ingress.key_digest_from_env()
        kwargs["deployment_cls"] = ingress.protected_server_class(server_cls, digest)
        return ray_build(llm_config, **kwargs)

    _replace(
        module, "_build_direct_streaming_llm_deployment", _build_direct_streaming_llm_deployment
    )


def require_api_key_on_the_request_router(module: ModuleType) -> None:
    """Require the API key on the ingress request router's app, where one is set."""
    ray_build = module._build_openai_ingress_request_router

    @functools.wraps(ray_build)
    def _build_openai_ingress_request_router(**kwargs: Any) -> Any:
        digest = ingress.key_digest_from_env()
        if digest is None:
            return ray_build(**kwargs)
        # Ray's builder imports the router class by name when it runs: it finds the
        # keyed one for as long as it runs.
        from ray.llm._internal.serve.core.ingress import router

        ray_router = router.LLMRouter
        router.LLMRouter = ingress.keyed_router_class(ray_router, digest)
        try:
            return ray_build(**kwargs)
        finally:
            router.LLMRouter = ray_router

    _replace(module, "_build_openai_ingress_request_router", _build_openai_ingress_request_router)


def _replace(module: ModuleType, name: str, keyed: Any) -> None:
    """Put ``keyed`` in place of ``module``'s ``name``, and of the copies its importers hold.

    Through the import hook, this runs before those builders are executed and they
    import the keyed builder; after a late activate(), rebind the ones loaded.
    """
    ray_build = getattr(module, name)
    setattr(module, name, keyed)
    for importer_name in DIRECT_STREAMING_IMPORTERS:
        importer = sys.modules.get(importer_name)
        if getattr(importer, name, None) is ray_build:
            setattr(importer, name, keyed)
