"""The Ascend tier: runs a page's server block as written, on a host with NPUs.

Also where the tier is chosen: :func:`select_tier` starts this tier where NPUs are
detected and the fake-NPU tier (:mod:`ray_serve_npu.testing.fake_tier`) elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .harness.server_config import commands
from .tier import MODEL_PATH_ENV_VAR, Server, Tier

#: The fake tier's name, known before it starts (test ids are made at collection).
FAKE_TIER_NAME = "fake-npu"
#: Loading DeepSeek-V4-Flash weights and capturing graphs takes many minutes.
READY_TIMEOUT_S = 1800
STOP_TIMEOUT_S = 60
_POLL_S = 2.0


def detect_npus(dev: Path = Path("/dev"), npu_smi: str | None = None) -> int:
    """How many Ascend NPUs this host has: ``/dev/davinciN`` devices, else ``npu-smi``'s count."""
    devices = [p for p in dev.glob("davinci[0-9]*") if p.name.removeprefix("davinci").isdigit()]
    if devices:
        return len(devices)
    npu_smi = npu_smi or shutil.which("npu-smi")
    if npu_smi is None:
        return 0
    result = subprocess.run(
        [npu_smi, "info", "-l"], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        return 0
    return sum(1 for line in result.stdout.splitlines() if line.strip().startswith("NPU ID"))


def planned_tier_name(npus: int) -> str:
    return AscendTier.name if npus else FAKE_TIER_NAME


@contextlib.contextmanager
def select_tier(workdir: Path, *, npus: int, env: Mapping[str, str] = os.environ) -> Iterator[Tier]:
    """The Ascend tier where ``npus`` > 0 (it needs only ``MODEL_PATH``), else the fake tier."""
    if npus:
        model_path = env.get(MODEL_PATH_ENV_VAR)
        if not model_path:
            raise RuntimeError(
                f"{npus} NPUs detected, so the recipes run on them, but {MODEL_PATH_ENV_VAR} "
                f"is not set: set {MODEL_PATH_ENV_VAR} to the model weights' directory"
            )
        yield AscendTier(model_path)
        return
    # Imported here: the fake tier brings Ray and vLLM, which the Ascend path must not need.
    from .fake_tier import fake_npu_tier

    with fake_npu_tier(workdir) as tier:
        yield tier


@dataclass
class ProcessServer:
    base_url: str
    log_file: Path

    def logs(self) -> str:
        return self.log_file.read_text(errors="replace")


class AscendTier:
    """Runs server blocks as written, in a process group of their own, with ``MODEL_PATH`` set."""

    name = "ascend"
    fake = False

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path

    def env(self) -> Mapping[str, str]:
        return {MODEL_PATH_ENV_VAR: self.model_path}

    @contextlib.contextmanager
    def serve(self, command: str, *, cwd: Path, port: int) -> Iterator[Server]:
        with tempfile.TemporaryDirectory(prefix="ascend-server-") as logs:
            server = ProcessServer(f"http://127.0.0.1:{port}", Path(logs) / "server.log")
            with server.log_file.open("w") as log:
                process = subprocess.Popen(
                    ["bash", "-c", command], cwd=cwd, env={**os.environ, **self.env()},
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            try:
                wait_until_ready(server, process)
                yield server
            finally:
                stop_process_group(process)
                undo_detached(command, cwd, process)


def wait_until_ready(server: ProcessServer, process: subprocess.Popen[bytes]) -> None:
    """Until ``/v1/models`` answers; a command that exits 0 may have started a detached server."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        code = process.poll()
        if code not in (None, 0):
            raise RuntimeError(f"the server command exited with {code}:\n{server.logs()}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/v1/models", timeout=10):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(_POLL_S)
    raise RuntimeError(
        f"{server.base_url}/v1/models did not answer in {READY_TIMEOUT_S} s:\n{server.logs()}"
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


def undo_detached(command: str, cwd: Path, process: subprocess.Popen[bytes]) -> None:
    """Stop what the command left running after it exited: Compose services, or Serve apps."""
    for words in commands(command):
        if words[:2] == ["docker", "compose"] and "up" in words:
            up = words.index("up")
            subprocess.run([*words[:up], "down"], cwd=cwd, check=False)
            return
    if process.returncode == 0:
        # It returned before we stopped it, so it deployed to a cluster that outlives it.
        subprocess.run(["serve", "shutdown", "-y"], cwd=cwd, check=False)
