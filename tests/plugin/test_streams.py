"""The stream guard the plugin adds to Ray Serve LLM's OpenAI ingress.

It runs on Ray's own ingress module, patched: no Ray cluster, no engine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from ray.llm._internal.serve.core.ingress import ingress as ray_ingress
from ray.llm._internal.serve.core.ingress import utils as ray_ingress_utils


async def _chunks(fail_after: int | None) -> AsyncIterator[str]:
    for index in range(3):
        if index == fail_after:
            raise RuntimeError("replica died")
        yield f'data: {{"chunk": {index}}}\n\n'


def _collect(fail_after: int | None) -> list[str]:
    async def collect() -> list[str]:
        return [packet async for packet in ray_ingress._openai_json_wrapper(_chunks(fail_after))]

    return asyncio.run(collect())


def test_the_ingress_formats_streams_through_the_guard() -> None:
    assert ray_ingress._openai_json_wrapper.__wrapped__ is ray_ingress_utils._openai_json_wrapper


def test_a_complete_stream_is_what_ray_sends() -> None:
    async def ray_packets() -> list[str]:
        wrapper = ray_ingress_utils._openai_json_wrapper
        return [packet async for packet in wrapper(_chunks(None))]

    assert _collect(None) == asyncio.run(ray_packets())
    assert _collect(None)[-1] == "data: [DONE]\n\n"


def test_a_stream_cut_by_a_replica_failure_ends_in_an_error_event_then_done() -> None:
    packets = _collect(fail_after=2)

    assert packets[:2] == ['data: {"chunk": 0}\n\n', 'data: {"chunk": 1}\n\n']
    assert packets[-1] == "data: [DONE]\n\n"
    error = json.loads(packets[2].removeprefix("data: "))["error"]
    assert error["code"] == 503
    assert "RuntimeError: replica died" in error["message"]
    assert "Fix: retry the request." in error["message"]
