"""Serve the site's recipe on a fake NPU cluster, and talk to it the way clients do.

The app is recipes/serve_npu.py's own ``LLMConfig``, turned into its fake-tier
variant by :func:`ray_serve_npu.fake_npu.adapter.adapt_llm_config` (tiny model,
one CPU engine worker holding one fake NPU), built by
:func:`ray_serve_npu.build_openai_app` and run by Ray Serve on a free port that is
not 8000. A separate driver process (serve_driver.py) loads the recipe, deploys,
finds replicas and shuts Serve down: building a Serve LLM app connects to Ray (or
starts a local Ray), which this process must never do.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ray_serve_npu.envs import DEVICE_RECORD_DIR_ENV_VAR
from ray_serve_npu.fake_npu.cluster import FakeNPUCluster
from ray_serve_npu.fake_npu.processes import free_port

RECIPE = Path(__file__).parents[2] / "recipes" / "serve_npu.py"
DRIVER = Path(__file__).with_name("serve_driver.py")
MODEL_ID = "deepseek-v4-flash"


@functools.cache
def guarantees() -> dict[str, Any]:
    """The loads and bounds the tests assert, one figure each, read on first use.

    docs/testing.md shows them as ``{{ resilience_<name> }}`` (docs/conf.py
    reads guarantees.json too). ``max_num_seqs`` is the engine's batch limit in the
    served app, cut from the recipe's 32 so that a load of 64 clients is eight times
    what the engine runs at once.
    """
    return json.loads(Path(__file__).with_name("guarantees.json").read_text())


#: Ray Serve LLM names the model's deployment ``LLMServer:<model_id>``.
LLM_DEPLOYMENT_PREFIX = "LLMServer"
#: Tiny-model start-up is about a minute on two cores; leave room for a loaded machine.
DEPLOY_TIMEOUT_S = 600
DRIVER_TIMEOUT_S = 120


class DriverFailed(Exception):
    """A serve_driver.py command exited with an error; ``stderr`` has its traceback."""

    def __init__(self, command: str, returncode: int, stderr: str) -> None:
        super().__init__(f"serve_driver.py {command} exited with {returncode}:\n{stderr[-6000:]}")
        self.stderr = stderr


def run_driver(cluster: FakeNPUCluster, *args: str, timeout_s: float) -> dict[str, Any]:
    """Run one serve_driver.py command against ``cluster``; return its JSON answer."""
    with tempfile.TemporaryDirectory(prefix="serve-driver-") as answer_dir:
        answer = Path(answer_dir, "answer.json")
        try:
            result = subprocess.run(
                [sys.executable, str(DRIVER), "--answer", str(answer), *args],
                env={**os.environ, **cluster.env()},
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as timeout:
            raise AssertionError(
                f"serve_driver.py {' '.join(args)} did not finish in {timeout_s} s:\n"
                f"{(timeout.stderr or b'')[-4000:]!r}"
            ) from None
        if result.returncode != 0:
            raise DriverFailed(" ".join(args), result.returncode, result.stderr)
        return json.loads(answer.read_text())


@dataclass
class ServedApp:
    """An app that Ray Serve runs on a fake cluster."""

    cluster: FakeNPUCluster
    base_url: str
    #: Where the engine's Ray workers record their pid and NPUs (fake_npu/vllm_plugins.py).
    device_record_dir: Path
    ready_s: float
    #: Each node's Prometheus endpoint (Ray exports Serve's and vLLM's metrics there).
    metrics_urls: list[str]

    def logged(self, needles: Iterable[str]) -> dict[str, str]:
        """Where each of ``needles`` appears in the cluster's logs: a log file's name."""
        wanted = set(needles)
        found: dict[str, str] = {}
        for path in sorted((self.cluster.temp_dir / "session_latest" / "logs").rglob("*")):
            if path.is_file() and wanted - found.keys():
                text = path.read_text(errors="replace")
                found |= {needle: path.name for needle in wanted - found.keys() if needle in text}
        return found

    def engine_worker_pids(self) -> list[int]:
        """Pids of live engine workers that hold an NPU."""
        pids = []
        for path in self.device_record_dir.glob("*.json"):
            record = json.loads(path.read_text())
            if record["ray_npu_ids"] and pid_alive(record["pid"]):
                pids.append(int(record["pid"]))
        return pids


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (an engine worker a test may have killed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def served_app(
    cluster: FakeNPUCluster,
    model_dir: Path,
    workdir: Path,
    app_name: str,
    engine_kwargs: Mapping[str, Any],
    deploy_timeout_s: float = DEPLOY_TIMEOUT_S,
) -> Iterator[ServedApp]:
    """Deploy the recipe on a free port, ``engine_kwargs`` on top; shut Serve down on exit."""
    port = free_port()
    device_record_dir = workdir / "devices"
    settings_file = workdir / "settings.json"
    settings_file.write_text(
        json.dumps(
            {
                "recipe": str(RECIPE),
                "model_dir": str(model_dir),
                "engine_kwargs": dict(engine_kwargs),
                "env_vars": {DEVICE_RECORD_DIR_ENV_VAR: str(device_record_dir)},
            }
        )
    )
    try:
        deployed = run_driver(
            cluster,
            "deploy",
            str(settings_file),
            f"--port={port}",
            f"--app={app_name}",
            timeout_s=deploy_timeout_s,
        )
        yield ServedApp(
            cluster=cluster,
            base_url=f"http://127.0.0.1:{port}",
            device_record_dir=device_record_dir,
            ready_s=float(deployed["ready_s"]),
            metrics_urls=list(deployed["metrics_urls"]),
        )
    finally:
        run_driver(cluster, "shutdown", timeout_s=DRIVER_TIMEOUT_S)


def chat_body(content: str = "Hi", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL_ID, "messages": [{"role": "user", "content": content}], **extra}


@dataclass
class StreamOutcome:
    """What one streaming client saw, from the request to the end of the response."""

    status: int | None = None
    #: The ``X-Request-ID`` header of the response: Serve's id of the request.
    request_id: str | None = None
    #: The stream's closing ``data: [DONE]`` arrived.
    done: bool = False
    chunks: int = 0
    #: What went wrong, as the client saw it: an HTTP error body, an error event in
    #: the stream, or a connection that broke; None when nothing did.
    error: str | None = None
    #: The client gave up waiting: a hang.
    timed_out: bool = False
    #: The last ``finish_reason`` a chunk gave (a complete answer has one).
    finish_reason: str | None = None
    #: ``usage.completion_tokens`` of the final chunk (``stream_options.include_usage``).
    completion_tokens: int | None = None
    first_chunk_s: float | None = None
    #: ``time.time()`` when the first generated chunk arrived.
    first_chunk_at: float | None = None
    total_s: float = 0.0
    #: ``time.time()`` when the response ended, however it ended.
    ended_at: float = 0.0
    error_events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.status == 200 and self.done and self.error is None

    def open_at(self, moment: float) -> bool:
        """Whether the stream had sent a generated chunk and not yet ended at ``moment``."""
        return self.first_chunk_at is not None and self.first_chunk_at <= moment < self.ended_at


class OpenStreams:
    """Counts the streams that have sent a generated chunk and not yet ended.

    ``reached`` is set once ``target`` of them are open at the same time.
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.reached = asyncio.Event()

    def begin(self) -> None:
        self.count += 1
        if self.count >= self.target:
            self.reached.set()

    def end(self) -> None:
        self.count -= 1


