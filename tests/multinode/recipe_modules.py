"""Import the recipes as ``python <name>.py`` in recipes/ would."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def load_recipe(name: str) -> ModuleType:
    """Import ``recipes/<name>.py`` the way ``python <name>.py`` in recipes/ does."""
    spec = importlib.util.spec_from_file_location(name, RECIPES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # The recipes import serve_npu from their own directory.
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(RECIPES))
        spec.loader.exec_module(module)
    return module
