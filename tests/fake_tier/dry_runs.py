"""The site's recipes served as a reader dry-runs them, for the modules that test them."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from ray_serve_npu.envs import AUTH_TOKEN_ENV_VAR, DEVICE_RECORD_DIR_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.dry_run import DryRunProcess, keep_serving

RECIPES = Path(__file__).parents[2] / "recipes"


@contextlib.contextmanager
def dry_run_serving(
    args: Sequence[str], tmp_path_factory: pytest.TempPathFactory, *, ready_timeout_s: float
) -> Iterator[DryRunProcess]:
    """``ray-serve-npu dry-run ARGS --keep-serving`` in ``recipes/``, serving until the
    block ends; its output in a temp dir named after the recipe (the last argument)."""
    with keep_serving(
        args,
        cwd=RECIPES,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
        log_file=tmp_path_factory.mktemp(f"dry-run-{Path(args[-1]).stem}") / "dry-run.log",
        ready_timeout_s=ready_timeout_s,
    ) as run:
        yield run


def dry_run(
    recipe: Path,
    *recipe_args: str,
    env: Mapping[str, str] | None = None,
    options: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``ray-serve-npu dry-run OPTIONS RECIPE -- ARGS`` from the recipe's directory, to its
    end, with ``env`` over this process's environment."""
    after = ["--", *recipe_args] if recipe_args else []
    return subprocess.run(
        [sys.executable, "-m", "ray_serve_npu.cli", "dry-run", *options, str(recipe), *after],
        cwd=recipe.parent,
        env={**os.environ, "RAY_AUTH_MODE": "disabled", **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )


@dataclass(frozen=True)
class ServingCluster:
    """The fake cluster of a ``dry-run --keep-serving``, as a test reads it: the address
    the command printed, and what its head node's ``ray start`` process was given."""

    #: Environment for a driver of the cluster: its address and its token (kept out of
    #: the repr, which a failing test's traceback prints).
    driver_env: dict[str, str] = field(repr=False)
    #: Ray's temp dir for the cluster (``session_latest/logs`` holds Serve's logs).
    temp_dir: Path
    #: Where the engine workers record the NPUs Ray gave them.
    device_record_dir: Path


_CLUSTER_LINE = re.compile(r"^fake-npu tier: \d+ fake \S+ node\(s\) at (\S+)$", re.MULTILINE)


def _children(pid: int) -> list[tuple[psutil.Process, set[str]]]:
    """The processes ``pid`` started itself (the nodes' ``ray start``), with their argv;
    without one that exits meanwhile."""
    children = []
    for child in psutil.Process(pid).children():
        with contextlib.suppress(psutil.NoSuchProcess):
            children.append((child, set(child.cmdline())))
    return children


def serving_cluster(run: DryRunProcess) -> ServingCluster:
    """Read the cluster of ``run``, a dry-run that serves, from its output and processes."""
    (address,) = _CLUSTER_LINE.findall(run.output())
    ((head, argv),) = [
        (node, argv) for node, argv in _children(run.process.pid) if {"--head", "--block"} <= argv
    ]
    environ = head.environ()
    (temp_dir,) = [arg.split("=", 1)[1] for arg in argv if arg.startswith("--temp-dir=")]
    return ServingCluster(
        driver_env={
            "RAY_ADDRESS": address,
            RAY_AUTH_MODE_ENV_VAR: environ[RAY_AUTH_MODE_ENV_VAR],
            AUTH_TOKEN_ENV_VAR: environ[AUTH_TOKEN_ENV_VAR],
        },
        temp_dir=Path(temp_dir),
        device_record_dir=Path(environ[DEVICE_RECORD_DIR_ENV_VAR]),
    )
