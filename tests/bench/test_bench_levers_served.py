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

Direct streaming serves the app the engine's replica builds, behind HAProxy; its arm,
and the HAProxy arm that shares its cluster, run here with the plugin's API key set
where the app is built, as a reader would run them, to show the key holds on every port
of that cluster that serves the apps.

While the arms serve, the test reads every listening socket of the HAProxy cluster's
processes and finds each in the tuning page's table of the fast path's ports
(docs/tuning.md, "Ports of the fast path"), with the address the table gives; it asks
each port the table says needs the API key without it, and each whose health route the
table says answers without it. It reads the listening
sockets of each HAProxy the clusters run: Serve's HTTP host here is 127.0.0.1, and
with the plugin's patch of Serve's HAProxy template every socket HAProxy listens on,
statistics and metrics included, is there too.
It also asks the ingress request router of the keyed arm, on the port HAProxy's Lua
calls it at, without the key: it refuses. Through HAProxy, the refused chat request
shows that a request the router refuses ends in the plugin's 401, not in HAProxy's 503.
That the Lua passes the client's key on to the router is shown in
tests/plugin/test_request_router_lua.py, with a router that records what it gets.
Last, it kills the keyed arm's engine replica while it streams: with no ingress left to
send the error event, HAProxy cuts the response, and the OpenAI client raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import psutil
import pytest
from markdown_it import MarkdownIt
from ray_serve_npu_tooling.bench.capacity import with_mock_engine
from ray_serve_npu_tooling.bench.levers import LEVERS
from ray_serve_npu_tooling.bench.paths import recipe_fields, serve_arms

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.ingress import fresh_api_key

#: One arm behind HAProxy, one with clients on the ingress replica's own port.
HAPROXY_ARM = "ha-proxy"
ARMS = (HAPROXY_ARM, "direct-ingress")
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
    keyed = {
        name: LEVERS[name].model_copy(
            update={"build_env": {**LEVERS[name].build_env, API_KEY_ENV_VAR: key}}
        )
        for name in (HAPROXY_ARM, KEYED_ARM)
    }
    arms = [LEVERS[name] if name not in keyed else keyed[name] for name in ARMS]
    urls = serve_arms([*arms, keyed[KEYED_ARM]], fields, tmp_path, arm_clusters)
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
    _assert_the_ports_are_the_pages(keyed_url, key)
    _assert_a_replica_lost_mid_stream_cuts_the_connection(keyed_url, chat_body, key)
    authorized = {"Authorization": f"Bearer {key}"}
    for name, url in urls.items():
        models = httpx.get(f"{url}/v1/models", headers=authorized, timeout=30)
        assert models.status_code == 200, (name, models.text)
        assert [entry["id"] for entry in models.json()["data"]] == [model], name
        chat = httpx.post(
            f"{url}/v1/chat/completions", json=chat_body, headers=authorized, timeout=60
        )
        assert chat.status_code == 200, (name, chat.text)
        assert chat.json()["choices"][0]["message"]["content"], name


def _assert_a_replica_lost_mid_stream_cuts_the_connection(
    url: str, chat_body: dict[str, Any], key: str
) -> None:
    """Kill the engine's replica while HAProxy streams its answer to the OpenAI client:
    with direct streaming there is no ingress to end the stream in an error event, and
    HAProxy ends the response without the last chunk, so the client raises instead of
    taking the answer for complete."""
    replicas = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if f"ServeReplica:{KEYED_ARM}:LLMServer" in " ".join(child.cmdline()):
                replicas.append(child)
    (replica,) = replicas
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


#: The page that lists the fast path's ports, and the label of its section.
PORTS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "tuning.md"
PORTS_LABEL = "(tuning-fast-path-ports)="
#: The rows of that table, by what listens (its second column).
HAPROXY_FRONTEND = "HAProxy's frontend"
HAPROXY_STATS = "HAProxy's statistics page"
HAPROXY_METRICS = "HAProxy's Prometheus exporter"
FALLBACK_PROXY = "Serve's proxy, HAProxy's fallback"
ENGINE_REPLICA = "The engine's replica"
INGRESS_REPLICA = "Ray Serve LLM's OpenAI ingress replica, where direct streaming is off"
REQUEST_ROUTER = "The ingress request router's replica"
INTERNAL_GRPC = "Each Serve replica's gRPC server for calls between deployments"
RAYS_OWN = "Ray's processes, Serve's actors among them"
#: Serve's defaults at 2.60.0 (serve/_private/constants.py), which the cluster keeps.
FALLBACK_PROXY_PORT = 8500
DIRECT_INGRESS_PORTS = range(30000, 31001)
#: `ray start`'s default range of the workers' gRPC ports (ray/scripts/scripts.py).
WORKER_PORTS = range(10002, 20000)
#: The titles of Serve's actor processes, whose own ports are Serve's, not Ray's.
SERVE_ACTORS = ("ray::ServeReplica:", "ray::ProxyActor", "ray::ServeController", "ray::HAProxy")
#: The addresses of a socket on every interface.
EVERY_INTERFACE = {"::", "0.0.0.0"}
#: Where the arms' Serve listens: the loopback address (ray_serve_npu_tooling.bench.paths).
SERVE_HOST = "127.0.0.1"