async def stream_chat(
    client: httpx.AsyncClient,
    base_url: str,
    body: Mapping[str, Any],
    timeout_s: float,
    open_streams: OpenStreams | None = None,
) -> StreamOutcome:
    """Send one streaming chat request and read its events to the end.

    Counts the stream in ``open_streams`` from its first generated chunk to its end.
    """
    outcome = StreamOutcome()
    started = time.monotonic()

    async def read_response() -> None:
        async with client.stream(
            "POST", f"{base_url}/v1/chat/completions", json={**body, "stream": True}
        ) as response:
            outcome.status = response.status_code
            outcome.request_id = response.headers.get("x-request-id")
            if response.status_code != 200:
                outcome.error = (await response.aread()).decode(errors="replace")
                return
            await _read_events(response, outcome, started, open_streams)

    try:
        await asyncio.wait_for(read_response(), timeout_s)
    except asyncio.TimeoutError:
        outcome.timed_out = True
        outcome.error = f"no end of stream in {timeout_s} s"
    except httpx.HTTPError as broken:
        outcome.error = f"{type(broken).__name__}: {broken}"
    finally:
        outcome.total_s = time.monotonic() - started
        outcome.ended_at = time.time()
        if open_streams is not None and outcome.first_chunk_at is not None:
            open_streams.end()
    return outcome


