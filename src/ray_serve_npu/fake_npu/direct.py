"""vLLM's own OpenAI server on the fake-NPU tier: the Compose path's server, without Docker.

The one way the tier, its tests and the benchmark harness start ``vllm serve``
directly: vLLM's CPU build with the tiny model, in a process group of its own.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ray_serve_npu.fake_npu.processes import (
    READY_TIMEOUT_S,
    ProcessServer,
    free_port,
    start_process_group,
    stop_process_group,
    wait_until_ready,
)


def vllm_server_argv(args: Sequence[str]) -> list[str]:
    """``vllm serve ARGS`` as this interpreter runs it: vLLM's OpenAI server module.

    The module, not the ``vllm`` script: the script is where pip put it, which is
    not always beside the interpreter that has the CPU build.
    """
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *args]


@contextlib.contextmanager
def serve_vllm(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    workdir: Path,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> Iterator[ProcessServer]:
    """vLLM's OpenAI server with ``args``, on a free loopback port, until the block ends.

    Raises :class:`~ray_serve_npu.fake_npu.processes.ServerNotReady`, with the last
    error of its log, if it exits or does not answer in ``ready_timeout_s``.
    """
    port = free_port()
    log_file = workdir / f"vllm-{port}.log"
    argv = vllm_server_argv([*args, "--host", "127.0.0.1", "--port", str(port)])
    process = start_process_group(argv, cwd=workdir, env=dict(env), log_file=log_file)
    server = ProcessServer(f"http://127.0.0.1:{port}", log_file, process)
    try:
        wait_until_ready(server, ready_timeout_s)
        yield server
    finally:
        stop_process_group(process)
