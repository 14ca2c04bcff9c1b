"""An API key on Ray Serve LLM's OpenAI ingress.

Wired in by ``ray_serve_npu._patch``; it applies to every kind, not just npu.
Ray Serve LLM 2.56 to 2.60 has no API key on its OpenAI endpoint. Set
:data:`API_KEY_ENV_VAR` where the app is built and every request must carry
``Authorization: Bearer <key>``, as ``vllm serve --api-key`` requires.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

logger = logging.getLogger(__name__)

#: The key clients must send. Read once, by the process that builds the app: the
#: shell that runs the recipe or ``serve run``, or the head pod on KubeRay.
API_KEY_ENV_VAR = "RAY_SERVE_NPU_API_KEY"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def api_key_from_env() -> str | None:
    """The key in :data:`API_KEY_ENV_VAR`; None, with a warning, if it is unset."""
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
    return key


def openai_error(message: str, error_type: str, code: int) -> dict[str, Any]:
    """The error object OpenAI clients parse (``{"error": {...}}``)."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class ApiKeyMiddleware:
    """Answers 401 to any request without ``Authorization: Bearer <api_key>``.

    Checks what vLLM's ``--api-key`` checks (``AuthenticationMiddleware`` in
    ``vllm/entrypoints/openai/server_utils.py``, vLLM 0.22): the scheme in any
    case, the key compared in constant time. CORS preflight requests
    (``OPTIONS``) pass: browsers send them without credentials, and Ray's CORS
    middleware answers them.
    """

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self._key_digest = hashlib.sha256(api_key.encode()).digest()

    def _authorized(self, scope: Scope) -> bool:
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, key = header.partition(" ")
        digest = hashlib.sha256(key.encode()).digest()
        return scheme.lower() == "bearer" and hmac.compare_digest(digest, self._key_digest)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            openai_error(
                "Missing or wrong API key. Fix: send the header `Authorization: Bearer "
                f"<key>` with the key the server was started with ({API_KEY_ENV_VAR}).",
                "authentication_error",
                401,
            )
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def require_api_key(app: Any) -> None:
    """Add :class:`ApiKeyMiddleware` to the FastAPI ``app`` if :data:`API_KEY_ENV_VAR` is set.

    Added last, the middleware is the outermost: no other middleware sees a
    request without the key. The key travels with the app's definition to the
    ingress replicas.
    """
    key = api_key_from_env()
    if key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=key)
