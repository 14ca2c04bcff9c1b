"""A mock LLM engine for tests where the engine is not what is tested.

Select it for a deployment with ``runtime_env={"env_vars": {"RAYLLM_VLLM_ENGINE_CLS":
"ray_serve_npu.testing.mock_engine.MockEngine"}}``: Ray Serve LLM's ``LLMServer``
then builds this class instead of vLLM's engine (``LLMServer._get_default_engine_class``).
Serve still computes the deployment's options and creates, places and uses its
placement group exactly as for a real engine; the mock only starts instantly
and serves no requests.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, NoReturn

from ray.llm._internal.serve.core.engine.protocol import LLMEngine


class MockEngine(LLMEngine):
    """Starts at once and is healthy; every request method raises."""

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
            f"MockEngine serves no {what} requests: it exists to test placement. "
            "Use the fake-NPU tier's real engine (vLLM's CPU build) to serve requests."
        )

    async def resolve_lora(self, lora_model: Any) -> NoReturn:
        self._refuse("LoRA")

    async def chat(self, request: Any, raw_request_info: Any = None) -> AsyncGenerator[Any, None]:
        self._refuse("chat")
        yield  # pragma: no cover - makes this an async generator, as the protocol wants

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
