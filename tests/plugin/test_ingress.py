"""The API key the plugin adds to Ray Serve LLM's OpenAI ingress, and with direct
streaming to the app the engine's replica serves in its place and to the ingress
request router that HAProxy asks.

They run on Ray's own ingress and builder modules, patched, with Starlette's test
client: no Ray cluster, and for direct streaming the mock engine in place of vLLM's.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import sys
import types
from collections.abc import AsyncIterator, Iterator
from typing import Any

import cloudpickle
import pytest
from fastapi import FastAPI, WebSocket
from npu_configs import make_llm_config
from ray.llm._internal.serve.core.ingress import builder as ray_builder
from ray.llm._internal.serve.core.ingress import ingress as ray_ingress
from ray.llm._internal.serve.core.ingress import router as ray_router
from ray.llm._internal.serve.core.server.llm_server import LLMServer
from ray.llm._internal.serve.serving_patterns.data_parallel import builder as ray_dp_builder
from ray.llm._internal.serve.serving_patterns.data_parallel.dp_server import DPServer
from ray.llm._internal.serve.serving_patterns.prefill_decode import builder as ray_pd_builder
from ray_serve_npu_tooling.mock_engine import MockEngine, StreamingMockEngine
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.types import Message

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.ingress import ApiKeyMiddleware, key_digest
from ray_serve_npu.patches import builder as builder_patch
from ray_serve_npu.streams import ENGINE_FAILED, StreamFaultMiddleware

KEY = "test-key-4b1d"


def _ingress_app() -> FastAPI:
    """Ray's ingress app, as ``make_fastapi_ingress`` creates it, with two routes."""
    app = ray_ingress.init()

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"data": []}

    @app.websocket("/v1/echo")
    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()

    return app


@pytest.fixture
def keyed_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    with TestClient(_ingress_app()) as client:
        yield client


def test_request_without_the_key_gets_a_401_that_names_the_fix(keyed_client: TestClient) -> None:
    response = keyed_client.get("/v1/models")

    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == 401
    assert "Authorization: Bearer <key>" in error["message"]
    assert API_KEY_ENV_VAR in error["message"]


@pytest.mark.parametrize("header", [f"Bearer {KEY}x", KEY, f"Basic {KEY}", "Bearer "])
def test_request_with_a_wrong_key_gets_a_401(keyed_client: TestClient, header: str) -> None:
    assert keyed_client.get("/v1/models", headers={"Authorization": header}).status_code == 401


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
def test_request_with_the_key_is_served(keyed_client: TestClient, scheme: str) -> None:
    response = keyed_client.get("/v1/models", headers={"Authorization": f"{scheme} {KEY}"})

    assert response.status_code == 200
    assert response.json() == {"data": []}


def test_cors_preflight_passes_without_the_key(keyed_client: TestClient) -> None:
    response = keyed_client.options(
        "/v1/models",
        headers={"Origin": "http://example.test", "Access-Control-Request-Method": "GET"},
    )

    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "http://example.test"


def test_websocket_without_the_key_is_denied_with_a_401_before_it_is_accepted(
    keyed_client: TestClient,
) -> None:
    with pytest.raises(WebSocketDenialResponse) as denied:
        with keyed_client.websocket_connect("/v1/echo"):
            pass

    assert denied.value.status_code == 401
    assert API_KEY_ENV_VAR in denied.value.json()["error"]["message"]


def test_websocket_with_the_key_is_served(keyed_client: TestClient) -> None:
    with keyed_client.websocket_connect(
        "/v1/echo", headers={"Authorization": f"Bearer {KEY}"}
    ) as websocket:
        websocket.send_text("ping")
        assert websocket.receive_text() == "ping"


def test_websocket_without_the_key_is_closed_before_accept_where_no_denial_response_exists() -> (
    None
):
    # A server without the ASGI denial-response extension answers a close before
    # accept with HTTP 403.
    sent: list[Message] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app saw a WebSocket without the key")

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/v1/echo", "headers": [], "extensions": {}}
    asyncio.run(ApiKeyMiddleware(app, key_digest(KEY))(scope, receive, send))

    assert [message["type"] for message in sent] == ["websocket.close"]
    assert sent[0]["code"] == 1008