def ports_table() -> dict[str, dict[str, str]]:
    """The rows of the page's table of the fast path's ports, by what listens."""
    text = PORTS_PAGE.read_text()
    section = text[text.index(PORTS_LABEL) + len(PORTS_LABEL) :]
    section = re.split(r"^\(\S+\)=$", section, maxsplit=1, flags=re.M)[0]  # to the next label
    rows: list[list[str]] = []
    tokens = MarkdownIt("commonmark").enable("table").parse(section)
    start = next(i for i, token in enumerate(tokens) if token.type == "table_open")
    end = next(i for i, token in enumerate(tokens) if token.type == "table_close")
    for token in tokens[start:end]:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline":
            rows[-1].append(token.content)
    header, *body = rows
    return {row[1]: dict(zip(header, row, strict=True)) for row in body}


def _listener(process: psutil.Process, port: int, haproxy_ports: dict[int, str]) -> str:
    """Which row of the page's table a socket that ``process`` listens on belongs to; an
    unlisted port of Serve's gets a name of its own, which no row has."""
    if process.name() == "haproxy":
        return haproxy_ports.get(port, f"an unlisted HAProxy port {port}")
    title = " ".join(process.cmdline())
    if not title.startswith(SERVE_ACTORS) or port in WORKER_PORTS:
        return RAYS_OWN
    if title.startswith("ray::ProxyActor") and port == FALLBACK_PROXY_PORT:
        return FALLBACK_PROXY
    if title.startswith("ray::ServeReplica:"):
        if port in DIRECT_INGRESS_PORTS:
            if ":LLMRouter" in title:
                return REQUEST_ROUTER
            return INGRESS_REPLICA if ":OpenAiIngress" in title else ENGINE_REPLICA
        return INTERNAL_GRPC
    return f"an unlisted port {port} of {title}"


#: A WebSocket handshake (RFC 6455, section 4.1): the key must refuse it before the
#: connection is upgraded, as it refuses a request.
WEBSOCKET_HANDSHAKE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def _status(
    method: str, url: str, key: str | None = None, headers: dict[str, str] | None = None
) -> int:
    """The status of a request without a body, with ``headers``, and ``key`` as the API key."""
    sent = {**(headers or {}), **({"Authorization": f"Bearer {key}"} if key else {})}
    return httpx.request(method, url, headers=sent, timeout=30).status_code


def _assert_the_ports_are_the_pages(keyed_url: str, key: str) -> None:
    """Every socket of the HAProxy cluster in the page's table, at the row's address; each
    port whose row wants the API key refuses a request and a WebSocket handshake without
    it, and each whose row names Serve's health route answers it without."""
    table = ports_table()
    # The cluster's processes inherited the variable from its start; the other arm's
    # cluster runs without HAProxy.
    cluster = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            environ = child.environ()
            if environ.get("RAY_SERVE_ENABLE_HA_PROXY") == "1":
                cluster.append((child, environ))
    haproxy_ports = {httpx.URL(keyed_url).port: HAPROXY_FRONTEND}
    for process, environ in cluster:
        if process.name() == "haproxy":
            haproxy_ports[int(environ["RAY_SERVE_HAPROXY_STATS_PORT"])] = HAPROXY_STATS
            haproxy_ports[int(environ["RAY_SERVE_HAPROXY_METRICS_PORT"])] = HAPROXY_METRICS
    listening: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for process, _ in cluster:
        with contextlib.suppress(psutil.NoSuchProcess):
            for connection in process.net_connections(kind="inet"):
                if connection.status == psutil.CONN_LISTEN:
                    address = (connection.laddr.ip, connection.laddr.port)
                    listening[_listener(process, address[1], haproxy_ports)].add(address)

    assert set(listening) == set(table), (sorted(listening), sorted(table))
    for row, addresses in listening.items():
        where, who = table[row]["Address"], table[row]["Who can reach it"]
        ips = {ip for ip, _ in addresses}
        if where == "Serve's HTTP host":
            assert ips == {SERVE_HOST}, (row, addresses)
        elif where == "Every interface":
            assert ips <= EVERY_INTERFACE, (row, addresses)
        elif where.startswith("`"):
            assert ips == {where.strip("`")}, (row, addresses)
        # Each app's route on a port that serves apps; the router's own on the router's.
        app = HAPROXY_ARM if row == INGRESS_REPLICA else KEYED_ARM
        method, route = (
            ("POST", "internal/route") if row == REQUEST_ROUTER else ("GET", f"{app}/v1/models")
        )
        for ip, port in addresses:
            base = f"http://{ip}:{port}"
            if "with the API key" in who:
                assert _status(method, f"{base}/{route}") == 401, (row, port)
                handshake = _status("GET", f"{base}/{route}", headers=WEBSOCKET_HANDSHAKE)
                assert handshake == 401, (row, port, "WebSocket")
                # With the key the handshake gets past the key to the app's WebSocket
                # handling, whatever that answers: so the server did read a WebSocket.
                keyed = _status("GET", f"{base}/{route}", key, headers=WEBSOCKET_HANDSHAKE)
                assert keyed != 401, (row, port, "WebSocket with the key")
                if row != REQUEST_ROUTER:  # its answer to a keyed request needs a body
                    assert _status(method, f"{base}/{route}", key) == 200, (row, port)
            if "`/-/healthz`" in who:
                assert _status("GET", f"{base}/-/healthz") == 200, (row, port)
