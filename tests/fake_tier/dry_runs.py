"""The site's recipes served as a reader dry-runs them, for the modules that test them."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

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


def dry_run(recipe: Path) -> subprocess.CompletedProcess[str]:
    """``ray-serve-npu dry-run RECIPE`` from the recipe's directory, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "ray_serve_npu.cli", "dry-run", str(recipe)],
        cwd=recipe.parent,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
        capture_output=True,
        text=True,
        timeout=900,
    )
