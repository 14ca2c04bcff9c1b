"""A streaming OpenAI chat client that records what each request saw, for the
fake-tier tests and the bench's soak: the status, every event, errors the stream
carried, and when its first token and its end arrived."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

#: Where the SSE format ends a line (html.spec.whatwg.org, "Server-sent events",
#: "Parsing an event stream"); UTF-8 never puts these bytes inside a character.
_SSE_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass
class StreamOutcome:
    """What one streaming client saw, from the request to the end of the response."""

    status: int | None = None
    #: The ``X-Request-ID`` header of the response: Serve's id of the request.
    request_id: str | None = None
    #: The stream's closing ``data: [DONE]`` arrived.
    done: bool = False
    chunks: int = 0
    #: What went wrong, as the client saw it: an HTTP error body, an error event in
    #: the stream, or a connection that broke; None when nothing did.
    error: str | None = None
    #: The client gave up waiting: a hang.
    timed_out: bool = False
    #: The connection broke before the response ended (an ``httpx`` transport error,
    #: which the OpenAI client raises as ``APIConnectionError``).
    connection_broke: bool = False
    #: The last ``finish_reason`` a chunk gave (a complete answer has one).
    finish_reason: str | None = None
    #: ``usage.completion_tokens`` of the final chunk (``stream_options.include_usage``).
    completion_tokens: int | None = None
    first_chunk_s: float | None = None
    #: ``time.time()`` when the first generated chunk arrived.
    first_chunk_at: float | None = None
    total_s: float = 0.0
    #: ``time.time()`` when the response ended, however it ended.
    ended_at: float = 0.0
    error_events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.status == 200 and self.done and self.error is None

    def open_at(self, moment: float) -> bool:
        """Whether the stream had sent a generated chunk and not yet ended at ``moment``."""
        return self.first_chunk_at is not None and self.first_chunk_at <= moment < self.ended_at


class OpenStreams:
    """Counts the streams that have sent a generated chunk and not yet ended.

    ``reached`` is set once ``target`` of them are open at the same time.
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.reached = asyncio.Event()

    def begin(self) -> None:
        self.count += 1
        if self.count >= self.target:
            self.reached.set()

    def end(self) -> None:
        self.count -= 1


async def stream_chat(
    client: httpx.AsyncClient,
    base_url: str,
    body: Mapping[str, Any],
    timeout_s: float,
    open_streams: OpenStreams | None = None,
) -> StreamOutcome:
    """Send one streaming chat request and read its events to the end.

    Counts the stream in ``open_streams`` from its first generated chunk to its end.
    """
    outcome = StreamOutcome()
    started = time.monotonic()

    async def read_response() -> None:
        async with client.stream(
            "POST", f"{base_url}/v1/chat/completions", json={**body, "stream": True}
        ) as response:
            outcome.status = response.status_code
            outcome.request_id = response.headers.get("x-request-id")
            if response.status_code != 200:
                outcome.error = (await response.aread()).decode(errors="replace")
                return
            await _read_events(response, outcome, started, open_streams)

    try:
        await asyncio.wait_for(read_response(), timeout_s)
    except asyncio.TimeoutError:
        outcome.timed_out = True
        outcome.error = f"no end of stream in {timeout_s} s"
    except httpx.HTTPError as broken:
        outcome.connection_broke = True
        outcome.error = f"{type(broken).__name__}: {broken}"
    finally:
        outcome.total_s = time.monotonic() - started
        outcome.ended_at = time.time()
        if open_streams is not None and outcome.first_chunk_at is not None:
            open_streams.end()
    return outcome


async def sse_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """The lines of a Server-Sent Events stream, split where the SSE format splits them:
    at CR LF, LF or CR alone.

    httpx's ``aiter_lines`` also splits at U+2028, U+0085 and the other breaks of
    ``str.splitlines``, which a generated token can put, unescaped, inside an event's
    JSON: a soak's tiny random model did after about 3,700 answers. A CR at the end of
    one chunk and an LF at the start of the next make one empty line too many, which
    no reader of ``data:`` lines sees.
    """
    rest = b""
    async for chunk in chunks:
        *lines, rest = _SSE_LINE_END.split(rest + chunk)
        for line in lines:
            yield line.decode("utf-8", errors="replace")
    if rest:
        yield rest.decode("utf-8", errors="replace")


async def _read_events(
    response: httpx.Response,
    outcome: StreamOutcome,
    started: float,
    open_streams: OpenStreams | None,
) -> None:
    async for line in sse_lines(response.aiter_bytes()):
        if not line.startswith("data: "):
            continue
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            outcome.done = True
            continue
        try:
            event = json.loads(data)
        except json.JSONDecodeError as error:
            # The client's view of a broken stream, not the client's crash.
            outcome.error = f"an event that is not JSON ({error}): {data[:120]!r}"
            continue
        if not isinstance(event, dict):
            outcome.error = f"an event that is not a JSON object: {data[:120]!r}"
            continue
        if "error" in event:
            outcome.error_events.append(event)
            outcome.error = json.dumps(event["error"])
            continue
        if event.get("usage"):
            outcome.completion_tokens = event["usage"]["completion_tokens"]
        for choice in event.get("choices") or []:
            outcome.finish_reason = choice.get("finish_reason") or outcome.finish_reason
        outcome.chunks += 1
        if outcome.first_chunk_s is None:
            outcome.first_chunk_s = time.monotonic() - started
            outcome.first_chunk_at = time.time()
            if open_streams is not None:
                open_streams.begin()
    if not outcome.done and outcome.error is None:
        outcome.error = "the stream ended without data: [DONE]"


async def stream_many(
    base_url: str,
    bodies: list[Mapping[str, Any]],
    timeout_s: float,
    open_streams: OpenStreams | None = None,
) -> list[StreamOutcome]:
    """Stream every body at once, each on its own connection, as separate clients would."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout_s)) as client:
        return list(
            await asyncio.gather(
                *(stream_chat(client, base_url, body, timeout_s, open_streams) for body in bodies)
            )
        )
