"""Every model of the models page, dry-run on the fake-NPU tier with ``serve_model.py``.

For each model (each weights repository) that vLLM-Ascend's runs serve at the release the
Ray Serve LLM path pins, this dry-runs the first of its runs as a reader would, on both
paths: ``ray-serve-npu dry-run serve_model.py -- RUN``, on as many fake nodes of the run's
kind as the run spans, and, for a run of one node, the Compose file that
``serve_model.py --compose RUN`` prints, with ``ray-serve-npu dry-run FILE`` (vLLM's own
server in place of the container). It records what each dry-run printed: which tiny model
stood in for the weights (and why), the name served, whether the chat request was
answered, and otherwise the dry-run's own error. The models page reads the record
(``MODEL_DRY_RUNS_FILE``); nothing on the page is typed by hand.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs, tiny random models. Run it alone,
in an environment with vLLM's CPU build (``nox -s bench`` makes one), from the
repository's root::

    python -m ray_serve_npu_tooling.model_dry_runs [--run RUN ...] [--path PATH]

Each dry-run's seconds are in the record. ``--run`` dry-runs only the named models' runs
again, and ``--path`` one path, and they keep the rest of the record. It is not part of
the test suite, whose fake-NPU tier serves the runs ``ray_serve_npu_tooling.served_runs``
names.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray_serve_npu import compat
from ray_serve_npu.check import Severity, check_serve_run
from ray_serve_npu.envs import CACHE_DIR_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.fake_npu.processes import stop_process_group
from ray_serve_npu.model_compose import ComposeError, compose_for
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.releases.runs import serve_runs

#: The record, below the site's source directory (``docs/`` from the repository's root).
MODEL_DRY_RUNS_FILE = Path("_static") / "model-dry-runs.json"
DOCS_DIR = Path("docs")
RECIPES_DIR = Path("recipes")
#: How long one dry-run may take: the tier's own limit for a server to come up, and more.
DRY_RUN_TIMEOUT_S = 900
#: The line the fake tier prints for the weights a tiny model stands in for, on each path.
_STAND_IN_FIELD = "fake-npu tier: model_loading_config.model_source: "
_COMPOSE_STAND_IN_FIELD = "fake-npu tier: vllm serve MODEL: "
#: The serving paths, as ``--path`` names them.
PATHS = ("ray-serve-llm", "compose")
_ERROR_PREFIX = "ray-serve-npu dry-run: "


def committed_dry_runs(docs_dir: Path) -> dict[str, Any]:
    """The record this command last wrote under ``docs_dir``, the site's source directory."""
    return json.loads((docs_dir / MODEL_DRY_RUNS_FILE).read_text(encoding="utf-8"))


def answered_runs(record: dict[str, Any]) -> dict[str, str]:
    """The record's runs that answered, by the name ``serve_model.py`` takes, with the day
    each was dry-run."""
    return {d["run"]: d["date"] for d in record["dry_runs"] if d["answered"]}


def dry_run_days(rows: list[dict[str, Any]]) -> list[str]:
    """The days the record's dry-runs ran, on either path, oldest first."""
    dated = [row for r in rows for row in (r, r.get("compose", {})) if "date" in row]
    return sorted({row["date"] for row in dated})


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
    """The reader's command, from ``recipes/``: the run on its nodes of the kind its name
    gives (A2 where its name gives none, even where the CI's schedule names one; the tier
    gives each node the NPUs of its kind)."""
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


