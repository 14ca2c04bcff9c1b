"""The A3 Compose file (recipes/docker-compose-a3.yaml) served directly, as a reader dry-runs it.

``ray-serve-npu dry-run --node-kind A3 docker-compose-a3.yaml --keep-serving`` starts a
fake A3 node, runs the service's ``vllm serve`` on vLLM's CPU build with the service's
environment (its API key too), sends one authenticated chat request and keeps serving.
The adapter keeps the four data-parallel ranks (one CPU worker each instead of four) and
serves the tiny mixture-of-experts model; expert parallel is dropped, with its reason.
What is real: vLLM's data-parallel engine (four engine cores behind one API server), the
OpenAI endpoint and its key. No Docker and no Ray executor: the Compose path has neither.
"""

from __future__ import annotations

import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from dry_runs import dry_run_serving

from ray_serve_npu.fake_npu.dry_run import STOPPED_LINE, DryRunProcess
from ray_serve_npu.releases import COMPOSE_RELEASE

COMPOSE = "docker-compose-a3.yaml"
MODEL_ID = "deepseek-v4-flash"
BASE_URL = "http://127.0.0.1:8000"
#: Measured here: the module's tests take about 100 s on two cores, the dry-run's start most.
READY_TIMEOUT_S = 600
STOP_TIMEOUT_S = 180

pytestmark = pytest.mark.fake_npu


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DryRunProcess]:
    with dry_run_serving(
        ["--node-kind", "A3", COMPOSE], tmp_path_factory, ready_timeout_s=READY_TIMEOUT_S
    ) as run:
        yield run


def _get(path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{BASE_URL}{path}", timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_fake_a3_compose_answers_the_dry_runs_chat_request(dry_run: DryRunProcess) -> None:
    output = dry_run.output()
    assert "fake-npu tier: 1 fake A3 node(s)" in output
    assert f"running `docker compose -f {COMPOSE} up -d`" in output
    assert f"/v1 serves {MODEL_ID!r}; a chat request got:" in output
    reply = dry_run.chat_reply()
    assert reply["model"] == MODEL_ID
    assert reply["choices"][0]["message"]["role"] == "assistant"
    assert 0 < reply["usage"]["completion_tokens"] <= 8


def test_fake_a3_compose_runs_the_four_data_parallel_ranks(dry_run: DryRunProcess) -> None:
    # vLLM labels its metrics by engine core: one per data-parallel rank.
    status, metrics = _get("/metrics")
    assert status == 200
    engines = set(re.findall(r'^vllm:num_requests_running\{[^}]*engine="(\d+)"', metrics, re.M))
    assert engines == {str(rank) for rank in range(COMPOSE_RELEASE.run("A3").data_parallel_size)}
    served = re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)", metrics, re.M)
    assert sum(float(count) for count in served) >= 1


def test_fake_a3_compose_keeps_the_services_api_key(dry_run: DryRunProcess) -> None:
    # VLLM_API_KEY from OPENAI_API_KEY, as the Compose file sets it: no key, no answer.
    status, _ = _get("/v1/models")
    assert status == 401


def test_fake_a3_compose_adapter_says_what_it_changed(dry_run: DryRunProcess) -> None:
    output = dry_run.output()
    assert "vllm serve MODEL: '/models/DeepSeek-V4-Flash-w8a8-mtp' -> " in output
    # DeepSeek-V4's class has no tiny model; data parallel needs experts: the MoE one.
    assert (
        "(a tiny random mixture-of-experts model stands in for the weights, as vLLM refuses "
        "data parallel for a dense model; the fake tier has no tiny model of its architecture "
        "class `hybrid-attention-moe` (docs/models.md says why))"
    ) in output
    assert "vllm serve --tensor-parallel-size: '4' -> 1 (one CPU engine worker per" in output
    assert "dropped vllm serve --enable-expert-parallel=True (vLLM's CPU build crashes" in output
    # Kept as written: the ranks and the one API server.
    assert "--data-parallel-size" not in output
    assert "--api-server-count" not in output


def test_fake_a3_compose_stops_on_ctrl_c(dry_run: DryRunProcess) -> None:
    dry_run.process.send_signal(signal.SIGINT)
    assert dry_run.process.wait(timeout=STOP_TIMEOUT_S) == 0, dry_run.output()[-6000:]
    assert STOPPED_LINE in dry_run.output()
