"""Bad requests on the fake NPU tier: a 4xx that names what is wrong; the app keeps serving.

Real Ray Serve LLM, plugin and vLLM (CPU build); fake NPUs and a tiny random model.
"""

from __future__ import annotations

from typing import Any

import pytest

from ray_serve_npu.fake_npu.adapter import FAKE_MAX_MODEL_LEN

from .fake_serving import MODEL_ID, ServedApp, chat_body, post_json

pytestmark = pytest.mark.fake_npu

CHAT = "/v1/chat/completions"


def _error_message(body: dict[str, Any]) -> str:
    """The message of an OpenAI-style error, or of FastAPI's ``{"detail": ...}``."""
    if "error" in body:
        return str(body["error"]["message"])
    return str(body["detail"])


def _assert_still_serving(app: ServedApp) -> None:
    reply = post_json(app.base_url, CHAT, chat_body(max_tokens=4))
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.parametrize(
    ("body", "names"),
    [
        pytest.param(
            b'{"model": "deepseek-v4-flash", "messages": [', ["JSON"], id="malformed-json"
        ),
        pytest.param(chat_body(max_tokens=-1), ["max_tokens", "-1"], id="negative-max-tokens"),
        pytest.param(
            chat_body("word " * (2 * FAKE_MAX_MODEL_LEN), max_tokens=4),
            ["maximum context length", str(FAKE_MAX_MODEL_LEN)],
            id="prompt-over-max-model-len",
        ),
    ],
)
def test_fake_npu_bad_request_gets_400_that_names_the_problem(
    app: ServedApp, body: Any, names: list[str]
) -> None:
    reply = post_json(app.base_url, CHAT, body)
    assert reply.status_code == 400, reply.text
    message = _error_message(reply.json())
    for name in names:
        assert name in message
    _assert_still_serving(app)


def test_fake_npu_unknown_model_gets_404_that_names_it(app: ServedApp) -> None:
    reply = post_json(app.base_url, CHAT, {**chat_body(max_tokens=4), "model": "deepseek-v3"})
    assert reply.status_code == 404, reply.text
    assert '"deepseek-v3"' in _error_message(reply.json())
    _assert_still_serving(app)


def test_fake_npu_unknown_model_404_lists_the_served_models(app: ServedApp) -> None:
    reply = post_json(app.base_url, CHAT, {**chat_body(max_tokens=4), "model": "deepseek-v3"})
    assert reply.status_code == 404, reply.text
    assert MODEL_ID in _error_message(reply.json())
