"""Ray Serve LLM Python recipes: the module-level LLMConfig objects they build."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from ray_serve_npu.check import recipe_probe
from ray_serve_npu.check.llm_config import deployment_from_llm_config
from ray_serve_npu.check.model import Deployment

# Importing Ray Serve LLM and a recipe's own imports take a few seconds on 2 cores.
_PROBE_TIMEOUT_S = 300


class RecipeError(Exception):
    """The recipe could not be executed to collect its LLMConfigs."""


def _key_lines(node: ast.AST, prefix: str, names: dict[str, ast.AST], out: dict[str, int]) -> None:
    if isinstance(node, ast.Name) and node.id in names:
        _key_lines(names[node.id], prefix, names, out)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.setdefault(prefix + key.value, key.lineno)
                _key_lines(value, f"{prefix}{key.value}.", names, out)
    elif isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg:
                out.setdefault(prefix + keyword.arg, keyword.lineno)
                _key_lines(keyword.value, f"{prefix}{keyword.arg}.", names, out)
        # json.dumps({...}) and dict({...}) carry their keys in the first argument.
        if node.args:
            _key_lines(node.args[0], prefix, names, out)


def _is_llm_config(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "LLMConfig") or (
        isinstance(func, ast.Attribute) and func.attr == "LLMConfig"
    )


def _calls_by_name(tree: ast.Module) -> tuple[dict[str, list[ast.Call]], dict[str, ast.AST]]:
    """LLMConfig(...) calls under each module-level name, and every module-level value."""
    calls: dict[str, list[ast.Call]] = {}
    values: dict[str, ast.AST] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    values[target.id] = statement.value
                    calls[target.id] = [n for n in ast.walk(statement.value) if _is_llm_config(n)]
    return calls, values


def _run_probe(path: str) -> list[dict[str, object]]:
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", recipe_probe.__name__, str(Path(path).resolve())],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(Path(path).resolve().parent),
        timeout=_PROBE_TIMEOUT_S,
    )
    for line in result.stdout.splitlines():
        if line.startswith(recipe_probe.MARKER):
            return json.loads(line[len(recipe_probe.MARKER) :])
    tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
    raise RecipeError(f"{path}: running the recipe to collect its LLMConfigs failed: {tail}")


def parse_recipe(path: str, text: str) -> list[Deployment]:
    tree = ast.parse(text, filename=path)
    calls, values = _calls_by_name(tree)
    # Only a file that builds an LLMConfig is run: clients and helpers act at import.
    if not any(_is_llm_config(node) for node in ast.walk(tree)):
        return []
    deployments = []
    for found in _run_probe(path):
        name, index = str(found["name"]), int(found["index"])  # type: ignore[call-overload]
        candidates = calls.get(name, [])
        call = candidates[min(index, len(candidates) - 1)] if candidates else None
        lines: dict[str, int] = {}
        if call is not None:
            _key_lines(call, "", values, lines)
        anchor = call.lineno if call is not None else 1
        config = found["config"]
        assert isinstance(config, dict)
        deployments.append(deployment_from_llm_config(path, config, lines, anchor))
    return deployments
