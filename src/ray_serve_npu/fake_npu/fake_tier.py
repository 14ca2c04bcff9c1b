"""The fake-NPU tier: a page's commands against fake NPUs, a real Ray and a real engine.

What is real: Ray (a local cluster), Ray Serve LLM and the plugin, vLLM (its CPU
build), HTTP, the OpenAI API. What is fake: the ``NPU`` resources (no device
behind them), the platform vLLM reports to Ray (CPU compute that asks Ray for
NPUs, :mod:`ray_serve_npu.fake_npu.fake_platform`), and the model (tiny, random
weights; :mod:`ray_serve_npu.fake_npu.tiny_model`). Recipes run unchanged; the
plugin swaps in the tiny model and logs each setting it drops
(:mod:`ray_serve_npu.fake_npu.adapter`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ray_serve_npu.envs import (
    CLIENT_API_KEY_ENV_VAR,
    DEVICE_RECORD_DIR_ENV_VAR,
    DRY_RUN_MODEL_ENV_VAR,
    DRY_RUN_STAND_INS_ENV_VAR,
)
from ray_serve_npu.fake_npu.adapter import StandIns, adapt_env, adapt_vllm_serve, log_changes
from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, fake_npu_cluster
from ray_serve_npu.fake_npu.direct import vllm_server_argv
from ray_serve_npu.fake_npu.processes import (
    READY_TIMEOUT_S,
    ProcessServer,
    ensure_port_free,
    start_process_group,
    stop_process_group,
    wait_until_ready,
)
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS, tiny_model
from ray_serve_npu.ingress import fresh_api_key
from ray_serve_npu.vllm_cli import find_compose_file, interpolate_compose, vllm_serve_service


def _compose_file_of(argv: Sequence[str], cwd: Path) -> Path | None:
    """The Compose file of ``docker compose [-f FILE] up ...``, or None for other commands."""
    if argv[:2] != ["docker", "compose"] or "up" not in argv:
        return None
    named = next(
        (argv[i + 1] for i, word in enumerate(argv[:-1]) if word in {"-f", "--file"}), None
    )
    return find_compose_file(cwd, named)


def device_record_dir(workdir: Path) -> Path:
    """Where the tier's engine workers record the NPUs Ray gave them."""
    return workdir / "devices"


def adaptation_env(model_dir: Path, stand_ins: StandIns, record_dir: Path) -> dict[str, str]:
    """The variables that make a process deploy each ``LLMConfig`` in its fake-tier variant."""
    return {
        DRY_RUN_MODEL_ENV_VAR: str(model_dir),
        DRY_RUN_STAND_INS_ENV_VAR: json.dumps({k: str(path) for k, path in stand_ins.items()}),
        DEVICE_RECORD_DIR_ENV_VAR: str(record_dir),
    }


class FakeNPUTier:
    """Runs a page's server blocks on a :class:`FakeNPUCluster`: the tier protocol of the
    docs harness, which lives in the repository's tooling, not in this package."""

    name = "fake-npu"
    fake = True

    def __init__(
        self,
        cluster: FakeNPUCluster,
        model_dir: Path,
        workdir: Path,
        stand_ins: StandIns | None = None,
    ) -> None:
        self.cluster = cluster
        self.model_dir = model_dir
        #: The tiny model of each architecture class (the MoE one serves data parallel).
        self.stand_ins = dict(stand_ins or {})
        self.workdir = workdir
        self.device_record_dir = device_record_dir(workdir)
        self.api_key = fresh_api_key()

    def env(self) -> dict[str, str]:
        return {
            **self.cluster.env(),
            CLIENT_API_KEY_ENV_VAR: self.api_key,
            # `python` in a block is the interpreter running the tier, with its packages.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            **adaptation_env(self.model_dir, self.stand_ins, self.device_record_dir),
        }

    def _server_argv(self, command: str, cwd: Path) -> tuple[list[str], dict[str, str]] | None:
        """For a ``docker compose up`` block: the CPU engine's argv and environment."""
        compose_file = _compose_file_of(shlex.split(command), cwd)
        if compose_file is None:
            return None
        # No Docker engine here: run the Compose service's `vllm serve` on the CPU engine.
        service = vllm_serve_service(compose_file)
        argv, changes = adapt_vllm_serve(service.command, self.model_dir, stand_ins=self.stand_ins)
        shell = {**os.environ, **self.env()}
        env, env_changes = adapt_env(
            {name: interpolate_compose(value, shell) for name, value in service.environment.items()}
        )
        log_changes(changes + env_changes)
        return vllm_server_argv(argv), env

    @contextlib.contextmanager
    def serve(
        self, command: str, *, cwd: Path, port: int, env: Mapping[str, str] | None = None
    ) -> Iterator[ProcessServer]:
        ensure_port_free(port)
        compose = self._server_argv(command, cwd)
        argv, extra_env = compose or (["bash", "-c", command], {})
        log_file = self.workdir / f"server-{time.monotonic_ns()}.log"
        process = start_process_group(
            argv,
            cwd=cwd,
            env={**os.environ, **self.env(), **(env or {}), **extra_env},
            log_file=log_file,
        )
        server = ProcessServer(f"http://127.0.0.1:{port}", log_file, process)
        try:
            wait_until_ready(server, READY_TIMEOUT_S)
            yield server
        finally:
            stop_process_group(process)
            if compose is None:
                # A Serve app outlives the driver that deployed it.
                self._shutdown_serve()

    def _shutdown_serve(self) -> None:
        script = (
            "import ray; from ray import serve; ray.init(logging_level='ERROR'); serve.shutdown()"
        )
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, **self.cluster.env()},
            capture_output=True,
            timeout=120,
            check=True,
        )


@contextlib.contextmanager
def fake_npu_tier(
    workdir: Path, nodes: Sequence[FakeNode] = (FakeNode(),)
) -> Iterator[FakeNPUTier]:
    """Start a fake NPU cluster and build the tiny model; yield the tier; stop everything.

    Leaving the context raises :class:`~ray_serve_npu.fake_npu.cluster.ClusterLeftovers`
    if any Ray or vLLM process of the cluster outlived it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    stand_ins = {kind: tiny_model(workdir, spec) for kind, spec in STAND_IN_SPECS.items()}
    # The dense stand-in is the tier's model wherever a class has none.
    model_dir = stand_ins["dense"]
    # The nodes adapt too: a Serve config's app is built in a task of the cluster's
    # (Serve's controller runs `build_serve_application`), not in the command's process.
    node_env = adaptation_env(model_dir, stand_ins, device_record_dir(workdir))
    with fake_npu_cluster(nodes, node_env=node_env) as cluster:
        yield FakeNPUTier(cluster, model_dir, workdir, stand_ins)