def test_only_the_keys_digest_is_pickled_into_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    # What Serve ships to the ingress replicas and keeps in the GCS: the ingress
    # class, which holds a pickled copy of the FastAPI app and its middleware.
    ingress_cls = ray_ingress.make_fastapi_ingress(ray_ingress.OpenAiIngress)
    pickled = cloudpickle.dumps(ingress_cls)

    assert KEY.encode() not in pickled
    assert key_digest(KEY) in pickled


def test_without_the_variable_the_endpoint_is_open_and_a_warning_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(API_KEY_ENV_VAR, raising=False)
    with caplog.at_level(logging.WARNING, logger="ray_serve_npu.ingress"):
        app = _ingress_app()

    assert TestClient(app).get("/v1/models").status_code == 200
    assert f"{API_KEY_ENV_VAR} is not set" in caplog.text


def test_an_empty_key_is_refused_when_the_app_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV_VAR, " ")

    with pytest.raises(ValueError, match=f"{API_KEY_ENV_VAR} is set but empty. Fix:"):
        ray_ingress.init()


@pytest.mark.parametrize(
    "key",
    [f" {KEY}", f"{KEY}\n", f"{KEY}\r\n", f"{KEY}\t", "test\nkey", "test\x1bkey", "tést-key"],
    ids=["leading space", "newline", "CRLF", "tab", "inner newline", "escape", "non-ASCII"],
)
def test_a_key_no_header_can_carry_is_refused_when_the_app_is_built(
    monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setenv(API_KEY_ENV_VAR, key)

    with pytest.raises(
        ValueError, match=f"{API_KEY_ENV_VAR} .*Fix: set it to the key alone"
    ) as error:
        ray_ingress.make_fastapi_ingress(ray_ingress.OpenAiIngress)
    assert key.strip() not in str(error.value)


def _direct_streaming_deployment(**kwargs: Any) -> Any:
    """The engine's deployment as Ray's direct-streaming builder makes it, for model "tiny"."""
    return ray_builder._build_direct_streaming_llm_deployment(make_llm_config(), **kwargs)


def _unconstructed_replica(deployment: Any) -> Any:
    """An instance of ``deployment``'s class, pickled as Serve ships it, not yet
    constructed. Serve's wrapper has an async __del__, which an instance it did not start
    would leave unawaited: the instance's class has a plain one."""
    replica_cls = cloudpickle.loads(cloudpickle.dumps(deployment._bound_deployment.func_or_class))
    return object.__new__(type("Replica", (replica_cls,), {"__del__": lambda self: None}))


def _direct_streaming_app(deployment: Any, engine_cls: type[MockEngine] = MockEngine) -> FastAPI:
    """The app a replica of ``deployment`` serves: its class pickled as Serve ships it,
    started on a mock engine, then asked for its app as Serve asks."""
    server = _unconstructed_replica(deployment)
    server._llm_config = make_llm_config()
    server.engine = engine_cls(server._llm_config)
    return asyncio.run(server.__serve_build_asgi_app__())


class _EngineDyingMidStream(StreamingMockEngine):
    """Streams a chunk, then the error event vLLM sends when its engine dies."""

    async def chat(self, request: Any, raw_request_info: Any = None) -> AsyncIterator[str]:
        async for event in super().chat(request, raw_request_info):
            yield event
            break
        yield f"data: {json.dumps({'error': ENGINE_DEAD})}\n\n"
        yield "data: [DONE]\n\n"


#: vLLM's error for a dead engine (vllm/v1/engine/exceptions.py, EngineDeadError).
ENGINE_DEAD = {
    "message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "type": "InternalServerError",
    "param": None,
    "code": 500,
}


@pytest.mark.parametrize("key", [KEY, None], ids=["key", "no key"])
def test_direct_streaming_ends_a_stream_whose_engine_died_in_the_stable_error_mock_engine(
    monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    if key is None:
        monkeypatch.delenv(API_KEY_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(API_KEY_ENV_VAR, key)
    app = _direct_streaming_app(_direct_streaming_deployment(), _EngineDyingMidStream)
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    headers = {"Authorization": f"Bearer {KEY}", "X-Request-ID": "req-1"}

    answer = TestClient(app).post("/v1/chat/completions", json=chat, headers=headers)

    assert answer.status_code == 200
    events = answer.text.split("\n\n")
    assert events[0].startswith("data: {") and '"role": "assistant"' in events[0]
    # Outside a Serve replica there is no request id of Serve's: the event names a new one.
    (fault,) = [json.loads(e.removeprefix("data: ")) for e in events if '"error"' in e]
    request_id = fault["error"]["message"].split("(request id ", 1)[1].split(")", 1)[0]
    assert fault == ENGINE_FAILED.error(request_id)
    assert events[-2:] == ["data: [DONE]", ""]


def test_direct_streaming_requires_the_key_on_the_app_the_engines_replica_serves_mock_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    app = _direct_streaming_app(_direct_streaming_deployment())
    # Outermost, so no middleware of Ray's (such as LoRA resolution at 2.60) runs first.
    assert app.user_middleware[0].cls is ApiKeyMiddleware
    assert app.user_middleware[1].cls is StreamFaultMiddleware
    client = TestClient(app)
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}]}

    refused = client.post("/v1/chat/completions", json=chat)
    assert refused.status_code == 401
    assert API_KEY_ENV_VAR in refused.json()["error"]["message"]
    assert client.get("/v1/models").status_code == 401
    served = client.post(
        "/v1/chat/completions", json=chat, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert served.status_code == 200, served.text


def test_direct_streaming_ships_only_the_keys_digest_and_keeps_the_deployments_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(API_KEY_ENV_VAR, raising=False)
    open_name = _direct_streaming_deployment()._bound_deployment.name
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    deployment = _direct_streaming_deployment()
    pickled = cloudpickle.dumps(deployment._bound_deployment.func_or_class)

    assert KEY.encode() not in pickled
    assert key_digest(KEY) in pickled
    assert deployment._bound_deployment.name == open_name == "LLMServer:tiny"


def test_without_the_variable_direct_streaming_serves_without_a_key_and_warns_mock_engine(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(API_KEY_ENV_VAR, raising=False)
    with caplog.at_level(logging.WARNING, logger="ray_serve_npu.ingress"):
        app = _direct_streaming_app(_direct_streaming_deployment())

    assert TestClient(app).get("/v1/models").status_code == 200
    assert f"{API_KEY_ENV_VAR} is not set" in caplog.text


def test_rays_dp_and_pd_builders_hold_the_keyed_builder_mock_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both import the builder by name from the core builder module.
    keyed_builder = ray_builder._build_direct_streaming_llm_deployment
    assert keyed_builder.__wrapped__.__module__ == ray_builder.__name__
    assert ray_dp_builder._build_direct_streaming_llm_deployment is keyed_builder
    assert ray_pd_builder._build_direct_streaming_llm_deployment is keyed_builder
    # The data-parallel builder's server class, keyed.
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    deployment = _direct_streaming_deployment(deployment_cls=DPServer)

    assert deployment._bound_deployment.name == "DPServer:tiny"
    assert issubclass(deployment._bound_deployment.func_or_class, DPServer)
    refused = TestClient(_direct_streaming_app(deployment)).get("/v1/models")
    assert refused.status_code == 401


def _builder_module(ray_build: Any) -> types.ModuleType:
    """A stand-in for Ray's core builder module, holding ``ray_build``."""
    module = types.ModuleType("builder")
    module._build_direct_streaming_llm_deployment = ray_build
    module.LLMServer = LLMServer
    return module


def _server_class_given(llm_config: Any, **kwargs: Any) -> Any:
    """A stand-in for Ray's direct-streaming builder: the server class it was handed."""
    return kwargs.get("deployment_cls")


@pytest.mark.parametrize("importer_name", builder_patch.DIRECT_STREAMING_IMPORTERS)
def test_a_late_activation_rebinds_the_builders_that_imported_rays_builder(
    monkeypatch: pytest.MonkeyPatch, importer_name: str
) -> None:
    # One of Ray's builders, imported before the plugin activated.
    importer = types.ModuleType(importer_name)
    importer._build_direct_streaming_llm_deployment = _server_class_given
    monkeypatch.setitem(sys.modules, importer_name, importer)
    core = _builder_module(_server_class_given)
    builder_patch.protect_direct_streaming(core)
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)

    keyed_builder = core._build_direct_streaming_llm_deployment
    assert importer._build_direct_streaming_llm_deployment is keyed_builder
    server_cls = importer._build_direct_streaming_llm_deployment(make_llm_config())
    assert issubclass(server_cls, LLMServer) and server_cls is not LLMServer


def test_a_server_class_that_cant_carry_the_key_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class NoAppHook:
        pass

    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)

    with pytest.raises(ValueError, match=f"{API_KEY_ENV_VAR} is set, but NoAppHook .* Fix:"):
        _direct_streaming_deployment(deployment_cls=NoAppHook)


