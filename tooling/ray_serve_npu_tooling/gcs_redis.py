"""A Redis for a fake cluster's GCS fault tolerance: Debian's ``redis-server`` on loopback.

It is kept as the KubeRay recipe asks of the operator's Redis: a password, in a
configuration file only its owner reads; nothing written to disk; nothing but loopback.
Ray itself passes the password on the command lines of the head's processes
(``ray start --redis-password``, as KubeRay starts a head). :func:`gcs_redis` yields
the :class:`~ray_serve_npu.fake_npu.cluster.GcsStorage` a :class:`FakeNPUCluster` takes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ray_serve_npu.fake_npu.cluster import GcsStorage
from ray_serve_npu.fake_npu.processes import free_port

REDIS_SERVER = "redis-server"
#: How .ci/run installs it; a test that needs it skips with this where it is missing.
INSTALL_HINT = "apt-get install -y redis-server"
HOST = "127.0.0.1"
START_TIMEOUT_S = 30


def redis_server_missing() -> str | None:
    """Why :func:`gcs_redis` can't run here, or None."""
    if shutil.which(REDIS_SERVER):
        return None
    return f"{REDIS_SERVER} is not on PATH: {INSTALL_HINT} (.ci/run does)"


def _answers(port: int, password: str) -> bool:
    """Redis on ``port`` takes ``password`` and answers PING (RESP inline commands)."""
    try:
        with socket.create_connection((HOST, port), timeout=2) as connection:
            connection.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            reply = b""
            while reply.count(b"\r\n") < 2:
                chunk = connection.recv(256)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return False
    return reply == b"+OK\r\n+PONG\r\n"


@contextmanager
def gcs_redis(directory: Path, namespace: str) -> Iterator[GcsStorage]:
    """Run ``redis-server`` with its configuration in ``directory`` until exit."""
    if missing := redis_server_missing():
        raise RuntimeError(missing)
    port = free_port()
    password = secrets.token_hex(32)
    config = directory / "redis.conf"
    log = directory / "redis.log"
    # Made new, readable by its owner only, before the password goes in.
    with os.fdopen(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(
            f"bind {HOST}\nport {port}\nrequirepass {password}\n"
            # Nothing on disk: the fake cluster's tables live as long as this server.
            f'save ""\nappendonly no\ndir {directory}\nlogfile {log}\n'
        )
    # What it prints before it opens its log file (a bad setting) goes to the log too.
    with log.open("ab") as early_output:
        process = subprocess.Popen(
            [REDIS_SERVER, str(config)], stdout=early_output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port, password):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"{REDIS_SERVER} did not answer on {HOST}:{port} within {START_TIMEOUT_S} s:\n"
                    + log.read_text(errors="replace")[-2000:]
                )
            time.sleep(0.2)
        yield GcsStorage(address=f"{HOST}:{port}", password=password, namespace=namespace)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
