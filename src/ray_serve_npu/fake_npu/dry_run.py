"""``ray-serve-npu dry-run``: run a recipe on the fake-NPU tier before taking an Ascend node.

Starts a local Ray cluster with fake NPUs, runs the recipe's command unchanged
with a tiny random model swapped in (every dropped or changed setting is
logged), sends one chat request to each model the recipe serves, and stops
everything. Real: Ray, Ray Serve LLM, the plugin, vLLM's CPU engine, HTTP.
Fake: the NPUs and the model.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.fake_npu.cluster import FakeNode
from ray_serve_npu.fake_npu.processes import (
    READY_TIMEOUT_S,
    ServerNotReady,
    start_process_group,
    stop_process_group,
)
from ray_serve_npu.hardware import NODE_KINDS

#: How the command starts every line that says why it stopped short (stderr).
ERROR_PREFIX = "ray-serve-npu dry-run: "
#: The sentence of a not-ready paragraph that names where the server's whole log is kept.
KEPT_LOG_SENTENCE = "The whole log is in"
#: What dry-run prints once the recipe answered its check request, with --keep-serving.
SERVING_LINE = "fake-npu tier: serving until Ctrl+C or SIGTERM"
#: Its last line once it stopped cleanly.
STOPPED_LINE = "fake-npu tier: stopped; nothing left running"
#: The end of the line after which the command prints the chat request's answer.
CHAT_LINE_END = "a chat request got:"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-serve-npu dry-run",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument(
        "recipe",
        help="a Python recipe (run as `python RECIPE`), a Serve config (`serve run RECIPE`) "
        "or a Compose file (its `vllm serve` service)",
    )
    parser.add_argument("--port", type=int, default=8000, help="the port the recipe serves on")
    parser.add_argument(
        "--nodes", type=int, default=1, help="fake Ascend nodes in the local cluster (default 1)"
    )
    parser.add_argument(
        "--node-kind", choices=sorted(NODE_KINDS), default="A2", help="NPUs per fake node"
    )
    parser.add_argument(
        "recipe_args",
        nargs="*",
        metavar="ARG",
        help="arguments a Python recipe takes (after `--`): `dry-run serve_model.py -- RUN`",
    )
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="after the check request, keep serving until Ctrl+C or SIGTERM",
    )
    return parser


#: Compose's default file names (``compose.yaml``, ``docker-compose.yml``) and the
#: variants beside them (``docker-compose-a3.yaml``, ``compose.override.yaml``).
_COMPOSE_NAME = re.compile(r"(docker-)?compose([.-][\w.-]+)?\.ya?ml")


#: KubeRay's kinds, which run on Kubernetes rather than under `serve run`.
KUBERAY_KINDS = frozenset({"RayService", "RayJob", "RayCluster"})


def _kuberay_kind(manifest: Path) -> str | None:
    """The KubeRay ``kind`` of any document of a YAML file, or None."""
    try:
        documents = list(yaml.safe_load_all(manifest.read_text(errors="replace")))
    except (OSError, yaml.YAMLError):
        return None
    kinds = [d.get("kind") for d in documents if isinstance(d, dict)]
    return next((kind for kind in kinds if kind in KUBERAY_KINDS), None)


def command_for(recipe: Path, args: Sequence[str] = ()) -> str:
    """The command a page would run for this recipe, from its directory; ``args`` are a
    Python recipe's own (a Serve config or a Compose file takes none)."""
    name = shlex.quote(recipe.name)
    if recipe.suffix == ".py":
        return shlex.join(["python", recipe.name, *args])
    if args:
        raise ValueError(f"{recipe}: only a Python recipe takes arguments; drop {shlex.join(args)}")
    if _COMPOSE_NAME.fullmatch(recipe.name):
        return f"docker compose -f {name} up -d"
    if recipe.suffix in {".yaml", ".yml"}:
        if kind := _kuberay_kind(recipe):
            raise ValueError(
                f"{recipe}: a KubeRay {kind} manifest, which runs on Kubernetes: dry-run "
                "the Python recipe or Serve config it runs instead"
            )
        return f"serve run {name}"
    raise ValueError(
        f"{recipe}: not a recipe dry-run knows: give a .py recipe, a Serve config (.yaml) "
        "or a Compose file (compose.yaml, docker-compose.yaml or docker-compose-<name>.yaml)"
    )


