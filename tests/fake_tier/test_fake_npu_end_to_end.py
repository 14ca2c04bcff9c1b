"""End to end on the fake-NPU tier: real Ray, Ray Serve LLM, vLLM (CPU build) and HTTP;
fake NPU resources and a tiny random model.

The app is the site's own recipe, recipes/serve_npu.py, run as the page runs it, on a
cluster under Ray's token authentication (test_fake_npu_token_auth.py checks that it
refuses drivers without the token).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai import OpenAI

from ray_serve_npu.hardware import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.testing.fake_tier import FakeNPUTier
from ray_serve_npu.testing.processes import ProcessServer

RECIPES = Path(__file__).parents[2] / "recipes"
MODEL_ID = "deepseek-v4-flash"
PORT = 8000

pytestmark = pytest.mark.fake_npu


@pytest.fixture(scope="module")
def server(tier: FakeNPUTier) -> Iterator[ProcessServer]:
    with tier.serve("python serve_npu.py", cwd=RECIPES, port=PORT) as server:
        yield server


@pytest.fixture
def client(server: ProcessServer) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1", api_key="not-used")


def _curl(*args: str) -> str:
    return subprocess.run(
        ["curl", "-sS", "--fail-with-body", "--max-time", "120", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_fake_npu_models_lists_the_served_model_id(server: ProcessServer) -> None:
    models = json.loads(_curl(f"{server.base_url}/v1/models"))
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == [MODEL_ID]


def test_fake_npu_chat_completion_with_curl(server: ProcessServer) -> None:
    body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    reply = json.loads(
        _curl(
            f"{server.base_url}/v1/chat/completions",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps(body),
        )
    )
    assert reply["object"] == "chat.completion"
    assert reply["model"] == MODEL_ID
    (choice,) = reply["choices"]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in {"length", "stop"}
    assert 0 < reply["usage"]["completion_tokens"] <= 8


def test_fake_npu_chat_stream_with_curl_ends_with_done(server: ProcessServer) -> None:
    body = {
        "model": MODEL_ID,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 8,
        "stream": True,
    }
    stream = _curl(
        "-N",
        f"{server.base_url}/v1/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(body),
    )
    events = [
        line.removeprefix("data: ") for line in stream.splitlines() if line.startswith("data: ")
    ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert chunks and all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert all(chunk["model"] == MODEL_ID for chunk in chunks)


def test_fake_npu_openai_client_chat_completion_and_stream(client: OpenAI) -> None:
    reply = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
    )
    assert reply.model == MODEL_ID
    assert reply.choices[0].message.role == "assistant"
    stream = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, stream=True
    )
    chunks = list(stream)
    assert chunks and chunks[-1].choices[0].finish_reason in {"length", "stop"}


def test_fake_npu_openai_client_completion(client: OpenAI) -> None:
    reply = client.completions.create(model=MODEL_ID, prompt="Ray Serve", max_tokens=8)
    assert reply.object == "text_completion"
    assert reply.model == MODEL_ID
    assert isinstance(reply.choices[0].text, str)
    assert 0 < reply.usage.completion_tokens <= 8


def test_fake_npu_engine_worker_saw_the_npu_ray_assigned(
    tier: FakeNPUTier, server: ProcessServer
) -> None:
    # Records written by the engine's Ray workers (ray_serve_npu.testing.vllm_plugins).
    records = [json.loads(path.read_text()) for path in tier.device_record_dir.glob("*.json")]
    workers = [record for record in records if record["ray_npu_ids"]]
    assert workers, f"no engine worker held an NPU: {records}"
    for record in workers:
        assert record[VISIBLE_DEVICES_ENV_VAR] == ",".join(record["ray_npu_ids"])


def test_fake_npu_recipe_fails_clearly_without_the_plugin(
    tier: FakeNPUTier, server: ProcessServer
) -> None:
    # The same recipe with the plugin switched off: Ray Serve LLM alone refuses
    # the npu kind at once, with pydantic's message naming it. (Uses another port;
    # it never gets to bind one.)
    result = subprocess.run(
        ["python", "serve_npu.py"],
        cwd=RECIPES,
        env={**os.environ, **tier.env(), "RAY_SERVE_NPU_DISABLE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "ray_serve_npu is disabled by RAY_SERVE_NPU_DISABLE" in result.stderr
    assert (
        "Input tag 'npu' found using 'kind' does not match any of the expected tags"
        in result.stderr
    )
