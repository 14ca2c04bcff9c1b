"""Servers started as process groups: wait until they answer, stop them and all they started."""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

STOP_TIMEOUT_S = 60
#: The port every page's server uses; tests and the bench keep off it, so that a
#: page's server never meets another one there.
PAGES_PORT = 8000
_POLL_S = 2.0
#: Statuses that only the app itself, not Serve's proxy before it, answers /v1/models with.
_APP_ANSWERS = frozenset({400, 401, 403, 405, 422})


@dataclass
class ProcessServer:
    """A server a tier started: where clients reach it, and its output for failure messages."""

    base_url: str
    log_file: Path
    #: The command that serves, in a process group of its own (start_process_group).
    process: subprocess.Popen[bytes]

    def logs(self) -> str:
        return self.log_file.read_text(errors="replace")

    def failed_exit(self) -> int | None:
        """The server command's exit status if it exited with an error, else None (a
        command that exits 0 may have started a detached server)."""
        code = self.process.poll()
        return None if code in (None, 0) else code


def ensure_port_free(port: int, host: str = "127.0.0.1", wait_s: float = 60) -> None:
    """Refuse to start a page's server on a port that another server already answers on.

    Otherwise the page's clients would talk to that other server: a 404 for the
    model, or a pass for the wrong reason. A server that is still stopping (the
    previous test's) gets ``wait_s`` seconds to let go of the port first.
    """
    deadline = time.monotonic() + wait_s
    while True:
        with socket.socket() as probe:
            if probe.connect_ex((host, port)) != 0:
                return
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"port {port} on {host} is still taken by another server after {wait_s} s; "
                "stop it, so that the clients reach the server this page starts"
            )
        time.sleep(1)


#: Where a port picked ahead of time comes from: below the kernel's ephemeral range
#: (``/proc/sys/net/ipv4/ip_local_port_range``, 32768 up by default), from which Ray's
#: many listeners that bind port 0 could take it before its server binds it (in a
#: fresh-clone run a picked port answered with a gRPC server's HTTP/2 frames,
#: 2026-12-07); above ``ray start``'s worker ports (10002-19999); and below the ports
#: that Serve's direct-ingress replicas take, from 30000
#: (``RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT``, serve/_private/constants.py:1048 at 2.60.0).
PICKED_PORTS = range(20000, 30000)


def free_port(host: str = "127.0.0.1", *, taken: Collection[int] = ()) -> int:
    """A port of :data:`PICKED_PORTS` that nothing holds on ``host``, and not in ``taken``.

    The one way the fake tier, its tests and the benchmark harness pick a port for a
    server they start; every page's server keeps :data:`PAGES_PORT`, outside the range.
    """
    while True:
        port = random.choice(PICKED_PORTS)
        if port in taken:
            continue
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
        return port


def start_process_group(
    argv: list[str], *, cwd: Path, env: dict[str, str], log_file: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session, so that stopping it reaches everything it starts."""
    with log_file.open("wb") as log:
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


#: A Python exception line as a traceback ends (``ValueError: ...``,
#: ``ray.exceptions.RayTaskError(ValueError): ...``), possibly behind a process prefix
#: such as Ray's ``(ServeReplica:app:LLMServer pid=12)``.
_EXCEPTION_LINE = re.compile(
    r"(?:^|\) )((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?:\([\w.]+\))?: .+)$"
)
#: Ray colours its process prefixes and folds repeated lines
#: (ray/_private/worker.py, print_worker_logs).
_RAY_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
#: Processes whose errors follow a failure rather than cause it.
_AFTERMATH = ("(raylet", "(autoscaler", "(monitor")


#: Exceptions that only report an earlier one: Serve's failed deployment, vLLM's failed
#: engine start ("See root cause above"), Ray's actor that died of its creation task,
#: and Serve's controller raising a replica's traceback as its message.
_WRAPPERS = (
    "Deploying application",
    "Engine core initialization failed",
    "The actor died because of an error raised in its creation task",
    "Error: Traceback (most recent call last):",
)


def last_error(log: str) -> str | None:
    """The last exception a server's log reports (its type and message), or None.

    Ray's own daemons and the exceptions Python ignores at shutdown (``Exception
    ignored in ...``) come after the failure, not before it, so they don't count. An
    exception that only reports an earlier one (:data:`_WRAPPERS`) counts only where the
    log has no other.
    """
    found = wrapper = None
    ignoring = False
    for raw in log.splitlines():
        line = _RAY_REPEATED.sub("", _RAY_COLOUR.sub("", raw)).rstrip()
        if "Exception ignored in" in line:
            ignoring = True
            continue
        match = _EXCEPTION_LINE.search(line)
        if match is None or line.lstrip().startswith(_AFTERMATH):
            continue
        if ignoring:
            ignoring = False
        elif any(words in match.group(1) for words in _WRAPPERS):
            wrapper = match.group(1)
        else:
            found = match.group(1)
    return found or wrapper


#: How much of a log's last line a failure quotes.
_LAST_LINE_CHARS = 300


class ServerNotReady(RuntimeError):
    """A tier's server that exited or did not answer in time, with what its log says."""

    def __init__(self, what: str, log: str) -> None:
        self.what = what
        self.log = log
        #: The last exception the log reports: the replica's or the engine's own error.
        self.error = last_error(log)
        #: The log's last line with words in it, colours taken out, cut to one screen line
        #: or so (a JSON log record can run to thousands of characters).
        last = next(
            (
                line.strip()
                for line in reversed(_RAY_COLOUR.sub("", log).splitlines())
                if line.strip()
            ),
            None,
        )
        self.last_line = (
            last
            if last is None or len(last) <= _LAST_LINE_CHARS
            else (last[:_LAST_LINE_CHARS] + " ...")
        )
        super().__init__(f"{what}:\n{log[-8000:]}")


#: How long a server may take to answer /v1/models. Measured here: Ray Serve LLM
#: with the tiny model is ready in about 50 s on two cores, plain vLLM in about 30 s.
READY_TIMEOUT_S = 600


def wait_until_ready(server: ProcessServer, timeout_s: float) -> None:
    """Until ``/v1/models`` answers; a command that exits 0 may have started a detached server."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = server.failed_exit()
        if code is not None:
            raise ServerNotReady(f"the server command exited with {code}", server.logs())
        try:
            with urllib.request.urlopen(f"{server.base_url}/v1/models", timeout=10):
                return
        except urllib.error.HTTPError as error:
            # The app answers: it wants the API key that the page's clients send (401), or
            # refuses the request as it would refuse a client's (400, 422: the clients'
            # check request then shows why). Before the app is up, Serve's proxy answers
            # 404 (no route yet) or 5xx.
            if error.code in _APP_ANSWERS:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(_POLL_S)
    raise ServerNotReady(
        f"{server.base_url}/v1/models did not answer in {timeout_s} s", server.logs()
    )


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the command's process group, SIGKILL what is left after ``STOP_TIMEOUT_S``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue
