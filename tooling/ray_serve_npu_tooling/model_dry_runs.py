"""Every model of the models page, dry-run on the fake-NPU tier with ``serve_model.py``.

For each model (each weights repository) that vLLM-Ascend's runs serve at the release the
Ray Serve LLM path pins, this dry-runs the first of its runs as a reader would:
``ray-serve-npu dry-run serve_model.py -- RUN``, on as many fake nodes of the run's kind
as the run spans, and records what the dry-run printed: which tiny model stood in for the
weights (and why), the name served, whether the chat request was answered, and otherwise
the dry-run's own error. The models page reads the record (``MODEL_DRY_RUNS_FILE``);
nothing on the page is typed by hand.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs, tiny random models. Run it alone,
in an environment with vLLM's CPU build (``nox -s bench`` makes one), from the
repository's root::

    python -m ray_serve_npu_tooling.model_dry_runs [--run RUN ...]

Each dry-run's seconds are in the record. ``--run`` dry-runs only the named models' runs
again and keeps the rest of the record. It is not part of the test suite, whose
fake-NPU tier serves the runs ``ray_serve_npu_tooling.served_runs`` names.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ray_serve_npu import compat
from ray_serve_npu.check import Severity, check_serve_run
from ray_serve_npu.envs import CACHE_DIR_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.fake_npu.processes import stop_process_group
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.releases.runs import serve_runs

#: The record, below the site's source directory (``docs/`` from the repository's root).
MODEL_DRY_RUNS_FILE = Path("_static") / "model-dry-runs.json"
DOCS_DIR = Path("docs")
RECIPES_DIR = Path("recipes")
#: How long one dry-run may take: the tier's own limit for a server to come up, and more.
DRY_RUN_TIMEOUT_S = 900
#: The line the fake tier prints for the weights a tiny model stands in for.
_STAND_IN_FIELD = "fake-npu tier: model_loading_config.model_source: "
_ERROR_PREFIX = "ray-serve-npu dry-run: "


def committed_dry_runs(docs_dir: Path) -> dict[str, Any]:
    """The record this command last wrote under ``docs_dir``, the site's source directory."""
    return json.loads((docs_dir / MODEL_DRY_RUNS_FILE).read_text(encoding="utf-8"))


def answered_runs(record: dict[str, Any]) -> dict[str, str]:
    """The record's runs that answered, by the name ``serve_model.py`` takes, with the day
    each was dry-run."""
    return {d["run"]: d["date"] for d in record["dry_runs"] if d["answered"]}


def stand_in_reason(line: str) -> str:
    """Why a tiny model stood in, from the tier's line for the weights: the words in its
    parentheses (``'/models/X' -> '/tmp/.../tiny-llama-1a2b' (why)``)."""
    _, _, why = line.partition(" (")
    return why.removesuffix(")") or line


def first_run_of_each_model(tag: str) -> list[ServeRun]:
    """The first run of each weights repository at ``tag`` that ``serve_model.py`` starts
    (the checker finds no error in it), in the order of ``serve_runs``; where it refuses
    every run of a model, the first, so that the record shows the refusal."""
    by_model: dict[str, list[ServeRun]] = {}
    for run in serve_runs(tag):
        by_model.setdefault(run.model, []).append(run)
    return [next((run for run in runs if not _refused(run)), runs[0]) for runs in by_model.values()]


def _refused(run: ServeRun) -> bool:
    return any(f.severity is Severity.ERROR for f in check_serve_run(run))


def command_for(run: ServeRun) -> list[str]:
    """The reader's command, from ``recipes/``: the run on its nodes of its kind (A2 where
    neither its config nor the CI's schedule names one; the tier gives each node the NPUs
    of its kind)."""
    return [
        "ray-serve-npu",
        "dry-run",
        "serve_model.py",
        "--nodes",
        str(run.nodes),
        "--node-kind",
        run.node_kind or "A2",
        "--",
        run_key(run),
    ]


def read_output(stdout: str, stderr: str, returncode: int) -> dict[str, Any]:
    """What a dry-run printed: the stand-in line, the served name, and its verdict."""
    stand_in = next(
        (
            line.removeprefix(_STAND_IN_FIELD)
            for line in stdout.splitlines()
            if line.startswith(_STAND_IN_FIELD)
        ),
        None,
    )
    served = [
        line.split(" serves ", 1)[1].split(";", 1)[0].strip("'")
        for line in stdout.splitlines()
        if line.endswith(CHAT_LINE_END) and " serves " in line
    ]
    answered = returncode == 0 and bool(served) and stdout.rstrip().endswith(STOPPED_LINE)
    record: dict[str, Any] = {"answered": answered, "stand_in": stand_in, "served_as": served}
    if not answered:
        errors = [line for line in stderr.splitlines() if line.startswith(_ERROR_PREFIX)]
        record["error"] = (
            errors[-1].removeprefix(_ERROR_PREFIX)
            if errors
            else f"exited with {returncode} and no error line"
        )
    return record


