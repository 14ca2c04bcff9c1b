"""Streams that end in an error event when the replica serving them fails.

Wired in by ``ray_serve_npu._patch``; it applies to every kind, not just npu.
When the replica streaming an answer dies, Ray's ingress ends the response
without a word: HTTP 200 was already sent, and the stream stops with neither
``data: [DONE]`` nor a ``finish_reason``. OpenAI clients take that for a
complete answer. The plugin ends such a stream with an error event, as vLLM
does when its engine dies, so that clients raise.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from ray_serve_npu.ingress import openai_error

logger = logging.getLogger(__name__)


def stream_error_event(error: BaseException) -> str:
    """The server-sent event that ends a stream whose replica failed."""
    message = (
        f"The replica serving this request failed mid-stream ({type(error).__name__}: "
        f"{error}). The answer is incomplete; Ray Serve restarts failed replicas. "
        "Fix: retry the request."
    )
    return f"data: {json.dumps(openai_error(message, 'ServiceUnavailableError', 503))}\n\n"


def ending_streams_in_errors(
    ray_wrapper: Callable[[AsyncIterator[Any]], AsyncIterator[str]],
) -> Callable[[AsyncIterator[Any]], AsyncIterator[str]]:
    """Wrap Ray's stream formatter so that a stream cut by an exception ends in an error event.

    ``ray_wrapper`` is ``_openai_json_wrapper``, which turns the replica's chunks
    into server-sent events and adds ``data: [DONE]``. An exception from the
    replica, such as ``ActorDiedError``, escapes it after HTTP 200; this wrapper
    sends :func:`stream_error_event` and ``data: [DONE]`` instead.
    A cancelled stream (the client left) is not an ``Exception`` and passes.
    """

    async def stream(generator: AsyncIterator[Any]) -> AsyncIterator[str]:
        try:
            async for packet in ray_wrapper(generator):
                yield packet
        except Exception as error:
            logger.warning("A stream ended early: %s: %s", type(error).__name__, error)
            yield stream_error_event(error)
            yield "data: [DONE]\n\n"

    stream.__wrapped__ = ray_wrapper  # type: ignore[attr-defined]
    return stream
