"""A mock LLM engine for tests where the engine is not what is tested.

Select it for a deployment with ``runtime_env={"env_vars": {"RAYLLM_VLLM_ENGINE_CLS":
"ray_serve_npu_tooling.mock_engine.MockEngine"}}``: Ray Serve LLM's ``LLMServer``
then builds this class instead of vLLM's engine (``LLMServer._get_default_engine_class``).
Serve still computes the deployment's options and creates, places and uses its
placement group exactly as for a real engine; the mock starts instantly and
answers chat requests (not streamed) with a fixed text after holding each one for
``RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S`` seconds (default 0), so that tests can keep
requests in flight, as Serve's autoscaling needs to see load. It serves nothing else.
With ``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1`` it serves the same answers from an
app of its own (:meth:`MockEngine.build_asgi_app`), in place of vLLM's.

:class:`StreamingMockEngine` also streams chat answers, computing nothing, so that a
load test measures the request path in front of the engine (``nox -s bench``).

:class:`PlacementProbeEngine` is the same mock for data-parallel placement tests:
at start it records, for the test process to read, the NPUs Ray gives its rank.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any, NoReturn

import ray
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from ray import serve
from ray.experimental.internal_kv import _internal_kv_put
from ray.llm._internal.serve.core.configs.openai_api_models import (
    ChatCompletionRequest,
    ChatCompletionResponse,
)
from ray.llm._internal.serve.core.engine.protocol import LLMEngine
from ray.util.placement_group import get_current_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ray_serve_npu.hardware import NPU_RESOURCE
from ray_serve_npu_tooling.device_probe import device_probe

#: Seconds the mock holds each chat request before it answers.
HOLD_ENV_VAR = "RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S"
#: The text of every mock answer.
MOCK_ANSWER = "mock answer"
#: The text of each token :class:`StreamingMockEngine` streams.
MOCK_TOKEN = " mock"
#: How many tokens it streams for a request that sets no limit.
STREAMED_TOKENS = 16
#: The variable in which Ray Serve LLM's ``DPServer`` hands its rank's bundle
#: indices to vLLM's Ray executor (``dp_server.py``).
BUNDLE_INDICES_ENV_VAR = "VLLM_RAY_BUNDLE_INDICES"
#: Prefix of the GCS key under which each :class:`PlacementProbeEngine` leaves its record.
PROBE_KEY_PREFIX = "ray_serve_npu:placement_probe/"
#: Seconds one probe task may take to be placed and to answer: under xdist the other
#: worker may be starting the A3 run's four engines on the same two cores.
PROBE_TIMEOUT_S = 600.0


class MockEngine(LLMEngine):
    """Starts at once and is healthy; answers chat requests with :data:`MOCK_ANSWER`.

    Every other request method, and a streamed chat request, raises.
    """

    def __init__(self, llm_config: Any) -> None:
        self.llm_config = llm_config

    async def start(self) -> None:
        return None

    def routing_stats(self) -> dict[str, Any]:
        return {}

    async def check_health(self) -> None:
        return None

    async def reset_prefix_cache(self) -> None:
        return None

    async def build_asgi_app(self) -> FastAPI:
        """The app a direct-streaming replica serves, in place of vLLM's OpenAI app:
        ``GET /v1/models`` and ``POST /v1/chat/completions``, answered by :meth:`chat`.

        Its middleware stack is built at once, as vLLM's ``build_app`` builds it, so
        that a middleware added later meets what it meets on vLLM's app.
        """
        app = FastAPI()
        model_id = self.llm_config.model_id

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": model_id, "object": "model"}]}

        @app.post("/v1/chat/completions", response_model=None)
        async def chat(raw: Request) -> JSONResponse | StreamingResponse:
            request = ChatCompletionRequest.model_validate(await raw.json())
            answers = self.chat(request)
            if request.stream:
                return StreamingResponse(answers, media_type="text/event-stream")
            return JSONResponse((await anext(answers)).model_dump(mode="json"))

        app.middleware_stack = app.build_middleware_stack()
        return app

    def _refuse(self, what: str) -> NoReturn:
        raise NotImplementedError(
            f"MockEngine serves no {what} requests: it exists to test placement and scaling. "
            "Use the fake-NPU tier's real engine (vLLM's CPU build) to serve requests."
        )

    async def resolve_lora(self, lora_model: Any) -> NoReturn:
        self._refuse("LoRA")

    async def chat(
        self, request: Any, raw_request_info: Any = None
    ) -> AsyncGenerator[ChatCompletionResponse, None]:
        """Hold the request for ``RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S`` s, then answer it."""
        if request.stream:
            self._refuse("streamed chat")
        await asyncio.sleep(float(os.environ.get(HOLD_ENV_VAR, "0")))
        yield ChatCompletionResponse.model_validate(
            {
                "model": request.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": MOCK_ANSWER},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        )

    async def completions(
        self, request: Any, raw_request_info: Any = None
    ) -> AsyncGenerator[Any, None]:
        self._refuse("completion")
        yield  # pragma: no cover

    async def embeddings(
        self, request: Any, raw_request_info: Any = None
    ) -> AsyncGenerator[Any, None]:
        self._refuse("embedding")
        yield  # pragma: no cover

    async def transcriptions(
        self, request: Any, raw_request_info: Any = None
    ) -> AsyncGenerator[Any, None]:
        self._refuse("transcription")
        yield  # pragma: no cover


class StreamingMockEngine(MockEngine):
    """:class:`MockEngine` that streams chat answers, computing nothing.

    A streamed chat request gets ``max_completion_tokens`` (or ``max_tokens``, or
    :data:`STREAMED_TOKENS`) chunks of :data:`MOCK_TOKEN`, then a usage chunk and
    ``[DONE]``, in the server-sent events vLLM's OpenAI server writes; between two
    chunks it only yields to the event loop. What a load test then measures is the
    request path in front of the engine: Serve's proxy, the ingress and the
    ``LLMServer`` replica. It holds no request (``RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S``
    is not read).
    """

    async def chat(self, request: Any, raw_request_info: Any = None) -> AsyncGenerator[Any, None]:
        if not request.stream:
            async for answer in super().chat(request, raw_request_info):
                yield answer
            return
        tokens = request.max_completion_tokens or request.max_tokens or STREAMED_TOKENS
        head = {"id": f"chatcmpl-mock-{uuid.uuid4().hex}", "object": "chat.completion.chunk"}
        head |= {"created": int(time.time()), "model": request.model}

        def event(choices: list[dict[str, Any]], **extra: Any) -> str:
            return f"data: {json.dumps({**head, 'choices': choices, **extra})}\n\n"

        yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}}])
        for index in range(tokens):
            finish = "length" if index == tokens - 1 else None
            delta = {"content": MOCK_TOKEN}
            yield event([{"index": 0, "delta": delta, "finish_reason": finish}])
            await asyncio.sleep(0)
        options = request.stream_options
        if options is not None and options.include_usage:
            usage = {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}
            yield event([], usage=usage)
        yield "data: [DONE]\n\n"


class PlacementProbeEngine(MockEngine):
    """:class:`MockEngine` that starts on its rank's bundles what vLLM's Ray executor would.

    ``DPServer`` names the rank's bundles of the gang's placement group in
    ``VLLM_RAY_BUNDLE_INDICES``; vLLM's Ray executor starts one worker on each,
    asking for one ``NPU`` and no CPU (vLLM-Ascend's ``ray_device_key``). The probe
    runs one such task per bundle, so Ray assigns the NPU ids and sets
    ``ASCEND_RT_VISIBLE_DEVICES`` as for the engine's workers, and stores what it
    saw, with the replica's DP and gang ranks, under
    ``PROBE_KEY_PREFIX + <replica id>`` in the cluster's GCS key-value store.
    A task that cannot be placed fails the start within :data:`PROBE_TIMEOUT_S`.
    """

    async def start(self) -> None:
        replica = serve.get_replica_context()
        gang = replica.gang_context
        indices_text = os.environ.get(BUNDLE_INDICES_ENV_VAR)
        placement_group = get_current_placement_group()
        if gang is None or not indices_text or placement_group is None:
            raise RuntimeError(
                "PlacementProbeEngine runs in a DPServer replica of a gang: found gang "
                f"context {gang!r}, {BUNDLE_INDICES_ENV_VAR}={indices_text!r}, "
                f"placement group {placement_group!r}."
            )
        indices = [int(index) for index in indices_text.split(",")]
        probe = ray.remote(num_cpus=0, resources={NPU_RESOURCE: 1})(device_probe)
        refs = [
            probe.options(
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=placement_group, placement_group_bundle_index=index
                )
            ).remote()
            for index in indices
        ]
        try:
            workers = await asyncio.wait_for(asyncio.gather(*refs), PROBE_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise RuntimeError(
                f"PlacementProbeEngine: no NPU worker answered on bundles {indices} of "
                f"placement group {placement_group.id.hex()} within {PROBE_TIMEOUT_S} s."
            ) from None
        record = {
            "replica_id": replica.replica_id.unique_id,
            "gang_id": gang.gang_id,
            "gang_rank": gang.rank,
            "data_parallel_rank": self.llm_config.engine_kwargs.get("data_parallel_rank"),
            "placement_group_id": placement_group.id.hex(),
            "bundle_indices": indices,
            "workers": workers,
        }
        _internal_kv_put(
            (PROBE_KEY_PREFIX + replica.replica_id.unique_id).encode(),
            json.dumps(record).encode(),
            overwrite=True,
        )
