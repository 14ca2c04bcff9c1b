"""The docs build's pin check: each recipe must state its path's release (releases/paths.yaml)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from recipe_pins import check_pins  # noqa: E402

from ray_serve_npu.releases import COMPOSE_RELEASE  # noqa: E402


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    for name in ("Dockerfile", "docker-compose.yaml", "docker-compose-a3.yaml"):
        shutil.copy(ROOT / "recipes" / name, tmp_path / name)
    return tmp_path


def test_the_recipes_state_the_package_pins() -> None:
    assert check_pins(ROOT / "recipes") == []


#: A recipe's pin planted wrong, and the start of what the check says of it.
DRIFTS = [
    ("Dockerfile", '"fastapi<0.137" ', "", 'pip must install "fastapi<0.137", which ray 2.56'),
    ("Dockerfile", "ARG RAY_VERSION=2.57.1", "ARG RAY_VERSION=2.60.0", "RAY_VERSION is 2.60.0"),
    # A Compose file of another release than the Compose path's.
    (
        "docker-compose.yaml",
        "vllm-ascend:v0.23.0\n",
        "vllm-ascend:v0.22.1rc1\n",
        f"expected image {COMPOSE_RELEASE.image('A2')}",
    ),
    (
        "docker-compose-a3.yaml",
        "vllm-ascend:v0.23.0-a3\n",
        "vllm-ascend:v0.25.1rc1-a3\n",
        f"expected image {COMPOSE_RELEASE.image('A3')}",
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "problem"), DRIFTS)
def test_a_recipe_pin_that_drifts_is_named(
    recipes: Path, name: str, old: str, new: str, problem: str
) -> None:
    recipe = recipes / name
    assert old in recipe.read_text()
    recipe.write_text(recipe.read_text().replace(old, new))

    (found,) = check_pins(recipes)
    assert found.startswith(f"recipes/{name}: ") and problem in found
