"""Ray Serve LLM Python recipes: the LLMConfig objects they build.

A recipe is read, not run: ``recipe_static`` evaluates its ``LLMConfig(...)``
calls from the syntax tree and reports what it cannot read. With
``execute_recipes`` each recipe runs instead, in a subprocess that gets a
minimal environment and hands its configs back in a file of its own.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray_serve_npu.check import recipe_probe
from ray_serve_npu.check.llm_config import FIELDS, deployment_from_llm_config
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.problems import InputError, NothingToCheck
from ray_serve_npu.check.recipe_static import Config, Lined, Module, Unread, flatten

if TYPE_CHECKING:
    from ray_serve_npu.releases.nightly import ServeRun

# Importing Ray Serve LLM and a recipe's own imports take a few seconds on 2 cores.
_PROBE_TIMEOUT_S = 300
# All the probe keeps of the caller's environment: where programs are, the home
# directory and the locale. Keys, tokens and cloud credentials stay behind.
PROBE_ENV = ("PATH", "HOME", "LANG", "LC_ALL")


class RecipeError(InputError):
    """The recipe could not be read, or executed to collect its LLMConfigs."""


def _deployment(path: str, config: Config, executed: dict[str, Any] | None = None) -> Deployment:
    """A deployment from the static ``config``; its values from ``executed`` if given."""
    read = Lined()
    for key, value in config.kwargs.items():
        if key in FIELDS:
            read.put(key, value, config.kwargs.lines[key])
    read.spread = config.kwargs.spread
    lines: dict[str, int] = {}
    unread: list[Unread] = []
    plain = flatten(read, "", lines, unread, config.line)
    deployment = deployment_from_llm_config(
        path, plain if executed is None else executed, lines, config.line
    )
    if executed is None:
        unread += config.changed
        deployment.unread = [Setting(value=u.why, line=u.line) for u in unread]
    return deployment


def _run_probe(path: str) -> list[dict[str, Any]]:
    recipe = Path(path).resolve()
    env = {name: os.environ[name] for name in PROBE_ENV if name in os.environ}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    with tempfile.TemporaryDirectory(prefix="ray-serve-npu-check-") as folder:
        # A file only the probe is told of: the recipe's own output can't pass for it.
        result_file = Path(folder) / "configs.json"
        try:
            result = subprocess.run(
                [sys.executable, "-m", recipe_probe.__name__, str(recipe), str(result_file)],
                capture_output=True,
                text=True,
                env=env,
                cwd=recipe.parent,
                timeout=_PROBE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise RecipeError(
                f"the recipe still ran after {_PROBE_TIMEOUT_S} s",
                'move long-running code under `if __name__ == "__main__":`',
            ) from None
        if result.returncode != 0 or not result_file.is_file():
            tail = (result.stderr.strip().splitlines() or ["it exited without a result"])[-1]
            raise RecipeError(
                f"running the recipe to read its LLMConfigs failed: {tail}",
                "fix what the message names, or check without --execute-recipes",
            )
        return json.loads(result_file.read_text())


def _executed(path: str, module: Module) -> list[Deployment]:
    deployments = []
    for found in _run_probe(path):
        static = module.names.get(found["name"])
        if isinstance(static, list):
            static = static[found["index"]] if found["index"] < len(static) else None
        if isinstance(static, Config) and static.origin is not None:
            continue  # imported from another recipe, which is checked on its own
        config = static if isinstance(static, Config) else Config(Lined(), 1)
        deployments.append(_deployment(path, config, found["config"]))
    return deployments


def read_recipe(path: Path, text: str) -> Module:
    """``text``, the recipe at ``path``, evaluated statically."""
    try:
        tree = ast.parse(text, filename=str(path))
        module = Module(path.resolve())
        module.run(tree)
    except SyntaxError as error:
        raise RecipeError(
            f"not valid Python ({error.msg})", "fix the syntax and check again", error.lineno
        ) from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise RecipeError(
            f"too deeply nested or too large to read as Python ({type(error).__name__})",
            "split the expression into names bound one by one",
        ) from None
    return module


def parse_recipe(path: str, text: str, execute_recipes: bool = False) -> list[Deployment]:
    """The deployments of a recipe's LLMConfigs, read from its source or, with
    ``execute_recipes``, by running its module-level code. A recipe that builds its
    config from a run of vLLM-Ascend's CI (:mod:`ray_serve_npu.model_recipes`, as
    recipes/serve_model.py does) has one deployment per run it can serve."""
    module = read_recipe(Path(path), text)
    if not module.configs:
        if module.imported_config():
            return []  # built in another recipe, which is checked on its own
        if not module.uses_serve_llm:
            return []
    deployments = _executed(path, module) if execute_recipes else _read(path, module)
    # A config built from a run (`LLMConfig(**recipe.llm_config)`) can't be read: judge
    # the runs it can build. A config the recipe writes out itself is read as written.
    built_from_runs = module.builds_ci_runs and not execute_recipes
    if built_from_runs and deployments and all(d.unread for d in deployments):
        return _ci_run_deployments(path, module)
    if not deployments and module.uses_serve_llm:
        raise NothingToCheck(
            "the recipe uses Ray Serve LLM but builds no LLMConfig the checker reads",
            "build each config with `LLMConfig(...)` or a literal dict in `llm_configs`, "
            "or run the recipe with --execute-recipes",
        )
    return deployments


def _ci_run_deployments(path: str, module: Module) -> list[Deployment]:
    """One deployment per run the recipe can build: the runs its ``find_run`` calls name
    as literals, else every run of the release the recipes pin (a name from the command
    line can be any of them)."""
    # Imported here: reading the runs' configs costs a parse of each.
    from ray_serve_npu.model_recipes import find_run
    from ray_serve_npu.releases import SERVE_LLM_RELEASE
    from ray_serve_npu.releases.runs import serve_runs

    tag = SERVE_LLM_RELEASE.tag
    try:
        runs = [find_run(name, tag) for name in module.named_runs] or serve_runs(tag)
    except LookupError as error:
        raise RecipeError(str(error), "name a run that `serve_model.py --list` lists") from None
    line = min((config.line for config in module.configs.values()), default=1)
    return [run_deployment(path, run, line) for run in runs]


def run_deployment(path: str, run: ServeRun, line: int) -> Deployment:
    """The deployment of the recipe ``recipe_for`` builds from ``run``, at ``line`` of
    ``path``, labelled with the run and its source."""
    # Imported here: reading the runs' configs costs a parse of each.
    from ray_serve_npu.model_recipes import recipe_for, run_key

    deployment = deployment_from_llm_config(path, recipe_for(run, run.model).llm_config, {}, line)
    deployment.label = f"{run_key(run)} ({run.path}:{run.line} at {run.release})"
    return deployment


def _read(path: str, module: Module) -> list[Deployment]:
    configs = sorted(module.configs.values(), key=lambda c: c.line)
    return [_deployment(path, config) for config in configs]
