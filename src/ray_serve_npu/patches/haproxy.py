"""Patches ``ray.serve._private.haproxy``: HAProxy asks the request router with the client's key.

Why: with direct streaming behind HAProxy, HAProxy's Lua action asks Ray Serve LLM's
ingress request router (``POST /internal/route``, on a port of its own on Serve's HTTP
host) which engine replica takes each request, and sends it none of the client's
headers but a session id and a request id. The plugin requires the API key on that
router too (:mod:`ray_serve_npu.patches.builder`), so HAProxy must pass the client's
``Authorization`` on. A refusal by the plugin's key middleware (a 401 that names
:data:`~ray_serve_npu.envs.API_KEY_ENV_VAR`) leaves the request to HAProxy's backend,
the engine replicas, whose keyed app refuses it with the plugin's 401; Ray's Lua would
turn it into a 503 "Ingress request router failed: router_non_200", as it still does
any other refusal of a router.
Upstream: none yet.
Goes: when Serve's request router authenticates HAProxy's calls, or Ray Serve LLM's
direct streaming requires a key of its own.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from types import ModuleType

from ray_serve_npu.envs import API_KEY_ENV_VAR

#: Each change to Ray's ``ingress_request_router.lua.tmpl``: the line the plugin looks
#: for, one per Ray that writes it otherwise, mapped to the lines it writes instead.
#: Read in Ray's wheels (``ray/serve/_private/``): the function at line 25 (2.56.1,
#: 2.57.1) and 32 (2.58.1, 2.60.0); the header at 48 and 60; the call at 144 and 184;
#: the answer's check at 149 and 193.
LUA_EDITS: tuple[dict[str, str], ...] = (
    {
        "local function call_router(router, body, truncated_length, session_id)": (
            "local function call_router(router, body, truncated_length, session_id, authorization)"
        ),
        "local function call_router(router, body, truncated_length, session_id, request_id)": (
            "local function call_router(router, body, truncated_length, session_id, "
            "request_id, authorization)"
        ),
    },
    {
        '        .. "Content-Type: application/json\\r\\n"': (
            '        .. "Content-Type: application/json\\r\\n"\n'
            "        -- ray-serve-npu: the client's key, for the router that requires it.\n"
            '        .. (authorization and ("Authorization: " .. authorization .. "\\r\\n") '
            'or "")'
        ),
    },
    {
        "    local response = call_router(router, body, truncated, session_id)": (
            "    local response = call_router(router, body, truncated, session_id,\n"
            '        (txn.http:req_get_headers()["authorization"] or {})[0])'
        ),
        "        response = call_router(router, body, truncated, session_id, request_id)": (
            "        response = call_router(router, body, truncated, session_id, request_id,\n"
            '            (txn.http:req_get_headers()["authorization"] or {})[0])'
        ),
    },
    {
        "    if not is_http_200(response) then": (
            "    -- ray-serve-npu: a router whose key middleware refused the key leaves the\n"
            "    -- request to the backend, whose keyed app refuses it too, with its 401.\n"
            '    if response:match("^HTTP/[%d%.]+ 401") and response:find('
            f'"{API_KEY_ENV_VAR}", 1, true) then\n'
            "        return\n"
            "    end\n"
            "    if not is_http_200(response) then"
        ),
    },
)


class LuaTemplateChangedError(RuntimeError):
    """Serve's request-router Lua template lacks a line that the plugin changes."""


def _patched_lua(template: str) -> str:
    """``template`` with every edit of :data:`LUA_EDITS`.

    Raises :class:`LuaTemplateChangedError` naming the first edit none of whose lines
    the template has.
    """
    lines = template.split("\n")
    replacements: dict[str, str] = {}
    for edit in LUA_EDITS:
        found = [line for line in edit if line in lines]
        if not found:
            raise LuaTemplateChangedError(next(iter(edit)))
        replacements.update({line: edit[line] for line in found})
    return "\n".join(replacements.get(line, line) for line in lines)


def forward_the_key_to_the_request_router(module: ModuleType) -> None:
    """Render Serve's request-router Lua with the edits of :data:`LUA_EDITS`.

    A Ray whose template lacks one of them fails where the router runs, when HAProxy
    renders it, with the fix; without direct streaming nothing renders it.
    """
    load_ray_template: Callable[[], string.Template] = module._load_lua_template

    def _load_lua_template() -> string.Template:
        template = load_ray_template().template
        try:
            return string.Template(_patched_lua(template))
        except LuaTemplateChangedError as error:
            import ray

            from ray_serve_npu.compat import TESTED_RAY

            raise LuaTemplateChangedError(
                "ray-serve-npu passes the client's API key to Ray Serve LLM's request "
                f"router, but Ray {ray.__version__}'s template "
                "(ray/serve/_private/ingress_request_router.lua.tmpl) has no line "
                f"{error.args[0]!r}. Fix: install a Ray that ray-serve-npu is tested with "
                f"({', '.join(TESTED_RAY)}), or unset RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING."
            ) from None

    module._load_lua_template = _load_lua_template
