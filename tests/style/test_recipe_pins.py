"""The docs build's pin check: recipes must state what ray_serve_npu.compat says."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from recipe_pins import check_pins  # noqa: E402


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    for name in ("Dockerfile", "docker-compose.yaml"):
        shutil.copy(ROOT / "recipes" / name, tmp_path / name)
    return tmp_path


def test_the_recipes_state_the_package_pins() -> None:
    assert check_pins(ROOT / "recipes") == []


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('"fastapi<0.139.2" ', "", 'pip must install "fastapi<0.139.2" beside ray 2.56'),
        ("ARG RAY_VERSION=2.56.1", "ARG RAY_VERSION=2.60.0", "RAY_VERSION is 2.60.0"),
    ],
)
def test_a_dockerfile_pin_that_drifts_is_named(
    recipes: Path, old: str, new: str, problem: str
) -> None:
    dockerfile = recipes / "Dockerfile"
    assert old in dockerfile.read_text()
    dockerfile.write_text(dockerfile.read_text().replace(old, new))

    (found,) = check_pins(recipes)
    assert problem in found
