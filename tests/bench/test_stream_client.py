"""The streaming client of the fake-tier tests and the bench's soak
(ray_serve_npu_tooling.stream_client): it reads Server-Sent Events as the format splits
them, and a broken event is the request's error, not the client's crash."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
from ray_serve_npu_tooling.stream_client import StreamOutcome, sse_lines, stream_chat


def _event(content: str) -> bytes:
    # As a server that writes JSON without escaping non-ASCII (U+2028 stays raw).
    chunk = {"choices": [{"delta": {"content": content}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def _chat(body: bytes) -> StreamOutcome:
    async def stream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async def run() -> StreamOutcome:
        async with httpx.AsyncClient(transport=httpx.MockTransport(stream)) as client:
            return await stream_chat(client, "http://test", {"model": "m"}, timeout_s=10)

    return asyncio.run(run())


def test_a_token_with_a_unicode_line_separator_stays_one_event() -> None:
    outcome = _chat(_event("a\u2028b") + _event("c\x85d") + b"data: [DONE]\n\n")
    assert outcome.completed, outcome.error
    assert outcome.chunks == 2


def test_lines_end_at_cr_lf_and_crlf_even_across_chunks() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in (b"data: 1\r", b"\ndata: 2\nda", b"ta: 3\rdata: 4"):
            yield chunk

    async def read() -> list[str]:
        return [line async for line in sse_lines(chunks())]

    lines = [line for line in asyncio.run(read()) if line]
    assert lines == ["data: 1", "data: 2", "data: 3", "data: 4"]


def test_an_event_that_is_not_json_is_the_requests_error() -> None:
    outcome = _chat(b'data: {"choices": [{"delta": {"content": "a\n\n' + b"data: [DONE]\n\n")
    assert not outcome.completed
    assert outcome.error is not None and outcome.error.startswith("an event that is not JSON")


def test_an_event_that_is_json_but_no_object_is_the_requests_error() -> None:
    outcome = _chat(b"data: 5\n\ndata: [DONE]\n\n")
    assert outcome.error == "an event that is not a JSON object: '5'"


def test_bytes_that_are_not_utf8_are_replaced_not_raised() -> None:
    outcome = _chat(_event("ok") + b"data: \xff\xfe\n\n" + b"data: [DONE]\n\n")
    assert outcome.chunks == 1 and outcome.error is not None
    assert outcome.error.startswith("an event that is not JSON")
