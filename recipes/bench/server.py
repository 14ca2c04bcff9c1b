"""Start the server a sweep measures, once per combination of server settings."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from ray_serve_npu.fake_npu.processes import (
    ProcessServer,
    ensure_port_free,
    start_process_group,
    stop_process_group,
    wait_until_ready,
)

from .config import SweepConfig


@contextlib.contextmanager
def launched_server(
    config: SweepConfig, server_settings: dict[str, str], log_file: Path
) -> Iterator[ProcessServer]:
    """``--serve-cmd`` with these settings, until it answers; stopped with all it started."""
    parts = urlsplit(config.base_url)
    ensure_port_free(parts.port or 80, parts.hostname or "127.0.0.1")
    # Unbuffered: the server's log reaches the file as it is written, also when
    # the server is stopped (a SIGTERM'd vLLM may exit without flushing stdout).
    process = start_process_group(
        config.serve_argv(server_settings),
        cwd=Path.cwd(),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        log_file=log_file,
    )
    server = ProcessServer(config.base_url, log_file, process)
    try:
        wait_until_ready(server, config.server_ready_timeout_s)
        yield server
    finally:
        stop_process_group(process)
