"""The stream guard the plugin adds to Ray Serve LLM's OpenAI ingress, and with direct
streaming to the app the engine's replica serves in its place.

The streams go through Ray's own ingress formatter, patched, or through a direct-streaming
app that streams as vLLM's does, with the plugin's middleware, to the OpenAI Python
client over httpx's ASGI transport: no Ray cluster, no engine.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from ray.core.generated.common_pb2 import ActorDiedErrorContext
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.llm._internal.serve.core.ingress import ingress as ray_ingress
from ray.llm._internal.serve.core.ingress import utils as ray_ingress_utils
from ray.llm._internal.serve.core.ingress.middleware import add_exception_handling_middleware
from ray.serve import context as serve_context
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ray_serve_npu import streams

#: What the exceptions below carry and no client may see.
NODE_IP = "10.1.2.3"
PID = "4242"
ACTOR_ID = "ab" * 16
REQUEST_ID = "req-7f3a"

#: What a replica that died mid-stream raises in the ingress (Ray builds it from the GCS's context).
REPLICA_DIED = ActorDiedError(
    ActorDiedErrorContext(
        class_name="ServeReplica:default:LLMServer:m",
        actor_id=bytes.fromhex(ACTOR_ID),
        pid=int(PID),
        node_ip_address=NODE_IP,
        error_message="The actor is dead because its worker process has died.",
    )
)
REPLICA_UNREACHABLE = ActorUnavailableError(
    f"node {NODE_IP} is unreachable", bytes.fromhex(ACTOR_ID)
)
ENGINE_CRASH = RuntimeError(f"engine worker pid {PID} on {NODE_IP} exited with SIGKILL")
#: The event vLLM sends when its engine dies (vllm/v1/engine/exceptions.py, EngineDeadError).
VLLM_ENGINE_DEAD_EVENT = "data: " + json.dumps(
    {
        "error": {
            "message": "EngineCore encountered an issue. See stack trace (above) for the root "
            "cause.",
            "type": "InternalServerError",
            "param": None,
            "code": 500,
        }
    }
)


def _chunk(content: str) -> str:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


Replica = Callable[[], AsyncIterator[str]]


def _replica(ending: BaseException | str | None, texts: tuple[str, ...] = ("Hel", "lo")) -> Replica:
    """A replica's stream: a chunk for each of ``texts``, then ``ending`` (raised, or sent)."""

    async def chunks() -> AsyncIterator[str]:
        for text in texts:
            yield _chunk(text)
        if isinstance(ending, BaseException):
            raise ending
        if ending is not None:
            yield f"{ending}\n\n"
            yield "data: [DONE]\n\n"

    return chunks


class _RayIngress:
    """What ``OpenAiIngress._process_llm_request`` needs of its ingress: the replica's answer."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica

    def _get_response(self, **_request: Any) -> AsyncIterator[str]:
        return self.replica()


def _ingress(replica: Replica) -> ASGIApp:
    """An app whose chat route is Ray's ingress's, patched, in a Serve request context."""
    app = FastAPI()
    # Ray's answer to an exception that escapes the route (OpenAiIngress's app has it).
    add_exception_handling_middleware(app)

    @app.middleware("http")
    async def serve_request_context(request, call_next):  # type: ignore[no-untyped-def]
        # Serve's replica sets the context from X-Request-ID before it calls the app.
        serve_context._serve_request_context.set(
            serve_context._RequestContext(request_id=request.headers.get("x-request-id", ""))
        )
        return await call_next(request)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await ray_ingress.OpenAiIngress._process_llm_request(
            _RayIngress(replica), body=None, call_method="chat", raw_request=request
        )

    return app


def _direct_streaming_app(replica: Replica) -> ASGIApp:
    """An app that streams as vLLM's chat route does (a StreamingResponse of server-sent
    events), with the middleware the plugin adds to it, called in a Serve request
    context as the replica calls it."""
    app = FastAPI()
    app.add_middleware(streams.StreamFaultMiddleware)

    @app.post("/v1/chat/completions")
    async def chat() -> StreamingResponse:
        return StreamingResponse(replica(), media_type="text/event-stream")

    async def replica_calls(scope: Scope, receive: Receive, send: Send) -> None:
        request_id = dict(scope["headers"]).get(b"x-request-id", b"").decode()
        serve_context._serve_request_context.set(
            serve_context._RequestContext(request_id=request_id)
        )
        await app(scope, receive, send)

    return replica_calls


App = Callable[[Replica], ASGIApp]


def _client_sees(
    replica: Replica, request_id: str | None = REQUEST_ID, app: App = _ingress
) -> tuple[list[str], openai.APIError | None]:
    """Stream a chat answer with the OpenAI client; return the text it got and what it raised."""

    async def stream() -> tuple[list[str], openai.APIError | None]:
        transport = httpx.ASGITransport(app=app(replica))
        headers = {"X-Request-ID": request_id} if request_id else None
        texts: list[str] = []
        async with httpx.AsyncClient(transport=transport) as http_client:
            client = openai.AsyncOpenAI(
                base_url="http://ingress/v1", api_key="k", http_client=http_client, max_retries=0
            )
            try:
                chunks = await client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "Hi"}],
                    stream=True,
                    extra_headers=headers,
                )
                async for chunk in chunks:
                    texts.append(chunk.choices[0].delta.content or "")
            except openai.APIError as error:
                return texts, error
        return texts, None

    return asyncio.run(stream())


def _raised(
    replica: Replica, request_id: str | None = REQUEST_ID, app: App = _ingress
) -> openai.APIError:
    """What the OpenAI client raised, after the two chunks the replica sent first."""
    texts, error = _client_sees(replica, request_id, app)
    assert texts == ["Hel", "lo"]
    assert error is not None, "the client raised nothing"
    return error


def _assert_fault(error: openai.APIError, fault: streams.StreamFault, request_id: str) -> None:
    """The client raised ``fault``'s APIError (the client turns the code into a string)."""
    assert type(error) is openai.APIError
    assert (error.body["code"], str(error.code)) == (fault.code, str(fault.code))
    assert error.type == fault.error_type
    assert error.message == fault.message.format(request_id=request_id)


