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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from ray_serve_npu_tooling.stream_client import OpenStreams, StreamOutcome, stream_many

from ray_serve_npu.envs import DEVICE_RECORD_DIR_ENV_VAR
from ray_serve_npu.fake_npu.cluster import FakeNPUCluster
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.hardware import NodeKind
from ray_serve_npu.streams import StreamFault

#: A node without NPUs (the fake cluster still gives it an accelerator-type
#: resource, which no bundle here asks for).
CPU_ONLY = NodeKind(
    name="CPU only", devices_per_node=0, soc_names=(), memory_per_device_gb=0, devices_per_module=1
)

RECIPE = Path(__file__).parents[2] / "recipes" / "serve_npu.py"
DRIVER = Path(__file__).with_name("serve_driver.py")
MODEL_ID = "deepseek-v4-flash"
#: The Serve application the package's tests share (conftest.app).
APP_NAME = "resilience"
#: The workers that join the package's head before the app is served, by node index:
#: the ingress's (no NPUs), then two fake A2 workers, for the model's replica and for the
#: node it moves to when its own is lost.
INGRESS_NODE = 1
NPU_NODES = (2, 3)


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
    ingress_options: Mapping[str, Any] | None = None,
) -> Iterator[ServedApp]:
    """Deploy the recipe on a free port, ``engine_kwargs`` on top; shut Serve down on exit.

    ``ingress_options`` is the ingress's deployment options
    (``ingress_deployment_config`` of Ray Serve LLM's ``LLMServingArgs``).
    """
    port = free_port()
    device_record_dir = workdir / "devices"
    settings_file = workdir / "settings.json"
    settings_file.write_text(
        json.dumps(
            {
                "recipe": str(RECIPE),
                "model_dir": str(model_dir),
                "engine_kwargs": dict(engine_kwargs),
                "ingress_options": dict(ingress_options or {}),
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


def on_node(node_ip: str) -> dict[str, Any]:
    """Deployment options that keep a deployment's replicas on the node at ``node_ip``:
    Ray gives every node a resource ``node:<its address>`` of 1."""
    return {"ray_actor_options": {"resources": {f"node:{node_ip}": 0.001}}}


def chat_body(content: str = "Hi", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL_ID, "messages": [{"role": "user", "content": content}], **extra}


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


@dataclass(frozen=True)
class FaultFigures:
    """The fault tests' figures: ``fault_<name>`` in :func:`guarantees`."""

    #: Two batches of long answers: the engine is busy when the kill lands.
    clients: int
    tokens_per_answer: int
    #: The kill waits until this many streams have sent a chunk and are still open,
    #: so that it cuts streams mid-answer: a whole batch of the engine.
    streams_open_at_kill: int
    #: A stream still open after this long counts as a hang.
    client_timeout_s: float
    #: Every stream the kill breaks ends within this long after it.
    cut_streams_end_within_s: float
    #: Serve's health check (10 s period in Ray Serve LLM) plus an engine start.
    recovery_deadline_s: float

    @classmethod
    def read(cls) -> FaultFigures:
        return cls(**{field.name: guarantees()[f"fault_{field.name}"] for field in fields(cls)})


def assert_the_fault_event(outcome: StreamOutcome, fault: StreamFault) -> None:
    """The stream ended in ``fault``'s event for its own request id, then ``data: [DONE]``."""
    assert outcome.status == 200 and outcome.done, outcome
    assert outcome.request_id, outcome
    assert outcome.error_events == [
        {
            "error": {
                "message": fault.message.format(request_id=outcome.request_id),
                "type": fault.error_type,
                "param": None,
                "code": fault.code,
            }
        }
    ], outcome


async def strike_under_load(
    app: ServedApp, strike: Callable[[], None], proxies: Sequence[str] = ()
) -> tuple[dict[str, list[StreamOutcome]], float]:
    """Stream ``FaultFigures.clients`` long answers; call ``strike`` once enough are open.

    Client ``i`` goes through ``proxies[i % len(proxies)]``, or ``app.base_url`` if none
    are given. Returns what the clients saw, by the proxy they went through, and the
    ``time.time()`` of the strike.
    """
    figures = FaultFigures.read()
    urls = list(proxies) or [app.base_url]
    open_streams = OpenStreams(figures.streams_open_at_kill)
    bodies = [
        chat_body(f"In flight {index}", max_tokens=figures.tokens_per_answer, ignore_eos=True)
        for index in range(figures.clients)
    ]
    load = asyncio.ensure_future(
        asyncio.gather(
            *(
                stream_many(
                    url, bodies[offset :: len(urls)], figures.client_timeout_s, open_streams
                )
                for offset, url in enumerate(urls)
            )
        )
    )
    try:
        await asyncio.wait_for(open_streams.reached.wait(), figures.client_timeout_s)
    except asyncio.TimeoutError:
        raise AssertionError(
            f"{figures.streams_open_at_kill} streams were never open at once within "
            f"{figures.client_timeout_s} s: {await load}"
        ) from None
    # No await between the count and the strike: the streams counted are open at it.
    # The strike runs in the event loop, so the clients read nothing until it returns.
    struck_at = time.time()
    strike()
    return dict(zip(urls, await load, strict=True)), struck_at


def every(outcomes_by_proxy: Mapping[str, list[StreamOutcome]]) -> list[StreamOutcome]:
    """All the outcomes of :func:`strike_under_load`, whatever proxy they went through."""
    return [outcome for outcomes in outcomes_by_proxy.values() for outcome in outcomes]


def wait_for_proxy(url: str, within_s: float = 60) -> None:
    """Until the proxy at ``url`` answers its health check (Serve's ``/-/healthz``)."""
    deadline = time.monotonic() + within_s
    answers: list[str] = []
    while time.monotonic() < deadline:
        try:
            answers.append(str(httpx.get(f"{url}/-/healthz", timeout=5).status_code))
        except httpx.TransportError as error:
            answers.append(type(error).__name__)
        if answers[-1] == "200":
            return
        time.sleep(1)
    raise AssertionError(f"the proxy at {url} did not answer 200 within {within_s} s: {answers}")


def assert_recovers(
    app: ServedApp, since: float, record_figure: Callable[[str, Any], None]
) -> None:
    """A request succeeds within the recovery deadline of ``since``, then a batch completes."""
    figures = FaultFigures.read()
    recovered_at = wait_for_success(
        app.base_url, figures.recovery_deadline_s - (time.time() - since)
    )
    record_figure("recovery s", round(recovered_at - since, 1))
    bodies = [chat_body(max_tokens=16)] * guarantees()["max_num_seqs"]
    later = asyncio.run(stream_many(app.base_url, bodies, figures.client_timeout_s))
    assert all(outcome.completed for outcome in later), later


def assert_refused_with(outcome: StreamOutcome, fault: StreamFault) -> None:
    """A request that had not begun got ``fault`` as its HTTP response, with its request id."""
    assert outcome.status == fault.code and outcome.request_id, outcome
    assert json.loads(outcome.error or "") == fault.error(outcome.request_id), outcome


def proxy_logs(cluster: FakeNPUCluster, nodes: Iterable[int]) -> str:
    """What Serve's proxies on fake nodes ``nodes`` logged, a line per request with its id.

    Serve starts a node's proxy with the first replica placed there, so a node may have
    none; a proxy logs a request once its response has gone out.
    """
    logs = cluster.temp_dir / "session_latest" / "logs" / "serve"
    files = [logs / f"proxy_{cluster.node_ip(node)}.log" for node in nodes]
    return "".join(file.read_text(errors="replace") for file in files if file.exists())