def test_an_unknown_models_404_names_the_served_models_and_the_fix() -> None:
    # The 404 patch on Ray's own ingress class, without a cluster.
    ingress = object.__new__(ray_ingress.OpenAiIngress)
    ingress._model_cards = {"deepseek-v4-flash": None, "qwen3-8b": None}
    with pytest.raises(ray_ingress.HTTPException) as raised:
        asyncio.run(ingress._get_model_id("deepseek-v3"))
    assert raised.value.status_code == 404
    assert '"deepseek-v3"' in raised.value.detail
    assert "Served models: ['deepseek-v4-flash', 'qwen3-8b']" in raised.value.detail
    assert 'Fix: set "model" to one of them' in raised.value.detail
    # A served model passes through Ray's own lookup.
    assert asyncio.run(ingress._get_model_id("qwen3-8b")) == "qwen3-8b"


class _StandInHandle:
    """What the router's constructor asks of the engine deployment's handle."""

    def _init(self) -> None:
        pass


def _router_deployment() -> Any:
    """The request router's deployment as Ray's builder makes it beside the engine's."""
    kwargs: dict[str, Any] = {"server": _direct_streaming_deployment()}
    if (
        "llm_config"
        in inspect.signature(ray_builder._build_openai_ingress_request_router).parameters
    ):
        kwargs["llm_config"] = make_llm_config()  # from Ray 2.57.1
    return ray_builder._build_openai_ingress_request_router(**kwargs)