def _assert_no_internals(error: openai.APIError) -> None:
    seen = json.dumps(error.body) + error.message
    for internal in (NODE_IP, PID, ACTOR_ID, "Traceback", "EngineCore", "SIGKILL"):
        assert internal not in seen, (internal, seen)


def test_the_ingress_formats_streams_through_the_guard() -> None:
    assert ray_ingress._openai_json_wrapper.__wrapped__ is ray_ingress_utils._openai_json_wrapper


def test_a_complete_stream_is_what_ray_sends() -> None:
    async def packets(wrapper: Callable[[AsyncIterator[str]], AsyncIterator[str]]) -> list[str]:
        return [packet async for packet in wrapper(_replica(None)())]

    ours = asyncio.run(packets(ray_ingress._openai_json_wrapper))
    assert ours == asyncio.run(packets(ray_ingress_utils._openai_json_wrapper))
    assert ours[-1] == "data: [DONE]\n\n"
    assert _client_sees(_replica(None)) == (["Hel", "lo"], None)


@pytest.mark.parametrize("lost", [REPLICA_DIED, REPLICA_UNREACHABLE], ids=type)
def test_a_lost_replica_makes_the_client_raise_a_stable_503_without_internals(
    lost: RayActorError, caplog: pytest.LogCaptureFixture
) -> None:
    error = _raised(_replica(lost))

    _assert_fault(error, streams.REPLICA_LOST, REQUEST_ID)
    assert (error.body["code"], error.type) == (503, "ServiceUnavailableError")
    assert "Fix: retry the request." in error.message
    _assert_no_internals(error)
    # The server log has the whole exception beside the same request id.
    (record,) = [r for r in caplog.records if r.name == streams.__name__]
    assert record.levelno == logging.ERROR
    assert REQUEST_ID in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is lost
    assert NODE_IP in caplog.text


def test_an_engine_exception_makes_the_client_raise_a_stable_500_apart_from_replica_loss(
    caplog: pytest.LogCaptureFixture,
) -> None:
    error = _raised(_replica(ENGINE_CRASH))

    _assert_fault(error, streams.ENGINE_FAILED, REQUEST_ID)
    assert (error.body["code"], error.type) == (500, "InternalServerError")
    assert error.message != streams.REPLICA_LOST.message.format(request_id=REQUEST_ID)
    _assert_no_internals(error)
    assert REQUEST_ID in caplog.text and str(ENGINE_CRASH) in caplog.text


def test_vllms_engine_dead_event_becomes_the_stable_500(caplog: pytest.LogCaptureFixture) -> None:
    error = _raised(_replica(VLLM_ENGINE_DEAD_EVENT))

    _assert_fault(error, streams.ENGINE_FAILED, REQUEST_ID)
    _assert_no_internals(error)
    assert REQUEST_ID in caplog.text and "EngineCore encountered an issue" in caplog.text


def test_a_client_error_event_passes_unchanged() -> None:
    error = {"message": "bad logprobs", "type": "BadRequestError", "param": None, "code": 400}

    assert _raised(_replica(f"data: {json.dumps({'error': error})}")).body == error


def test_outside_a_serve_request_the_client_and_the_log_share_a_new_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    error = _raised(_replica(REPLICA_DIED), request_id=None)

    request_id = error.message.split("(request id ", 1)[1].split(")", 1)[0]
    _assert_fault(error, streams.REPLICA_LOST, request_id)
    assert len(request_id) == 32
    assert request_id in caplog.text


def test_a_replica_lost_before_the_first_chunk_gets_a_stable_503_without_internals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    texts, error = _client_sees(_replica(REPLICA_DIED, texts=()))

    assert texts == []
    assert isinstance(error, openai.APIStatusError)
    assert error.status_code == 503
    assert error.body == streams.REPLICA_LOST.error(REQUEST_ID)["error"]
    _assert_no_internals(error)
    assert REQUEST_ID in caplog.text and NODE_IP in caplog.text


