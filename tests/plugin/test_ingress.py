"""The API key the plugin adds to Ray Serve LLM's OpenAI ingress.

They run on Ray's own ingress module, patched, with Starlette's test client: no
Ray cluster, no engine.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from ray.llm._internal.serve.core.ingress import ingress as ray_ingress
from starlette.testclient import TestClient

from ray_serve_npu.ingress import API_KEY_ENV_VAR

KEY = "test-key-4b1d"


def _ingress_app() -> FastAPI:
    """Ray's ingress app, as ``make_fastapi_ingress`` creates it, with one route."""
    app = ray_ingress.init()

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"data": []}

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
