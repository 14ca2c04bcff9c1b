"""The proxy levers' arms served as the bench serves them: fake NPU clusters, mock engine.

No vLLM engine starts, so the test runs in the fast tier, in the worker that runs the
tests that start Ray one at a time (its ``arm_clusters`` fixture groups it there:
ray_serve_npu_tooling.worker_groups).

``serve_arms`` starts each arm's fake cluster with its Serve flags and deploys the
recipe's app on it, here with the streaming mock engine in place of vLLM's (the
test is about where clients reach the app, not about the engine). The HAProxy arm
once never deployed: Serve listened on the fake node's own address while HAProxy
checked the replica at 127.0.0.1, so ``serve.run`` gave up with "Proxies not
available after 60s."

Direct streaming serves the app the engine's replica builds, behind HAProxy; its arm
here runs with the plugin's API key set where the app is built, as a reader would
run it, to show the key holds on that path too.

While the arms serve, the test reads the listening sockets of each HAProxy the clusters
run: Serve's HTTP host here is 127.0.0.1, and with the plugin's patch of Serve's HAProxy
template every socket HAProxy listens on, statistics and metrics included, is there too.
It also asks the ingress request router of the keyed arm, on the port HAProxy's Lua
calls it at, without the key: it refuses. Through HAProxy, the refused chat request
shows that a request the router refuses ends in the plugin's 401, not in HAProxy's 503.
That the Lua passes the client's key on to the router is shown in
tests/plugin/test_request_router_lua.py, with a router that records what it gets.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import psutil
import pytest
from ray_serve_npu_tooling.bench.capacity import with_mock_engine
from ray_serve_npu_tooling.bench.levers import LEVERS
from ray_serve_npu_tooling.bench.paths import recipe_fields, serve_arms

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.ingress import fresh_api_key

#: One arm behind HAProxy, one with clients on the ingress replica's own port.
ARMS = ("ha-proxy", "direct-ingress")
#: Behind HAProxy too, on the same fake cluster, with the API key.
KEYED_ARM = "direct-streaming"


def haproxies() -> list[psutil.Process]:
    """The HAProxy processes of this test's fake clusters, which run under this process."""
    return [
        child for child in psutil.Process().children(recursive=True) if child.name() == "haproxy"
    ]


def assert_haproxy_listens_on_loopback_only(running: list[psutil.Process]) -> None:
    """Its frontend, statistics and metrics on 127.0.0.1; its admin socket its owner's.

    Across every HAProxy process of the cluster: one that Serve's reload left to finish
    its connections may still hold some of the sockets.
    """
    listening = {
        connection.laddr
        for haproxy in running
        for connection in haproxy.net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    }
    # At least Serve's HTTP frontend, the statistics page and the Prometheus exporter.
    assert len({address.port for address in listening}) >= 3, listening
    assert {address.ip for address in listening} == {"127.0.0.1"}, listening
    for haproxy in running:
        command = haproxy.cmdline()
        config = Path(command[command.index("-f") + 1]).read_text()
        admin_socket = re.search(r"^\s*stats socket (\S+) ", config, re.M)
        assert admin_socket, config
        assert stat.S_IMODE(os.stat(admin_socket.group(1)).st_mode) == 0o600


def request_routers(running: list[psutil.Process]) -> set[str]:
    """The base URLs of the ingress request routers that HAProxy's Lua asks: the routers
    table of the Lua file that Serve writes beside each HAProxy's config."""
    urls = set()
    for haproxy in running:
        command = haproxy.cmdline()
        lua = Path(command[command.index("-f") + 1]).parent / "ingress_request_router.lua"
        if lua.exists():
            routers = re.search(r"^local ROUTERS = (\{.*?^\})", lua.read_text(), re.M | re.S)
            assert routers, lua.read_text()
            found = re.findall(r'host = "([^"]+)", port = (\d+)', routers.group(1))
            urls |= {f"http://{host}:{port}" for host, port in found}
    return urls


