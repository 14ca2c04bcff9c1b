"""The Ascend tier: runs a page's server block as written, on a host with NPUs.

Also where the tier is chosen: :func:`select_tier` starts this tier where NPUs are
detected and the fake-NPU tier (:mod:`ray_serve_npu.fake_npu.fake_tier`) elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from ray_serve_npu.envs import CLIENT_API_KEY_ENV_VAR, MODEL_PATH_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.processes import (
    ProcessServer,
    ensure_port_free,
    start_process_group,
    stop_process_group,
    wait_until_ready,
)
from ray_serve_npu.ingress import fresh_api_key
from ray_serve_npu_tooling.harness.tier import Server, Tier

from .scenario import API_KEY_FILE
from .server_config import commands

#: The fake tier's name, known before it starts (test ids are made at collection).
FAKE_TIER_NAME = "fake-npu"
#: Loading DeepSeek-V4-Flash weights and capturing graphs takes many minutes.
READY_TIMEOUT_S = 1800


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
    from ray_serve_npu.fake_npu.fake_tier import fake_npu_tier

    with fake_npu_tier(workdir) as tier:
        yield tier


class AscendTier:
    """Runs server blocks as written, in a process group of their own, with ``MODEL_PATH`` set."""

    name = "ascend"
    fake = False

    def __init__(self, model_path: str, home: Path | None = None) -> None:
        self.model_path = model_path
        self.api_key = fresh_api_key()
        #: Where the pages' blocks keep their API key file: the host's home, as written.
        self.home = home or Path.home()

    def client_key(self) -> str:
        """The key the pages' clients send: the key file their ``make_secrets.py`` block
        writes, which the app's server block reads too; the tier's own until it exists."""
        try:
            return (self.home / API_KEY_FILE).read_text().strip() or self.api_key
        except FileNotFoundError:
            return self.api_key

    def env(self) -> Mapping[str, str]:
        return {
            MODEL_PATH_ENV_VAR: self.model_path,
            # Read for each block: the page writes the file in one block, uses it in later ones.
            CLIENT_API_KEY_ENV_VAR: self.client_key(),
            # What the pages' `docker run -e RAY_AUTH_MODE=token` gives every shell in
            # the container; the token is the one the page's cluster block makes.
            RAY_AUTH_MODE_ENV_VAR: "token",
        }

    @contextlib.contextmanager
    def serve(
        self, command: str, *, cwd: Path, port: int, env: Mapping[str, str] | None = None
    ) -> Iterator[Server]:
        with tempfile.TemporaryDirectory(prefix="ascend-server-") as logs:
            log_file = Path(logs) / "server.log"
            ensure_port_free(port)
            process = start_process_group(
                ["bash", "-c", command],
                cwd=cwd,
                env={**os.environ, **self.env(), **(env or {})},
                log_file=log_file,
            )
            server = ProcessServer(f"http://127.0.0.1:{port}", log_file, process)
            try:
                wait_until_ready(server, READY_TIMEOUT_S)
                yield server
            finally:
                stop_process_group(process)
                undo_detached(command, cwd, process)


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
