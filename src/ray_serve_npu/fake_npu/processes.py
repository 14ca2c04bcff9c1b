"""Servers started as process groups: wait until they answer, stop them and all they started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

STOP_TIMEOUT_S = 60
#: The port every page's server uses; tests and the bench keep off it, so that a
#: page's server never meets another one there.
PAGES_PORT = 8000
_POLL_S = 2.0


@dataclass
class ProcessServer:
    """A server a tier started: where clients reach it, and its output for failure messages."""

    base_url: str
    log_file: Path

    def logs(self) -> str:
        return self.log_file.read_text(errors="replace")


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


def free_port() -> int:
    """A free TCP port on 127.0.0.1 other than :data:`PAGES_PORT`."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != PAGES_PORT:
            return port


def start_process_group(
    argv: list[str], *, cwd: Path, env: dict[str, str], log_file: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session, so that stopping it reaches everything it starts."""
    with log_file.open("wb") as log:
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def wait_until_ready(
    server: ProcessServer, process: subprocess.Popen[bytes], timeout_s: float
) -> None:
    """Until ``/v1/models`` answers; a command that exits 0 may have started a detached server."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = process.poll()
        if code not in (None, 0):
            raise RuntimeError(f"the server command exited with {code}:\n{server.logs()[-8000:]}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/v1/models", timeout=10):
                return
        except urllib.error.HTTPError as error:
            # The app answers; it wants the API key that the page's clients send.
            if error.code == 401:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(_POLL_S)
    raise RuntimeError(
        f"{server.base_url}/v1/models did not answer in {timeout_s} s:\n{server.logs()[-8000:]}"
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
