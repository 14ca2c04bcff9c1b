"""Streams that end in a stable error event when the replica or the engine serving them fails.

Wired in by ``ray_serve_npu.patches.ingress``, and with direct streaming by
``ray_serve_npu.patches.builder`` (:class:`StreamFaultMiddleware`); it applies to every
kind, not just npu.
When the replica streaming an answer dies, Ray's ingress ends the response
without a word: HTTP 200 was already sent, and the stream stops with neither
``data: [DONE]`` nor a ``finish_reason``. OpenAI clients take that for a
complete answer. The plugin ends such a stream with an error event, so that
clients raise, and tells the two faults apart:

- :data:`REPLICA_LOST`: the replica actor died or is unreachable (Ray's
  ``RayActorError``, whose subclasses are ``ActorDiedError`` and
  ``ActorUnavailableError``).
- :data:`ENGINE_FAILED`: any other exception, and the error event with a 5xx
  code that vLLM sends when its engine dies.

The event carries a fixed message and the request id, never the exception's
text (which names nodes, processes and actors). The server log has the full
exception beside the same request id. A request that fails before its first
chunk gets the fault as its HTTP response instead (503 or 500), where Ray's
ingress would answer 500 with the exception's text; Ray's own answers below 500
(400, 404, ...) pass unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ray.exceptions import RayActorError
from ray.serve import context as serve_context
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ray_serve_npu.openai_errors import openai_error

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamFault:
    """A kind of failure that cuts a stream, as the client learns of it."""

    #: The error object's ``type``; the OpenAI Python client's ``APIError.type``.
    error_type: str
    #: The error object's ``code`` (an HTTP status, as vLLM's error events carry).
    code: int
    #: The message, with ``{request_id}`` to fill in.
    message: str

    def error(self, request_id: str) -> dict[str, Any]:
        """The OpenAI error object for request ``request_id``."""
        return openai_error(self.message.format(request_id=request_id), self.error_type, self.code)

    def event(self, request_id: str) -> str:
        """The server-sent event that ends the stream of request ``request_id``."""
        return f"data: {json.dumps(self.error(request_id))}\n\n"


#: The replica actor died or is unreachable. Serve starts a new one, so a retry is served.
REPLICA_LOST = StreamFault(
    error_type="ServiceUnavailableError",
    code=503,
    message=(
        "The replica serving this request was lost before the answer was complete "
        "(request id {request_id}). Ray Serve starts a new replica. Fix: retry the request."
    ),
)
#: The engine failed, or something else broke the stream. The cause is in the server log.
ENGINE_FAILED = StreamFault(
    error_type="InternalServerError",
    code=500,
    message=(
        "The engine failed before the answer was complete (request id {request_id}). "
        "Ray Serve replaces a replica whose engine died. Fix: retry the request; if it "
        "fails again, look the request id up in the server's Ray logs for the cause."
    ),
)

_DONE = "data: [DONE]\n\n"


def request_id() -> str:
    """Serve's id of the request being handled, which Serve returns as ``X-Request-ID``.

    Outside a Serve request (no id in ``ray.serve.context``), a new random id.
    """
    return serve_context._get_serve_request_context().request_id or uuid.uuid4().hex


def fault_of(error: Exception) -> StreamFault:
    """Which fault an exception that cut a stream is."""
    return REPLICA_LOST if isinstance(error, RayActorError) else ENGINE_FAILED


def _server_error(packet: str) -> tuple[str, dict[str, Any]] | None:
    """Find the first error event with a 5xx code in ``packet`` (one or more events).

    Returns the events before it and its error object; None if there is none.
    """
    events = packet.split("\n\n")
    for index, event in enumerate(events):
        data = event.removeprefix("data: ")
        if not data.startswith("{") or '"error"' not in data:
            continue
        try:
            error = json.loads(data).get("error")
        except ValueError:
            continue
        if isinstance(error, dict) and isinstance(error.get("code"), int) and error["code"] >= 500:
            return "".join(f"{before}\n\n" for before in events[:index]), error
    return None


def _engine_error_ending(packet: str) -> str | None:
    """Where ``packet`` has an error event with a 5xx code: the events before it,
    :data:`ENGINE_FAILED`'s event and ``data: [DONE]``, with the engine's error logged
    beside the request id; None otherwise."""
    # A cheap test first: most packets are chunks without an error.
    cut = _server_error(packet) if '"error"' in packet else None
    if cut is None:
        return None
    before, error = cut
    rid = request_id()
    logger.error(
        "Request %s failed (%s) mid-stream: the engine sent %s",
        rid,
        ENGINE_FAILED.error_type,
        error,
    )
    return before + ENGINE_FAILED.event(rid) + _DONE


def _fault_ending(error: Exception) -> str:
    """The events that end a stream ``error`` cut, with the cause logged beside the request id."""
    fault = fault_of(error)
    rid = request_id()
    logger.error("Request %s failed (%s) mid-stream", rid, fault.error_type, exc_info=error)
    return fault.event(rid) + _DONE


def ending_streams_in_errors(
    ray_wrapper: Callable[[AsyncIterator[Any]], AsyncIterator[str]],
) -> Callable[[AsyncIterator[Any]], AsyncIterator[str]]:
    """Wrap Ray's stream formatter so that a failed stream ends in a :class:`StreamFault` event.

    ``ray_wrapper`` is ``_openai_json_wrapper``, which turns the replica's chunks
    into server-sent events and adds ``data: [DONE]``. An exception from the
    replica, such as ``ActorDiedError``, escapes it after HTTP 200; an engine that
    dies sends its own error event. Either way this wrapper sends the fault's
    event and ``data: [DONE]``, and logs the cause with the request id.
    A cancelled stream (the client left) is not an ``Exception`` and passes.
    """

    async def stream(generator: AsyncIterator[Any]) -> AsyncIterator[str]:
        try:
            async with contextlib.aclosing(ray_wrapper(generator)) as packets:
                async for packet in packets:
                    ending = _engine_error_ending(packet)
                    if ending is None:
                        yield packet
                        continue
                    yield ending
                    return
        except Exception as error:
            yield _fault_ending(error)

    stream.__wrapped__ = ray_wrapper  # type: ignore[attr-defined]
    return stream


def answering_failures(
    ray_process: Callable[..., Awaitable[Response]],
) -> Callable[..., Awaitable[Response]]:
    """Wrap ``OpenAiIngress._process_llm_request``: a failure before the answer gets a stable error.

    A request that fails before the answer began (before the first chunk, or
    during a request that does not stream) gets its :class:`StreamFault` as the
    response: :data:`REPLICA_LOST` (503) or :data:`ENGINE_FAILED` (500). Ray's
    exception middleware would answer 500 with the exception's text
    (``get_response_for_error`` in ``ray/llm/_internal/serve/utils/server_utils.py``).
    An exception that Ray answers with a status below 500 (an unknown model's 404,
    a bad request's 400) is Ray's to answer, unchanged.
    """

    @functools.wraps(ray_process)
    async def process(self: Any, *args: Any, **kwargs: Any) -> Response:
        try:
            return await ray_process(self, *args, **kwargs)
        except Exception as error:
            # Imported here, not at module level: the module imports vLLM, and this
            # package is imported while vLLM loads its platform plugins (the fake
            # tier's), where importing vLLM again is circular. The ingress has
            # already imported it by the time a request fails.
            from ray.llm._internal.serve.utils.server_utils import get_response_for_error

            rid = request_id()
            # Ray's own rule for the status, which differs between Ray versions.
            if get_response_for_error(error, rid).error.code < 500:
                raise
            fault = fault_of(error)
            logger.error(
                "Request %s failed (%s) before its answer began",
                rid,
                fault.error_type,
                exc_info=error,
            )
            return JSONResponse(fault.error(rid), status_code=fault.code)

    return process


class StreamFaultMiddleware:
    """Ends a failed stream of a direct-streaming replica's app in a :class:`StreamFault` event.

    With direct streaming the engine's replica serves vLLM's own OpenAI app, and there
    is no ingress to end its streams: an engine that dies sends vLLM's error event,
    whose message is vLLM's, and an exception after HTTP 200 cuts the connection.
    This middleware, on that app, replaces the first error event with a 5xx code
    with :data:`ENGINE_FAILED`'s and ``data: [DONE]``, drops what the app sends after
    it, and ends a stream that an exception cut with the exception's fault
    (:data:`REPLICA_LOST` where a replica it calls, such as a prefill replica, was
    lost), logging the cause with Serve's request id. Responses that are not
    server-sent events pass unchanged, and so does an exception before the response
    starts (vLLM's app answers it) or after it ended.

    Limits: an error event split across two body messages is not recognised (vLLM
    sends each event whole), nor one on an ``event:`` line, as the Responses API's
    streams send them; an exception cutting such a stream still gets the chat
    completions' error event and ``data: [DONE]``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        stream = _EventStream(send)
        try:
            await self.app(scope, receive, stream.send)
        except Exception as error:
            if not stream.open:
                raise
            await stream.end(_fault_ending(error))


class _EventStream:
    """The ``send`` of one response, watched for a server-sent event stream that fails."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._events = False
        self._ended = False

    @property
    def open(self) -> bool:
        """An event stream has begun and not ended: a fault can still end it."""
        return self._events and not self._ended

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
            self._events = content_type.startswith("text/event-stream")
        elif message["type"] == "http.response.body" and self._events:
            if self._ended:
                return  # what the app sends after the fault's event
            body = message.get("body", b"")
            # Decoded only where it may hold an error; surrogateescape: a body cut inside
            # a character comes back out unchanged.
            text = body.decode(errors="surrogateescape") if b'"error"' in body else ""
            ending = _engine_error_ending(text)
            if ending is not None:
                await self.end(ending)
                return
            self._ended = not message.get("more_body", False)
        await self._send(message)

    async def end(self, events: str) -> None:
        """Send ``events`` as the stream's last body."""
        self._ended = True
        body = events.encode(errors="surrogateescape")
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