@pytest.fixture
def arm_clusters() -> Iterator[contextlib.ExitStack]:
    """Where ``serve_arms`` keeps the arms' fake clusters; each stops at the test's end."""
    with contextlib.ExitStack() as clusters:
        yield clusters


def test_fake_npu_haproxy_direct_ingress_and_keyed_direct_streaming_arms_answer_mock_engine(
    tiny_model_dir: Path, tmp_path: Path, arm_clusters: contextlib.ExitStack
) -> None:
    fields = with_mock_engine(recipe_fields(tiny_model_dir))
    model = fields["model_loading_config"]["model_id"]
    chat_body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    key = fresh_api_key()
    streaming = LEVERS[KEYED_ARM]
    keyed = streaming.model_copy(
        update={"build_env": {**streaming.build_env, API_KEY_ENV_VAR: key}}
    )
    urls = serve_arms([*(LEVERS[name] for name in ARMS), keyed], fields, tmp_path, arm_clusters)
    assert sorted(urls) == sorted([*ARMS, KEYED_ARM])
    keyed_url = urls.pop(KEYED_ARM)
    refused = httpx.post(f"{keyed_url}/v1/chat/completions", json=chat_body, timeout=60)
    assert refused.status_code == 401, refused.text
    assert API_KEY_ENV_VAR in refused.json()["error"]["message"]
    served = httpx.post(
        f"{keyed_url}/v1/chat/completions",
        json=chat_body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert served.status_code == 200, served.text
    assert served.json()["choices"][0]["message"]["content"]
    # Direct ingress: the replica's own port, not Serve's proxy's.
    proxy_port = json.loads((tmp_path / "deploy-direct-ingress.json").read_text())["port"]
    assert httpx.URL(urls["direct-ingress"]).port != proxy_port
    # The ha-proxy and direct-streaming arms share a cluster, and direct ingress runs
    # without HAProxy.
    running = haproxies()
    assert running, "no HAProxy is running"
    assert_haproxy_listens_on_loopback_only(running)
    # The keyed arm's request router, asked on its own port as HAProxy asks it.
    routers = request_routers(running)
    assert routers, "no HAProxy names an ingress request router"
    for router in routers:
        asked = httpx.post(f"{router}/internal/route", json={}, timeout=30)
        assert asked.status_code == 401, (router, asked.text)
    _assert_a_replica_lost_mid_stream_cuts_the_connection(keyed_url, chat_body, key)
    for name, url in urls.items():
        models = httpx.get(f"{url}/v1/models", timeout=30)
        assert models.status_code == 200, (name, models.text)
        assert [entry["id"] for entry in models.json()["data"]] == [model], name
        chat = httpx.post(f"{url}/v1/chat/completions", json=chat_body, timeout=60)
        assert chat.status_code == 200, (name, chat.text)
        assert chat.json()["choices"][0]["message"]["content"], name


def _assert_a_replica_lost_mid_stream_cuts_the_connection(
    url: str, chat_body: dict[str, Any], key: str
) -> None:
    """Kill the engine's replica while HAProxy streams its answer to the OpenAI client:
    with direct streaming there is no ingress to end the stream in an error event, and
    HAProxy ends the response without the last chunk, so the client raises instead of
    taking the answer for complete."""
    (replica,) = [
        child
        for child in psutil.Process().children(recursive=True)
        if f"ServeReplica:{KEYED_ARM}:LLMServer" in " ".join(child.cmdline())
    ]
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)
    chunks = client.chat.completions.create(**{**chat_body, "max_tokens": 10**6}, stream=True)
    texts = []
    with pytest.raises(openai.APIConnectionError) as raised:
        for chunk in chunks:
            if not texts:
                replica.kill()
            texts.append(chunk.choices[0].delta.content if chunk.choices else None)
    assert texts
    assert "incomplete chunked read" in str(raised.value.__cause__)
