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


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('"fastapi<0.139.2" ', "", 'pip must install "fastapi<0.139.2", which ray 2.56 needs'),
        ("ARG RAY_VERSION=2.57.1", "ARG RAY_VERSION=2.60.0", "RAY_VERSION is 2.60.0"),
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


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("docker-compose.yaml", "vllm-ascend:v0.23.0\n", "vllm-ascend:v0.22.1rc1\n"),
        ("docker-compose-a3.yaml", "vllm-ascend:v0.23.0-a3\n", "vllm-ascend:v0.25.1rc1-a3\n"),
    ],
)
def test_a_compose_file_of_another_release_than_the_paths_is_named(
    recipes: Path, name: str, old: str, new: str
) -> None:
    compose = recipes / name
    assert old in compose.read_text()
    compose.write_text(compose.read_text().replace(old, new))

    (found,) = check_pins(recipes)
    assert found.startswith(f"recipes/{name}: expected image {COMPOSE_RELEASE.image_repository}:")
    assert COMPOSE_RELEASE.tag in found