def dry_run(run: ServeRun, cache: Path) -> dict[str, Any]:
    """Dry-run ``run`` as the models page tells a reader to, with its weights' folder."""
    argv = command_for(run)
    env = {
        **os.environ,
        # The weights' folder the page sets; the tier puts a tiny model in its place.
        "MODEL_PATH": f"/models/{run.model.rsplit('/', 1)[-1]}",
        RAY_AUTH_MODE_ENV_VAR: "disabled",
        CACHE_DIR_ENV_VAR: str(cache),
    }
    started = time.monotonic()
    # A process group of its own: a dry-run that runs out of time is stopped as the tier
    # stops its servers (SIGTERM, which stops its fake cluster, then SIGKILL); killing the
    # command alone would leave the cluster running beside the next model's. Its output
    # goes to files, which a process stopped midway can't block on.
    with tempfile.TemporaryDirectory(prefix="model-dry-run-") as out:
        stdout_file, stderr_file = Path(out) / "stdout", Path(out) / "stderr"
        with stdout_file.open("wb") as stdout, stderr_file.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "ray_serve_npu.cli", *argv[1:]],
                cwd=RECIPES_DIR,
                env=env,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        try:
            process.wait(timeout=DRY_RUN_TIMEOUT_S)
            read = read_output(
                stdout_file.read_text(errors="replace"),
                stderr_file.read_text(errors="replace"),
                process.returncode,
            )
        except subprocess.TimeoutExpired:
            stop_process_group(process)
            read = {
                "answered": False,
                "stand_in": None,
                "served_as": [],
                "error": f"no end within {DRY_RUN_TIMEOUT_S} s",
            }
    return {
        "run": run_key(run),
        "model": run.model,
        "date": datetime.date.today().isoformat(),
        "command": " ".join(argv),
        "seconds": round(time.monotonic() - started, 1),
        **read,
    }


def main(argv: list[str] | None = None) -> int:
    import ray
    import vllm

    parser = argparse.ArgumentParser(prog="python -m ray_serve_npu_tooling.model_dry_runs")
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="RUN",
        help="dry-run only this model's run again and keep the record's other models "
        "(repeatable), after a fix that concerns it",
    )
    args = parser.parse_args(argv)
    tag = compat.VLLM_ASCEND.tag
    out = DOCS_DIR / MODEL_DRY_RUNS_FILE
    chosen = first_run_of_each_model(tag)
    unknown = sorted(set(args.run) - {run_key(run) for run in chosen})
    if unknown:
        names = ", ".join(run_key(run) for run in chosen)
        parser.error(f"--run {' '.join(unknown)}: not a run this command dry-runs; it runs {names}")
    kept: dict[str, dict[str, Any]] = {}
    if args.run:
        if not out.is_file():
            parser.error(f"--run needs the record {out} to update; run the command without it")
        before = committed_dry_runs(DOCS_DIR)
        now = {"release": tag, "ray": ray.__version__, "vllm": vllm.__version__}
        changed = {k: (before[k], v) for k, v in now.items() if before[k] != v}
        if changed:
            parser.error(
                f"--run keeps the record's other rows, which ran with other versions "
                f"({', '.join(f'{k} {a} here {b}' for k, (a, b) in changed.items())}); "
                "run the command without --run"
            )
        kept = {d["run"]: d for d in before["dry_runs"]}
    records = []
    with tempfile.TemporaryDirectory(prefix="model-dry-runs-") as cache:
        for run in chosen:
            if args.run and run_key(run) not in args.run and run_key(run) in kept:
                records.append(kept[run_key(run)])
                continue
            record = dry_run(run, Path(cache))
            print(json.dumps(record), flush=True)
            records.append(record)
    out.write_text(
        json.dumps(
            {
                "release": tag,
                "ray": ray.__version__,
                "vllm": vllm.__version__,
                # The newest dry-run's day; each dry-run has its own.
                "date": max(record["date"] for record in records),
                "command": "python -m ray_serve_npu_tooling.model_dry_runs",
                "dry_runs": records,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out}")
    return 0 if all(record["answered"] for record in records) else 1


if __name__ == "__main__":
    sys.exit(main())