def test_an_engine_exception_before_the_first_chunk_gets_a_stable_500_without_internals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    texts, error = _client_sees(_replica(ENGINE_CRASH, texts=()))

    assert texts == []
    assert isinstance(error, openai.InternalServerError)
    assert error.status_code == 500
    assert error.body == streams.ENGINE_FAILED.error(REQUEST_ID)["error"]
    _assert_no_internals(error)
    (record,) = [r for r in caplog.records if r.name == streams.__name__]
    assert REQUEST_ID in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is ENGINE_CRASH


@pytest.mark.parametrize("status", [400, 404])
def test_rays_answers_below_500_before_the_first_chunk_pass_unchanged(status: int) -> None:
    refused = HTTPException(status, f"refused with {status}")

    texts, error = _client_sees(_replica(refused, texts=()))

    assert texts == []
    assert isinstance(error, openai.APIStatusError)
    assert error.status_code == status
    assert f"refused with {status}" in json.dumps(error.body), error.body


#: The ingress, and with direct streaming the engine replica's app.
PATHS = pytest.mark.parametrize("app", [_ingress, _direct_streaming_app], ids=["ingress", "direct"])


@PATHS
def test_vllms_engine_dead_event_becomes_the_stable_500_on_either_path(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    error = _raised(_replica(VLLM_ENGINE_DEAD_EVENT), app=app)

    _assert_fault(error, streams.ENGINE_FAILED, REQUEST_ID)
    _assert_no_internals(error)
    assert REQUEST_ID in caplog.text and "EngineCore encountered an issue" in caplog.text


@pytest.mark.parametrize(
    ("cause", "fault"),
    # A lost replica here is one the engine's replica calls, such as a prefill replica.
    [(ENGINE_CRASH, streams.ENGINE_FAILED), (REPLICA_DIED, streams.REPLICA_LOST)],
    ids=["engine", "replica"],
)
def test_a_direct_stream_cut_by_an_exception_ends_in_its_faults_event(
    cause: Exception, fault: streams.StreamFault, caplog: pytest.LogCaptureFixture
) -> None:
    error = _raised(_replica(cause), app=_direct_streaming_app)

    _assert_fault(error, fault, REQUEST_ID)
    _assert_no_internals(error)
    (record,) = [r for r in caplog.records if r.name == streams.__name__]
    assert REQUEST_ID in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is cause


def _replica_sends(app: ASGIApp, sent: list[Message] | None = None) -> list[Message]:
    """Every message ``app`` sends for one chat request, in ``sent`` as they come, driven as
    a server drives it: a message after the last body is an error in uvicorn, which
    httpx's test transport drops without a word."""
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"x-request-id", REQUEST_ID.encode())],
        "server": ("replica", 80),
    }
    sent = [] if sent is None else sent

    async def receive() -> Message:
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _bodies(sent: list[Message]) -> list[Message]:
    return [message for message in sent if message["type"] == "http.response.body"]


def test_a_direct_stream_sends_nothing_after_the_fault_event() -> None:
    bodies = _bodies(_replica_sends(_direct_streaming_app(_replica(VLLM_ENGINE_DEAD_EVENT))))

    assert [m.get("more_body", False) for m in bodies] == [True, True, False]
    events = b"".join(m["body"] for m in bodies).decode()
    fault_event = streams.ENGINE_FAILED.event(REQUEST_ID)
    assert events == _chunk("Hel") + _chunk("lo") + fault_event + "data: [DONE]\n\n"


def _guarded(app: ASGIApp) -> ASGIApp:
    """``app`` behind the middleware alone."""
    return streams.StreamFaultMiddleware(app)


def test_a_response_that_is_no_event_stream_passes_unchanged_with_its_500() -> None:
    answer = JSONResponse(
        {"error": {"message": "x", "type": "InternalServerError", "code": 500}}, status_code=500
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await answer(scope, receive, send)

    sent = _replica_sends(_guarded(app))

    assert sent[0]["status"] == 500
    assert b"".join(m["body"] for m in _bodies(sent)) == answer.body


@pytest.mark.parametrize("when", ["before the answer", "after its end"])
def test_an_exception_outside_an_open_stream_is_the_servers_to_answer(when: str) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if when == "after its end":
            await StreamingResponse(iter(["data: [DONE]\n\n"]), media_type="text/event-stream")(
                scope, receive, send
            )
        raise ENGINE_CRASH

    sent: list[Message] = []
    with pytest.raises(RuntimeError, match="SIGKILL"):
        _replica_sends(_guarded(app), sent)
    assert [m.get("body") for m in _bodies(sent)] == (
        [b"data: [DONE]\n\n", b""] if when == "after its end" else []
    )


@PATHS
def test_a_complete_stream_and_a_client_error_event_pass_unchanged_on_either_path(
    app: App,
) -> None:
    error = {"message": "bad logprobs", "type": "BadRequestError", "param": None, "code": 400}

    assert _client_sees(_replica(None), app=app) == (["Hel", "lo"], None)
    assert _raised(_replica(f"data: {json.dumps({'error': error})}"), app=app).body == error