def fake_tier_changes(log: str) -> list[str]:
    """The adapter's ``fake-npu tier: ...`` lines in a server log, plain or in Ray's JSON logs."""
    changes = []
    for line in log.splitlines():
        if "fake-npu tier:" not in line:
            continue
        try:
            changes.append(str(json.loads(line)["message"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            changes.append(line[line.index("fake-npu tier:") :])
    return changes


def engine_devices(record_dir: Path) -> list[str]:
    """One line per engine worker that holds NPUs: the ids Ray assigned and what it saw.

    The records are the fake tier's (``ray_serve_npu.fake_npu.vllm_plugins``); on
    NPUs, Ray sets the visibility variable to the ids it assigns.
    """
    # Imported here, as the fake tier is: the records' module imports Ray.
    from ray_serve_npu.fake_npu.vllm_plugins import engine_worker_records

    return [
        f"fake-npu tier: engine worker {record['pid']} holds NPU "
        f"{','.join(record['ray_npu_ids'])}; "
        f"{VISIBLE_DEVICES_ENV_VAR}={record[VISIBLE_DEVICES_ENV_VAR]}"
        for record in engine_worker_records(record_dir)
    ]


#: How long each check request may take: as long as a server may take to start. Ray
#: Serve LLM's ingress answers /v1/models as soon as it runs, before the engines
#: behind it do, so the first chat can wait for them: four data-parallel engines on
#: a fake A3 node took more than 120 s to answer it in a CI run on two busy cores.
CHECK_TIMEOUT_S = READY_TIMEOUT_S


def _get_json(
    base_url: str, path: str, api_key: str, body: dict[str, object] | None, timeout_s: float
) -> Any:
    """GET (or POST ``body`` to) ``path``, with the tier's API key, as the pages' clients send
    it: a Compose service requires it (``VLLM_API_KEY`` from ``OPENAI_API_KEY``)."""
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.load(response)


def ask(
    base_url: str,
    api_key: str,
    logs: Callable[[], str],
    timeout_s: float = CHECK_TIMEOUT_S,
    failed_exit: Callable[[], int | None] = lambda: None,
) -> list[tuple[str, dict[str, object]]]:
    """Each model the server lists, with its answer to one chat request.

    A server can list its models before the engines behind them are up (Ray Serve
    LLM's ingress answers ``/v1/models`` from its configs): a request that then gets
    no answer raises :class:`ServerNotReady` with ``logs()``, not a socket error. So
    does a server command that exits with an error while a request waits
    (``failed_exit``): Serve's proxy and ingress outlive a recipe whose engine failed
    to deploy, and would hold the request until ``timeout_s``.
    An HTTP error status passes through as ``urllib.error.HTTPError``.
    """

    def check() -> list[tuple[str, dict[str, object]]]:
        models = _get_json(base_url, "/v1/models", api_key, None, timeout_s)
        if not models.get("data"):
            raise ServerNotReady(f"it answered at {base_url}, but lists no model", logs())
        answers = []
        for listed in models["data"]:
            model = str(listed["id"])
            body = {
                "model": model,
                "messages": [{"role": "user", "content": "Hello"}],
                "max_tokens": 8,
            }
            reply = _get_json(base_url, "/v1/chat/completions", api_key, body, timeout_s)
            answers.append((model, dict(reply)))
        return answers

    try:
        return _while_serving(check, failed_exit, logs)
    except urllib.error.HTTPError:
        raise
    except (
        TimeoutError,
        ConnectionError,
        http.client.HTTPException,
        urllib.error.URLError,
    ) as failure:
        reason = failure.reason if isinstance(failure, urllib.error.URLError) else failure
        # Only a wait that ran out took the whole timeout; a dropped connection is quick.
        waited = f" within {timeout_s:g} s" if isinstance(reason, TimeoutError) else ""
        raise ServerNotReady(
            f"it answered at {base_url}, but its check request got no answer "
            f"({reason or type(failure).__name__}){waited}",
            logs(),
        ) from None


#: How often a waiting check request looks at the server command.
_WATCH_S = 1.0


def _while_serving(
    request: Callable[[], Any], failed_exit: Callable[[], int | None], logs: Callable[[], str]
) -> Any:
    """``request()``'s result, unless the server command exits with an error first."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = request()
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = error

    # A daemon thread: a request left waiting must not hold the process at exit.
    worker = threading.Thread(target=run, name="dry-run-check", daemon=True)
    worker.start()
    code = None
    while worker.is_alive() and code is None:
        worker.join(_WATCH_S)
        code = failed_exit()
    # The command's exit is the cause, also where the request failed with it.
    if code is not None and (worker.is_alive() or "error" in outcome):
        raise ServerNotReady(
            f"the server command exited with {code} while its check request waited", logs()
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _wait_for_stop() -> None:
    """Block until SIGINT (Ctrl+C) or SIGTERM, then return so that the tier stops cleanly.

    Handlers are set explicitly: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and SIGTERM would otherwise
    end the process without stopping its fake cluster.
    """
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass


def stop_cleanly_on_sigterm() -> None:
    """Make SIGTERM (a CI job's timeout, ``kill``) end the command as Ctrl+C does: through
    its ``with`` blocks, which stop the fake cluster and the recipe's processes. Python's
    default would end the process at once and leave them running."""

    def _exit(signum: int, _frame: object) -> None:
        # A second SIGTERM (CI often sends more) must not cut the clean-up short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command's arguments; options may come after the recipe, before ``--``:
    ``dry-run serve_model.py --nodes 2 -- RUN`` as well as ``dry-run --nodes 2 ...``."""
    return _parser().parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    recipe = Path(args.recipe).resolve()
    if not recipe.is_file():
        print(f"{ERROR_PREFIX}{args.recipe}: no such file", file=sys.stderr)
        return 2
    try:
        command = command_for(recipe, args.recipe_args)
    except ValueError as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        return 2
    if args.nodes < 1:
        print(f"{ERROR_PREFIX}--nodes must be 1 or more", file=sys.stderr)
        return 2
    nodes = [FakeNode(node_kind=NODE_KINDS[args.node_kind])] * args.nodes
    stop_cleanly_on_sigterm()
    try:
        _serve_and_ask(args, recipe, command, nodes)
    except ServerNotReady as failure:
        print(f"{ERROR_PREFIX}{not_ready_paragraph(failure, recipe)}", file=sys.stderr)
        return 1
    except urllib.error.HTTPError as failure:
        answer = failure.read().decode(errors="replace")[:1000]
        print(
            f"{ERROR_PREFIX}{recipe.name} came up on the fake-NPU tier, but its check "
            f"request got HTTP {failure.code} from {failure.url}: {answer}",
            file=sys.stderr,
        )
        return 1
    except ValueError as error:
        # The tier's adapter refuses what it can't serve with the field and the fix.
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        return 2
    print(STOPPED_LINE)
    return 0


def not_ready_paragraph(failure: ServerNotReady, recipe: Path) -> str:
    """Why the recipe did not come up, in one paragraph; its whole log is kept in a file."""
    with tempfile.NamedTemporaryFile(
        "w", prefix=f"ray-serve-npu-dry-run-{recipe.stem}-", suffix=".log", delete=False
    ) as kept:
        kept.write(failure.log)
    if failure.error:
        error = f"The last error in its log: {failure.error}"
    elif failure.last_line:
        # A recipe that refuses its input exits with a sentence of its own, not a traceback.
        error = f"Its log reports no Python exception; its last line: {failure.last_line}"
    else:
        error = "Its log is empty"
    return (
        f"{recipe.name} did not come up on the fake-NPU tier: {failure.what}. {error}. "
        f"{KEPT_LOG_SENTENCE} {kept.name}."
    )


def _serve_and_ask(
    args: argparse.Namespace, recipe: Path, command: str, nodes: list[FakeNode]
) -> None:
    """Serve ``recipe`` on a fresh fake tier, ask each of its models one chat request, and
    stop everything."""
    # Imported here: the fake tier needs vLLM's CPU build (the cpu-engine extra).
    from ray_serve_npu.fake_npu.fake_tier import fake_npu_tier

    with tempfile.TemporaryDirectory(prefix="ray-serve-npu-dry-run-") as workdir:
        with fake_npu_tier(Path(workdir), nodes) as tier:
            cluster = f"{args.nodes} fake {args.node_kind} node(s) at {tier.cluster.address}"
            print(f"fake-npu tier: {cluster}")
            print(f"fake-npu tier: running `{command}` in {recipe.parent}")
            with tier.serve(command, cwd=recipe.parent, port=args.port) as server:
                # What the fake tier changed in the recipe: a script's configs are
                # adapted in its own process, a Serve config's in a task of the cluster's.
                changes = fake_tier_changes(server.logs()) or fake_tier_changes(
                    tier.cluster.worker_logs()
                )
                for change in changes:
                    print(change)
                answers = ask(
                    server.base_url,
                    tier.api_key,
                    lambda: f"{server.logs()}\n{tier.cluster.worker_logs()}",
                    failed_exit=server.failed_exit,
                )
                for model, reply in answers:
                    print(f"fake-npu tier: {server.base_url}/v1 serves {model!r}; {CHAT_LINE_END}")
                    print(json.dumps(reply, indent=2)[:2000])
                for line in engine_devices(tier.device_record_dir):
                    print(line)
                if args.keep_serving:
                    print(SERVING_LINE, flush=True)
                    _wait_for_stop()


@dataclass
class DryRunProcess:
    """``ray-serve-npu dry-run ... --keep-serving`` in a process group of its own."""

    process: subprocess.Popen[bytes]
    log_file: Path

    def output(self) -> str:
        """What the command printed so far (stdout and stderr)."""
        return self.log_file.read_text(errors="replace")

    def chat_reply(self) -> dict[str, Any]:
        """The answer to the command's chat request, as it printed it."""
        output = self.output()
        after = output[output.index(CHAT_LINE_END) + len(CHAT_LINE_END) :].lstrip()
        reply, _ = json.JSONDecoder().raw_decode(after)
        return dict(reply)


@contextlib.contextmanager
def keep_serving(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_file: Path,
    ready_timeout_s: float,
    python: str = sys.executable,
) -> Iterator[DryRunProcess]:
    """Run ``ray-serve-npu dry-run ARGS --keep-serving`` with ``python`` (this interpreter
    unless another environment's is given) until it serves; yield it; stop it (and all it
    started) unless the caller stopped it already.

    Raises RuntimeError, with the end of its output, if it exits or is not serving
    within ``ready_timeout_s``.
    """
    argv = [python, "-m", "ray_serve_npu.cli", "dry-run", *args, "--keep-serving"]
    process = start_process_group(argv, cwd=cwd, env=dict(env), log_file=log_file)
    run = DryRunProcess(process, log_file)
    try:
        deadline = time.monotonic() + ready_timeout_s
        while SERVING_LINE not in run.output():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dry-run did not come up serving:\n{run.output()[-6000:]}")
            time.sleep(2)
        yield run
    finally:
        if process.poll() is None:
            stop_process_group(process)
