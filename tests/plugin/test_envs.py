"""Every environment variable name the package reads is written once, in ray_serve_npu.envs."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from ray_serve_npu import envs

SRC = Path(__file__).resolve().parents[2] / "src"
#: The module, in the source tree (the suite may import an installed copy).
ENVS = SRC / "ray_serve_npu" / "envs.py"
#: The package's own variables; prose may name them, code takes them from envs.
OWN_NAME = re.compile(r"RAY_SERVE_NPU_[A-Z0-9_]+")


def _names_written_out(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        f"{path.relative_to(SRC)}:{node.lineno}: {OWN_NAME.search(node.value).group()}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and OWN_NAME.search(node.value)
    ]


def test_no_module_but_envs_writes_out_a_variable_of_the_package() -> None:
    written = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path != ENVS
        for hit in _names_written_out(path)
    ]
    assert written == []
    # The scan sees a name where one is written: envs itself has them.
    assert _names_written_out(ENVS)


def test_envs_is_names_only_and_imports_only_the_standard_library() -> None:
    tree = ast.parse(ENVS.read_text())
    imported = {
        (node.module or "").split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    names = {name: value for name, value in vars(envs).items() if name.endswith("_ENV_VAR")}
    assert len(set(names.values())) == len(names), "two constants name one variable"