async def _read_events(
    response: httpx.Response,
    outcome: StreamOutcome,
    started: float,
    open_streams: OpenStreams | None,
) -> None:
    async for line in response.aiter_lines():
        if not line.startswith("data: "):
            continue
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            outcome.done = True
            continue
        event = json.loads(data)
        if "error" in event:
            outcome.error_events.append(event)
            outcome.error = json.dumps(event["error"])
            continue
        if event.get("usage"):
            outcome.completion_tokens = event["usage"]["completion_tokens"]
        for choice in event.get("choices") or []:
            outcome.finish_reason = choice.get("finish_reason") or outcome.finish_reason
        outcome.chunks += 1
        if outcome.first_chunk_s is None:
            outcome.first_chunk_s = time.monotonic() - started
            outcome.first_chunk_at = time.time()
            if open_streams is not None:
                open_streams.begin()
    if not outcome.done and outcome.error is None:
        outcome.error = "the stream ended without data: [DONE]"


async def stream_many(
    base_url: str,
    bodies: list[Mapping[str, Any]],
    timeout_s: float,
    open_streams: OpenStreams | None = None,
) -> list[StreamOutcome]:
    """Stream every body at once, each on its own connection, as separate clients would."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout_s)) as client:
        return list(
            await asyncio.gather(
                *(stream_chat(client, base_url, body, timeout_s, open_streams) for body in bodies)
            )
        )


def post_json(base_url: str, path: str, body: Any, timeout_s: float = 120) -> httpx.Response:
    """POST ``body`` (a JSON value, or raw bytes sent as they are) to ``path``."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        f"{base_url}{path}",
        content=content,
        headers={"Content-Type": "application/json"},
        timeout=timeout_s,
    )


def wait_for_success(base_url: str, deadline_s: float) -> float:
    """Send small chat requests until one succeeds; return the time.time() it did.

    Each request may wait in Serve's queue until a replica is back, so it gets a
    long timeout; a refused or failed one is retried after a second.
    """
    deadline = time.monotonic() + deadline_s
    failures: list[str] = []
    while time.monotonic() < deadline:
        try:
            response = post_json(
                base_url,
                "/v1/chat/completions",
                chat_body(max_tokens=4),
                timeout_s=max(1.0, deadline - time.monotonic()),
            )
            if response.status_code == 200:
                return time.time()
            failures.append(f"{response.status_code}: {response.text[:200]}")
        except httpx.HTTPError as error:
            failures.append(f"{type(error).__name__}: {error}")
        time.sleep(1)
    raise AssertionError(
        f"no request succeeded within {deadline_s} s; last failures: {failures[-5:]}"
    )


#: vLLM's histogram of the time each request waited before it was scheduled
#: (``vllm:request_queue_time_seconds``, as Ray exports it).
QUEUE_TIME_METRIC = "ray_vllm_request_queue_time_seconds"


@dataclass(frozen=True)
class QueueTimes:
    """vLLM's queue-time histogram, summed over replicas."""

    requests: float
    total_s: float
    #: Requests that waited at most vLLM's smallest queue-time bucket, in seconds
    #: (``queue_wait_over_s`` of :func:`guarantees`, the label of its ``le``).
    short_waits: float

    def __sub__(self, earlier: QueueTimes) -> QueueTimes:
        return QueueTimes(
            requests=self.requests - earlier.requests,
            total_s=self.total_s - earlier.total_s,
            short_waits=self.short_waits - earlier.short_waits,
        )


def queue_times(app: ServedApp) -> QueueTimes:
    """Read vLLM's queue-time histogram from every node's metrics endpoint."""
    shortest_bucket = guarantees()["queue_wait_over_s"]
    totals = {"_count": 0.0, "_sum": 0.0, "_bucket": 0.0}
    for url in app.metrics_urls:
        for family in text_string_to_metric_families(httpx.get(url, timeout=30).text):
            if family.name != QUEUE_TIME_METRIC:
                continue
            for sample in family.samples:
                suffix = sample.name.removeprefix(QUEUE_TIME_METRIC)
                if suffix == "_bucket" and sample.labels["le"] != shortest_bucket:
                    continue
                totals[suffix] = totals.get(suffix, 0.0) + sample.value
    return QueueTimes(
        requests=totals["_count"], total_s=totals["_sum"], short_waits=totals["_bucket"]
    )