def read_output(
    stdout: str, stderr: str, returncode: int, stand_in_field: str = _STAND_IN_FIELD
) -> dict[str, Any]:
    """What a dry-run printed: the stand-in line (``vllm serve``'s own server prints it on
    stderr), the served name, and its verdict."""
    stand_in = next(
        (
            line.removeprefix(stand_in_field)
            for line in (stdout + "\n" + stderr).splitlines()
            if line.startswith(stand_in_field)
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


@dataclass(frozen=True)
class ComposeDryRun:
    """The reader's two commands for a run's Compose file, from ``recipes/``: write it with
    ``serve_model.py --compose``, then dry-run it on a fake node of its kind."""

    write: tuple[str, ...]
    file_name: str
    dry_run: tuple[str, ...]

    @property
    def command(self) -> str:
        return " ".join([*self.write, ">", self.file_name, "&&", *self.dry_run])


def compose_command_for(run: ServeRun) -> ComposeDryRun | str:
    """The commands that dry-run the run's Compose file (A2 where the run's source names
    no node kind and either kind holds it); or why ``serve_model.py --compose`` writes
    none."""
    try:
        compose, kind = compose_for(run), ()
    except ComposeError as error:
        try:
            compose, kind = compose_for(run, "A2"), ("--node-kind", "A2")
        except ComposeError:
            return str(error)
    return ComposeDryRun(
        write=("python", "serve_model.py", "--compose", run_key(run), *kind),
        file_name=compose.file_name,
        dry_run=("ray-serve-npu", "dry-run", "--node-kind", compose.node_kind, compose.file_name),
    )


def _run_to_end(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, str, int] | None:
    """``argv``'s output and exit code; None where it ran out of time and was stopped.

    A process group of its own: a dry-run that runs out of time is stopped as the tier
    stops its servers (SIGTERM, which stops its fake cluster, then SIGKILL); killing the
    command alone would leave the cluster running beside the next model's. Its output
    goes to files, which a process stopped midway can't block on."""
    with tempfile.TemporaryDirectory(prefix="model-dry-run-") as out:
        stdout_file, stderr_file = Path(out) / "stdout", Path(out) / "stderr"
        with stdout_file.open("wb") as stdout, stderr_file.open("wb") as stderr:
            process = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr, start_new_session=True
            )
        try:
            process.wait(timeout=DRY_RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop_process_group(process)
            return None
        return (
            stdout_file.read_text(errors="replace"),
            stderr_file.read_text(errors="replace"),
            process.returncode,
        )


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"exited with {done.returncode} and no error line"


def dry_run(run: ServeRun, cache: Path, path: str) -> dict[str, Any]:
    """Dry-run ``run`` on ``path`` as the models page tells a reader to, with its weights'
    folder: its fields of the record (``path`` "compose": the value of its ``compose``)."""
    env = {
        **os.environ,
        # The weights' folder the page sets; the tier puts a tiny model in its place.
        "MODEL_PATH": f"/models/{run.weights_folder}",
        RAY_AUTH_MODE_ENV_VAR: "disabled",
        CACHE_DIR_ENV_VAR: str(cache),
    }
    started = time.monotonic()
    if path == "compose":
        commands = compose_command_for(run)
        if isinstance(commands, str):
            return {"not_built": commands}
        command = commands.command
        with tempfile.TemporaryDirectory(prefix="model-compose-") as workdir:
            written = subprocess.run(
                [sys.executable, RECIPES_DIR.resolve() / "serve_model.py", *commands.write[2:]],
                capture_output=True,
                text=True,
                check=False,
            )
            (Path(workdir) / commands.file_name).write_text(written.stdout)
            ended = (
                _run_to_end(
                    [sys.executable, "-m", "ray_serve_npu.cli", *commands.dry_run[1:]],
                    Path(workdir),
                    env,
                )
                if written.returncode == 0
                # serve_model.py refused to write it: its last line says why.
                else ("", f"{_ERROR_PREFIX}{_last_line(written)}", 1)
            )
        field = _COMPOSE_STAND_IN_FIELD
    else:
        argv = command_for(run)
        command = " ".join(argv)
        ended = _run_to_end(
            [sys.executable, "-m", "ray_serve_npu.cli", *argv[1:]], RECIPES_DIR, env
        )
        field = _STAND_IN_FIELD
    read = (
        read_output(*ended, stand_in_field=field)
        if ended is not None
        else {
            "answered": False,
            "stand_in": None,
            "served_as": [],
            "error": f"no end within {DRY_RUN_TIMEOUT_S} s",
        }
    )
    recorded: dict[str, Any] = {"date": datetime.date.today().isoformat()}
    if path != "compose":
        recorded = {"run": run_key(run), "model": run.model, **recorded}
    return {
        **recorded,
        "command": command,
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
    parser.add_argument(
        "--path",
        choices=PATHS,
        help="dry-run only on this path and keep the record's results of the other",
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
    if args.run or args.path:
        if not out.is_file():
            parser.error(
                f"--run and --path need the record {out} to update; run the command without them"
            )
        before = committed_dry_runs(DOCS_DIR)
        now = {"release": tag, "ray": ray.__version__, "vllm": vllm.__version__}
        changed = {k: (before[k], v) for k, v in now.items() if before[k] != v}
        if changed:
            parser.error(
                f"--run and --path keep the record's other results, which ran with other "
                f"versions ({', '.join(f'{k} {a} here {b}' for k, (a, b) in changed.items())}); "
                "run the command without them"
            )
        kept = {d["run"]: d for d in before["dry_runs"]}
    records = []
    with tempfile.TemporaryDirectory(prefix="model-dry-runs-") as cache:
        for run in chosen:
            key = run_key(run)
            record = dict(kept.get(key, {}))
            for path in PATHS:
                # What --run and --path leave out stays as the record has it, where it has it.
                has = ("compose" if path == "compose" else "answered") in record
                other_run = bool(args.run) and key not in args.run
                if has and (other_run or args.path not in (None, path)):
                    continue
                found = dry_run(run, Path(cache), path)
                print(json.dumps({"run": key, "path": path, **found}), flush=True)
                if path == "compose":
                    record["compose"] = found
                else:
                    # A new result replaces the old one whole (an old error with it).
                    record = {
                        **found,
                        **({"compose": record["compose"]} if "compose" in record else {}),
                    }
            records.append(record)
    out.write_text(
        json.dumps(
            {
                "release": tag,
                "ray": ray.__version__,
                "vllm": vllm.__version__,
                # The newest dry-run's day; each dry-run has its own.
                "date": max(dry_run_days(records)),
                "command": "python -m ray_serve_npu_tooling.model_dry_runs",
                "dry_runs": records,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out}")
    answered = [r["answered"] and r["compose"].get("answered", True) for r in records]
    return 0 if all(answered) else 1


if __name__ == "__main__":
    sys.exit(main())
