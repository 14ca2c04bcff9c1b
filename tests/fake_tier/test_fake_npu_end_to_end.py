"""End to end on the fake-NPU tier: real Ray, Ray Serve LLM, vLLM (CPU build) and HTTP;
fake NPU resources and a tiny random model.

The app is the site's own recipe, recipes/serve_npu.py, served by the block of
docs/npu-ascend.md that serves it, on the fake tier the pages run on, under Ray's token
authentication and with the API key the page exports. These tests need that server up
and no other: with ``--run-recipes`` they run right after the page and join the server
it leaves up (``fake_tier_servers``); run alone, they start it themselves.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from dry_runs import RECIPES
from openai import OpenAI
from ray_serve_npu_tooling.harness.blocks import named_block
from ray_serve_npu_tooling.harness.server_config import server_config
from ray_serve_npu_tooling.harness.servers import ServerKeeper
from ray_serve_npu_tooling.harness.tier import Server

from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.fake_npu.fake_tier import FakeNPUTier
from ray_serve_npu.fake_npu.vllm_plugins import engine_worker_records

MODEL_ID = "deepseek-v4-flash"
DOCS = RECIPES.parent / "docs"
#: The page whose server these tests join, and the name of its block that serves the app.
PAGE = "docs/npu-ascend.md"
APP_RUN = "app_run"

pytestmark = [pytest.mark.fake_npu, pytest.mark.joins_page(PAGE)]

DRIVER = "import ray; ray.init(logging_level='ERROR'); print('connected', len(ray.nodes()))"
#: Ray's driver retries the GCS about once a second, 20 times by default
#: (``NUM_REDIS_GET_RETRIES``, ``ray/_private/ray_constants.py``); a refused driver
#: need not wait that long here.
QUICK_REFUSAL = {"RAY_NUM_REDIS_GET_RETRIES": "2"}
#: What Ray's GCS answers a call without the cluster's token (an InvalidAuthToken status).
REFUSED = "Authentication token is missing or incorrect"


@pytest.fixture(scope="module")
def tier(fake_tier_servers: ServerKeeper) -> FakeNPUTier:
    assert isinstance(fake_tier_servers.tier, FakeNPUTier), fake_tier_servers.tier
    return fake_tier_servers.tier


@pytest.fixture(scope="module")
def server(fake_tier_servers: ServerKeeper) -> Server:
    """The page's server, as its block starts it: joined where the page left it up."""
    block = named_block(RECIPES.parent / PAGE, DOCS, APP_RUN)
    port = server_config(block, RECIPES).port
    return fake_tier_servers.serve(block.text, cwd=RECIPES, port=port)


@pytest.fixture
def key(tier: FakeNPUTier) -> str:
    """The API key the page exports and the server was started with."""
    return tier.api_key


@pytest.fixture
def client(server: Server, key: str) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1", api_key=key)


def _bearer(key: str) -> tuple[str, str]:
    return ("-H", f"Authorization: Bearer {key}")


def _curl(*args: str) -> str:
    return subprocess.run(
        ["curl", "-sS", "--fail-with-body", "--max-time", "120", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_fake_npu_models_lists_the_served_model_id(server: Server, key: str) -> None:
    models = json.loads(_curl(f"{server.base_url}/v1/models", *_bearer(key)))
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == [MODEL_ID]


def test_fake_npu_server_prints_the_ready_line_the_pages_tell_readers_to_wait_for(
    server: Server,
) -> None:
    shown = named_block(RECIPES.parent / PAGE, DOCS, "app_ready").text.strip()
    # The page writes `...` for what varies (the time, the source line).
    pattern = ".*".join(re.escape(part) for part in shown.split("..."))
    assert re.search(pattern, server.logs()), (shown, server.logs()[-2000:])


def test_fake_npu_chat_completion_with_curl(server: Server, key: str) -> None:
    body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    reply = json.loads(
        _curl(
            f"{server.base_url}/v1/chat/completions",
            *_bearer(key),
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


def test_fake_npu_chat_stream_with_curl_ends_with_done(server: Server, key: str) -> None:
    body = {
        "model": MODEL_ID,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 8,
        "stream": True,
    }
    stream = _curl(
        "-N",
        f"{server.base_url}/v1/chat/completions",
        *_bearer(key),
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


def test_fake_npu_engine_worker_saw_the_npu_ray_assigned(tier: FakeNPUTier, server: Server) -> None:
    # Each engine worker that holds NPUs records the ids Ray assigned and the visibility
    # variable it saw; the server's are the workers alive now (the tier's record
    # directory keeps those of servers stopped before it too).
    workers = [
        record
        for record in engine_worker_records(tier.device_record_dir)
        if psutil.pid_exists(record["pid"])
    ]
    assert workers, f"no engine worker held an NPU:\n{server.logs()[-4000:]}"
    for record in workers:
        assert record[VISIBLE_DEVICES_ENV_VAR] == ",".join(record["ray_npu_ids"])


def _driver(tier: FakeNPUTier, home: Path, **changes: str) -> subprocess.CompletedProcess[str]:
    """A driver of the tier's cluster, with the token the cluster's nodes were given."""
    # An empty home: no ~/.ray/auth_token of the machine's user can stand in.
    env = {**os.environ, **tier.cluster.env(), "HOME": str(home)}
    env = {**env, **QUICK_REFUSAL, **changes}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=120
    )


def test_fake_npu_driver_with_the_token_connects(tier: FakeNPUTier, tmp_path: Path) -> None:
    result = _driver(tier, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == ["connected", str(len(tier.cluster.nodes))]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"RAY_AUTH_TOKEN": "0" * 64}, id="wrong-token"),
        # A driver that doesn't take part in token authentication sends none.
        pytest.param({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": ""}, id="no-token"),
    ],
)
def test_fake_npu_cluster_refuses_a_driver_without_its_token(
    tier: FakeNPUTier, tmp_path: Path, changes: dict[str, str]
) -> None:
    result = _driver(tier, tmp_path, **changes)
    assert result.returncode != 0
    assert "connected" not in result.stdout
    assert REFUSED in result.stderr, result.stderr[-3000:]


def test_fake_npu_recipe_fails_clearly_without_the_plugin() -> None:
    # The same recipe with the plugin switched off: Ray Serve LLM alone refuses
    # the npu kind while the recipe builds its config, before it reaches a cluster.
    result = subprocess.run(
        [sys.executable, "serve_npu.py"],
        cwd=RECIPES,
        env={**os.environ, "RAY_SERVE_NPU_DISABLE": "1", "RAY_AUTH_MODE": "disabled"},
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


def test_fake_npu_tier_says_what_it_dropped_in_the_servers_output(server: Server) -> None:
    # Every setting the fake tier dropped is said in the output of the command that
    # deployed the app, where the reader of the page would see it.
    assert "fake-npu tier: dropped engine_kwargs.quantization='ascend'" in server.logs()
