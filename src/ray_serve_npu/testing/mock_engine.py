"""A mock LLM engine for tests where the engine is not what is tested.

Select it for a deployment with ``runtime_env={"env_vars": {"RAYLLM_VLLM_ENGINE_CLS":
"ray_serve_npu.testing.mock_engine.MockEngine"}}``: Ray Serve LLM's ``LLMServer``
then builds this class instead of vLLM's engine (``LLMServer._get_default_engine_class``).
Serve still computes the deployment's options and creates, places and uses its
placement group exactly as for a real engine; the mock starts instantly and
answers chat requests (not streamed) with a fixed text after holding each one for
``RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S`` seconds (default 0), so that tests can keep
requests in flight, as Serve's autoscaling needs to see load. It serves nothing else.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any, NoReturn

from ray.llm._internal.serve.core.configs.openai_api_models import ChatCompletionResponse
from ray.llm._internal.serve.core.engine.protocol import LLMEngine

#: Seconds the mock holds each chat request before it answers.
HOLD_ENV_VAR = "RAY_SERVE_NPU_MOCK_ENGINE_HOLD_S"
#: The text of every mock answer.
MOCK_ANSWER = "mock answer"


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