def _router_app(deployment: Any) -> FastAPI:
    """The app a replica of the router ``deployment`` serves: its class pickled as Serve
    ships it, constructed as Serve constructs it, with a stand-in for the engine's handle."""
    router = _unconstructed_replica(deployment)
    asyncio.run(router.__init__(server=_StandInHandle()))
    return router.app


def test_direct_streaming_requires_the_key_on_the_request_routers_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    app = _router_app(_router_deployment())
    assert app.user_middleware[0].cls is ApiKeyMiddleware
    client = TestClient(app, raise_server_exceptions=False)

    refused = client.post("/internal/route", json={})
    assert refused.status_code == 401
    assert API_KEY_ENV_VAR in refused.json()["error"]["message"]
    wrong = client.post("/internal/route", json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    # With the key, the request reaches Ray's handler, which the stand-in handle fails.
    keyed = client.post("/internal/route", json={}, headers={"Authorization": f"Bearer {KEY}"})
    assert keyed.status_code not in {401, 404}, keyed.text


def test_the_keyed_router_ships_only_the_keys_digest_keeps_its_name_and_ray_gets_its_class_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(API_KEY_ENV_VAR, raising=False)
    open_deployment = _router_deployment()._bound_deployment
    assert open_deployment.func_or_class is ray_router.LLMRouter
    monkeypatch.setenv(API_KEY_ENV_VAR, KEY)
    deployment = _router_deployment()._bound_deployment
    pickled = cloudpickle.dumps(deployment.func_or_class)

    assert KEY.encode() not in pickled
    assert key_digest(KEY) in pickled
    assert deployment.name == open_deployment.name == "LLMRouter"
    assert issubclass(deployment.func_or_class, ray_router.LLMRouter)
    # Ray's module has its own class back once the builder ran.
    assert ray_router.LLMRouter is open_deployment.func_or_class


def test_rays_dp_and_pd_builders_hold_the_keyed_router_builder() -> None:
    keyed_builder = ray_builder._build_openai_ingress_request_router
    assert keyed_builder.__wrapped__.__module__ == ray_builder.__name__
    assert ray_dp_builder._build_openai_ingress_request_router is keyed_builder
    assert ray_pd_builder._build_openai_ingress_request_router is keyed_builder
