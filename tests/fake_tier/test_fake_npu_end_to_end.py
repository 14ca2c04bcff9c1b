"""End to end on the fake-NPU tier: real Ray, Ray Serve LLM, vLLM (CPU build) and HTTP;
fake NPU resources and a tiny random model.

The app is the site's own recipe, recipes/serve_npu.py, served the way a reader
dry-runs it: ``ray-serve-npu dry-run serve_npu.py --keep-serving`` starts a fake
cluster under Ray's token authentication, runs the recipe as its page does and keeps it
up; these tests send their requests to it, connect drivers to its cluster with and
without the token, and the last one stops it with Ctrl+C, as a reader would. One
cluster and one engine serve the whole module.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dry_runs import RECIPES, dry_run_serving, serving_cluster
from openai import OpenAI

from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.fake_npu.dry_run import STOPPED_LINE, DryRunProcess

MODEL_ID = "deepseek-v4-flash"
BASE_URL = "http://127.0.0.1:8000"
READY_TIMEOUT_S = 600
STOP_TIMEOUT_S = 180

pytestmark = pytest.mark.fake_npu

DRIVER = "import ray; ray.init(logging_level='ERROR'); print('connected', len(ray.nodes()))"
#: Ray's driver retries the GCS about once a second, 20 times by default
#: (``NUM_REDIS_GET_RETRIES``, ``ray/_private/ray_constants.py``); a refused driver
#: need not wait that long here.
QUICK_REFUSAL = {"RAY_NUM_REDIS_GET_RETRIES": "2"}
#: What Ray's GCS answers a call without the cluster's token (an InvalidAuthToken status).
REFUSED = "Authentication token is missing or incorrect"


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DryRunProcess]:
    with dry_run_serving(
        ["serve_npu.py"], tmp_path_factory, ready_timeout_s=READY_TIMEOUT_S
    ) as run:
        yield run


@pytest.fixture
def client(dry_run: DryRunProcess) -> OpenAI:
    return OpenAI(base_url=f"{BASE_URL}/v1", api_key="not-used")


def _curl(*args: str) -> str:
    return subprocess.run(
        ["curl", "-sS", "--fail-with-body", "--max-time", "120", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_fake_npu_models_lists_the_served_model_id(dry_run: DryRunProcess) -> None:
    models = json.loads(_curl(f"{BASE_URL}/v1/models"))
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == [MODEL_ID]


def test_fake_npu_chat_completion_with_curl(dry_run: DryRunProcess) -> None:
    body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    reply = json.loads(
        _curl(
            f"{BASE_URL}/v1/chat/completions",
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


def test_fake_npu_chat_stream_with_curl_ends_with_done(dry_run: DryRunProcess) -> None:
    body = {
        "model": MODEL_ID,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 8,
        "stream": True,
    }
    stream = _curl(
        "-N",
        f"{BASE_URL}/v1/chat/completions",
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


def test_fake_npu_engine_worker_saw_the_npu_ray_assigned(dry_run: DryRunProcess) -> None:
    # dry-run prints, for each engine worker that holds NPUs, the ids Ray assigned
    # and the visibility variable the worker saw.
    pattern = rf"engine worker \d+ holds NPU ([\d,]+); {VISIBLE_DEVICES_ENV_VAR}=(\S+)"
    workers = re.findall(pattern, dry_run.output())
    assert workers, f"no engine worker held an NPU:\n{dry_run.output()[-4000:]}"
    for assigned, visible in workers:
        assert visible == assigned


def _driver(dry_run: DryRunProcess, home: Path, **changes: str) -> subprocess.CompletedProcess[str]:
    """A driver of the dry-run's cluster, with the token the cluster's nodes were given."""
    # An empty home: no ~/.ray/auth_token of the machine's user can stand in.
    env = {**os.environ, **serving_cluster(dry_run).driver_env, "HOME": str(home)}
    env = {**env, **QUICK_REFUSAL, **changes}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=120
    )


def test_fake_npu_driver_with_the_token_connects(dry_run: DryRunProcess, tmp_path: Path) -> None:
    result = _driver(dry_run, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == ["connected", "1"]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"RAY_AUTH_TOKEN": "0" * 64}, id="wrong-token"),
        # A driver that doesn't take part in token authentication sends none.
        pytest.param({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": ""}, id="no-token"),
    ],
)
def test_fake_npu_cluster_refuses_a_driver_without_its_token(
    dry_run: DryRunProcess, tmp_path: Path, changes: dict[str, str]
) -> None:
    result = _driver(dry_run, tmp_path, **changes)
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


def test_fake_npu_dry_run_says_what_it_changed_and_stops_cleanly_on_ctrl_c(
    dry_run: DryRunProcess,
) -> None:
    # Last in the module: it stops the server the tests above share.
    dry_run.process.send_signal(signal.SIGINT)
    assert dry_run.process.wait(timeout=STOP_TIMEOUT_S) == 0, dry_run.output()[-6000:]
    output = dry_run.output()
    assert f"serves '{MODEL_ID}'" in output
    assert '"object": "chat.completion"' in output
    assert STOPPED_LINE in output
    # Every setting the fake tier dropped is said on the command's own output.
    assert "fake-npu tier: dropped engine_kwargs.quantization='ascend'" in output
