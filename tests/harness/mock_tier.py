"""A mock tier for the harness's own tests: a stdlib HTTP server on loopback, OpenAI-shaped.

It does not run the server command; it records it, and answers like an OpenAI server:
``/v1/models``, ``/v1/chat/completions`` (JSON or SSE ending with ``data: [DONE]``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MOCK_REPLY = "Hello from the mock"


@dataclass
class MockServer:
    base_url: str
    requests: list[str] = field(default_factory=list)

    def logs(self) -> str:
        return "\n".join(self.requests)


class MockTier:
    """Serves ``model_id`` on the port a page's server block names."""

    name = "mock"
    fake = True

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        #: (command, cwd, port) of each serve() call.
        self.served: list[tuple[str, Path, int]] = []
        #: Ports whose server was stopped again.
        self.stopped: list[int] = []
        #: What each serve() call set over the tier's environment.
        self.envs: list[dict[str, str]] = []

    def env(self) -> Mapping[str, str]:
        return {}

    @contextlib.contextmanager
    def serve(
        self, command: str, *, cwd: Path, port: int, env: Mapping[str, str] | None = None
    ) -> Iterator[MockServer]:
        self.served.append((command, cwd, port))
        self.envs.append(dict(env or {}))
        server = MockServer(f"http://127.0.0.1:{port}")
        httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self.model_id, server))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield server
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join()
            self.stopped.append(port)


def _handler(model_id: str, server: MockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            server.requests.append(format % args)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path != "/v1/models":
                self._send(404, b'{"error": "not found"}', "application/json")
                return
            models = {
                "object": "list",
                "data": [
                    {"id": model_id, "object": "model", "created": int(time.time()),
                     "owned_by": "mock", "root": "/mock/weights"}
                ],
            }  # fmt: skip
            self._send(200, json.dumps(models).encode(), "application/json")

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions" or request.get("model") != model_id:
                error = {"error": {"message": f"The model {request.get('model')} does not exist"}}
                self._send(404, json.dumps(error).encode(), "application/json")
                return
            common = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()),
                      "model": model_id}  # fmt: skip
            if request.get("stream"):
                chunks = [
                    {**common, "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
                    for word in MOCK_REPLY.split()
                ]  # fmt: skip
                body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
                self._send(200, (body + "data: [DONE]\n\n").encode(), "text/event-stream")
                return
            completion = {
                **common,
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": MOCK_REPLY},
                     "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11},
            }  # fmt: skip
            self._send(200, json.dumps(completion).encode(), "application/json")

    return Handler
