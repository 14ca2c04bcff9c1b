"""Patches ``ray.llm._internal.serve.core.ingress.ingress``: the OpenAI ingress, for every kind.

Why: Ray's OpenAI ingress has no API key (ray-project/ray#59578 and #55369 ask for
one); its 404 for an unknown model names only the model asked for; a request whose
replica fails gets a 500 with the exception's text, which names nodes, processes and
actors; and a stream cut by a failure ends with neither ``data: [DONE]`` nor a
``finish_reason``, which OpenAI clients take for a complete answer. The key and the
failure answers live in :mod:`ray_serve_npu.ingress` and :mod:`ray_serve_npu.streams`.
Upstream: none yet.
Goes: when Ray Serve LLM's ingress requires a key and ends failed requests and streams
in errors of its own; these patches apply on a Ray with its own npu kind too.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from ray_serve_npu import ingress, streams


def name_served_models_in_404(module: ModuleType) -> None:
    """Name the served models in the 404 for an unknown model.

    The commonest mistake on these recipes is a client ``model`` that differs from
    the served ``model_id``, and the fix is one of the served names.
    """
    ingress_cls = module.OpenAiIngress
    ray_get_model_id = ingress_cls._get_model_id
    http_exception = module.HTTPException

    @functools.wraps(ray_get_model_id)
    async def _get_model_id(self: Any, model: str | None) -> str:
        try:
            return await ray_get_model_id(self, model)
        except http_exception as error:
            if error.status_code != 404:
                raise
            served = sorted(self._model_cards)
            raise http_exception(
                404,
                f'{error.detail} Served models: {served}. Fix: set "model" to one of them '
                "(the model_id in model_loading_config).",
            ) from None

    ingress_cls._get_model_id = _get_model_id


def require_api_key(module: ModuleType) -> None:
    """Require the API key on the app the ingress builds, where one is set."""
    # `make_fastapi_ingress` looks `init` up in the module at call time.
    ray_init = module.init

    @functools.wraps(ray_init)
    def init() -> Any:
        app = ray_init()
        ingress.require_api_key(app)
        return app

    module.init = init


def answer_failures_before_streaming(module: ModuleType) -> None:
    """Answer a request that fails before its first chunk with a stable 503 or 500."""
    ingress_cls = module.OpenAiIngress
    ingress_cls._process_llm_request = streams.answering_failures(ingress_cls._process_llm_request)


def end_streams_in_errors(module: ModuleType) -> None:
    """End a stream whose replica or engine fails in an error event."""
    # `_process_llm_request` looks the name up in the module at call time.
    module._openai_json_wrapper = streams.ending_streams_in_errors(module._openai_json_wrapper)
