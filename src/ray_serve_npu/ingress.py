"""An API key on Ray Serve LLM's OpenAI endpoint.

Wired in by ``ray_serve_npu.patches.ingress`` and ``ray_serve_npu.patches.builder``;
it applies to every kind, not just npu. Ray Serve LLM 2.56 to 2.60 has no API key on
its OpenAI endpoint. Set :data:`~ray_serve_npu.envs.API_KEY_ENV_VAR` where the app is
built and every request must carry ``Authorization: Bearer <key>``, as
``vllm serve --api-key`` requires: on the app of Ray Serve LLM's OpenAI ingress
(``require_api_key``), and with ``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1``, which
serves vLLM's own app from the engine's replica in place of that ingress, on that app
(``protected_server_class``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from typing import Any, TypeVar

from starlette.responses import JSONResponse
from starlette.status import WS_1008_POLICY_VIOLATION
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.openai_errors import openai_error

logger = logging.getLogger(__name__)


_KEY_FIX = (
    "Fix: set it to the key alone, printable ASCII without surrounding whitespace. "
    "A key stored in a file or a Kubernetes Secret often keeps the file's final "
    "newline: write it with `printf %s`, or make a new key with "
    "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`."
)


def fresh_api_key() -> str:
    """A new random key, as the fake-NPU tier and the tests set one."""
    return secrets.token_urlsafe(24)


def api_key_from_env() -> str | None:
    """The key in :data:`~ray_serve_npu.envs.API_KEY_ENV_VAR`; None, with a warning, if unset.

    It is read once, by the process that builds the app: the shell that runs the
    recipe or ``serve run``, or the head pod on KubeRay. It must be printable ASCII
    without surrounding whitespace, which an HTTP header carries unchanged.

    Raises ValueError if the key is empty or no HTTP header can carry it
    unchanged: no request could ever match it.
    """
    key = os.environ.get(API_KEY_ENV_VAR)
    if key is None:
        logger.warning(
            "%s is not set: the OpenAI endpoint accepts requests without a key. Set it "
            "where the app is built to require `Authorization: Bearer <key>`.",
            API_KEY_ENV_VAR,
        )
        return None
    if not key.strip():
        raise ValueError(
            f"{API_KEY_ENV_VAR} is set but empty. Fix: set it to the key clients must "
            "send, or unset it to serve without a key."
        )
    # HTTP drops a header value's surrounding whitespace (RFC 9110, section 5.5),
    # and clients refuse control and non-ASCII characters in headers.
    if key != key.strip():
        raise ValueError(
            f"{API_KEY_ENV_VAR} starts or ends with whitespace, which no request can "
            f"send, so no request would match. {_KEY_FIX}"
        )
    bad = next(
        (i for i, char in enumerate(key) if not (char.isascii() and char.isprintable())), None
    )
    if bad is not None:
        # The position and code point only: the key itself stays out of logs.
        raise ValueError(
            f"{API_KEY_ENV_VAR} has the character U+{ord(key[bad]):04X} at position {bad}, "
            f"which an HTTP header can't carry, so no request would match. {_KEY_FIX}"
        )
    return key


def key_digest(key: str) -> bytes:
    """The SHA-256 digest of ``key``: what :class:`ApiKeyMiddleware` compares against."""
    return hashlib.sha256(key.encode("ascii")).digest()


def key_digest_from_env() -> bytes | None:
    """The digest of the key in :data:`~ray_serve_npu.envs.API_KEY_ENV_VAR`.

    None, with a warning, if it is unset; raises ValueError as :func:`api_key_from_env`
    does.
    """
    key = api_key_from_env()
    return None if key is None else key_digest(key)


class ApiKeyMiddleware:
    """Answers 401 to any request without ``Authorization: Bearer <key>``.

    Checks what vLLM's ``--api-key`` checks (``AuthenticationMiddleware`` in
    ``vllm/entrypoints/openai/server_utils.py``, vLLM 0.22): the scheme in any
    case, the key compared in constant time. It holds only the key's SHA-256
    digest. WebSocket connections need the key too: one without it is refused
    before it is accepted, with the same 401 where the server supports ASGI's
    WebSocket denial response extension (Ray Serve 2.60's proxy does), else
    with a close that the server turns into HTTP 403. CORS preflight requests
    (``OPTIONS``) pass: browsers send them without credentials, and Ray's CORS
    middleware answers them.
    """

    def __init__(self, app: ASGIApp, key_digest: bytes) -> None:
        self.app = app
        self._key_digest = key_digest

    def _authorized(self, scope: Scope) -> bool:
        # The first header, as Starlette's Headers.get and HAProxy's Lua for the request
        # router take it: the router and the engine's app judge the same key.
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        scheme, _, key = header.partition(b" ")
        digest = hashlib.sha256(key).digest()
        return scheme.lower() == b"bearer" and hmac.compare_digest(digest, self._key_digest)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        preflight = scope["type"] == "http" and scope["method"] == "OPTIONS"
        if scope["type"] == "lifespan" or preflight or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        websocket = scope["type"] == "websocket"
        if websocket and "websocket.http.response" not in scope.get("extensions", {}):
            await WebSocketClose(WS_1008_POLICY_VIOLATION)(scope, receive, send)
            return
        # Starlette's responses answer an HTTP request and deny a WebSocket alike.
        response = JSONResponse(
            openai_error(
                "Missing or wrong API key. Fix: send the header `Authorization: Bearer "
                f"<key>` with the key the server was started with ({API_KEY_ENV_VAR}).",
                "authentication_error",
                401,
            ),
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


def require_api_key(app: Any) -> None:
    """Add :class:`ApiKeyMiddleware` to the FastAPI ``app`` where a key is set.

    The key is :data:`~ray_serve_npu.envs.API_KEY_ENV_VAR`.

    Added last, the middleware is the outermost: no other middleware sees a
    request without the key. Only the key's digest goes into the app, which
    Serve pickles to the ingress replicas and Ray keeps in its GCS.
    """
    digest = key_digest_from_env()
    if digest is not None:
        app.add_middleware(ApiKeyMiddleware, key_digest=digest)


_ServerT = TypeVar("_ServerT", bound=type)


def protected_server_class(server_cls: _ServerT, digest: bytes | None) -> _ServerT:
    """``server_cls`` whose direct-streaming app has the plugin's protections.

    With direct streaming, Serve builds the ingress app in the engine's replica, from
    the server's ``__serve_build_asgi_app__`` once the engine has started, so there is
    no app to add middleware to where the app is built. The subclass adds them to the
    app there: :class:`~ray_serve_npu.streams.StreamFaultMiddleware`, and with a key's
    SHA-256 ``digest`` :class:`ApiKeyMiddleware`, last, so outermost. It carries only
    the digest to the replica (Serve pickles the class) and keeps the server's
    ``__name__``, from which Ray Serve LLM names the deployment.

    A class without ``__serve_build_asgi_app__`` builds no app: without a key it is
    returned unchanged. Raises ValueError if it has none and a key is set: no app could
    carry the key.
    """
    if not hasattr(server_cls, "__serve_build_asgi_app__"):
        if digest is None:
            return server_cls
        raise ValueError(
            f"{API_KEY_ENV_VAR} is set, but {server_cls.__name__} can't require the key "
            "with direct streaming: it has no __serve_build_asgi_app__, from which Serve "
            "builds the app in place of the OpenAI ingress. Fix: derive the server class "
            "from Ray Serve LLM's LLMServer, or unset RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING."
        )

    async def __serve_build_asgi_app__(self: Any) -> Any:  # noqa: N807 (Serve's hook)
        # In the replica, which has Ray loaded: this module imports without Ray.
        from ray_serve_npu.streams import StreamFaultMiddleware

        app = await super(protected, self).__serve_build_asgi_app__()
        # vLLM's build_app builds the middleware stack at once, and Starlette refuses
        # a middleware added after that; unset, the stack is built again on first use.
        app.middleware_stack = None
        app.add_middleware(StreamFaultMiddleware)
        if digest is not None:
            app.add_middleware(ApiKeyMiddleware, key_digest=digest)
        return app

    protected = _plugin_subclass(
        server_cls, "protected_server_class", __serve_build_asgi_app__=__serve_build_asgi_app__
    )
    return protected  # type: ignore[return-value]


def keyed_router_class(router_cls: _ServerT, digest: bytes) -> _ServerT:
    """Ray Serve LLM's ingress request router ``router_cls``, requiring the key of SHA-256
    ``digest`` on every route of its app.

    With direct streaming behind HAProxy, the router's replica serves ``/internal/route``
    on a port of its own, which HAProxy asks for each request's engine replica; without
    this, anyone who reaches the port can ask it. The router's app is the one that
    ``@serve.ingress`` froze when Ray defined the class, so the middleware goes onto the
    replica's copy once the replica has it: after ``__init__`` (async, as Serve requires
    of a subclass of an ingress), before Serve starts the app. HAProxy passes the
    client's ``Authorization`` on (:mod:`ray_serve_npu.patches.haproxy`). Serve answers
    ``/-/healthz`` and ``/-/routes`` on that port before the app sees them. Like
    :func:`protected_server_class`, the subclass carries only the digest and keeps the
    class's ``__name__``, from which Serve names the deployment.
    """

    async def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        await super(keyed, self).__init__(*args, **kwargs)
        self.app.middleware_stack = None
        self.app.add_middleware(ApiKeyMiddleware, key_digest=digest)

    keyed = _plugin_subclass(router_cls, "keyed_router_class", __init__=__init__)
    return keyed  # type: ignore[return-value]


def _plugin_subclass(cls: type, made_by: str, **methods: Any) -> type:
    """``cls`` with ``methods``, under ``cls``'s ``__name__``, from which Serve names the
    deployment, and a qualname local to ``made_by``, so that cloudpickle pickles the class
    by value, digest and all."""
    qualname = f"{made_by}.<locals>.{cls.__name__}"
    return type(cls.__name__, (cls,), {**methods, "__qualname__": qualname})
