"""The image's build context: .dockerignore keeps secrets and local state out, and the
package's own files in.

Matched with the Docker SDK's port of Docker's .dockerignore rules
(``docker.utils.build.PatternMatcher``), not with gitignore's, which differ: a
pattern without ``**/`` matches only at the root of the context.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath

import pytest
from docker.utils.build import PatternMatcher

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "recipes" / "Dockerfile"


def _ignore_patterns() -> list[str]:
    # As the Docker CLI reads the file: one pattern a line, # starts a comment.
    lines = (line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _excluded(path: str) -> bool:
    """Whether the build leaves ``path`` out: it, or a directory above it, matches.

    Docker's build walks the context and skips an excluded directory whole; the
    matcher alone compares a path with a pattern's own depth only.
    """
    matcher = PatternMatcher(_ignore_patterns())
    parts = PurePosixPath(path).parts
    return any(matcher.matches("/".join(parts[:depth])) for depth in range(1, len(parts) + 1))


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".env",
        "recipes/.env",
        "recipes/.env.local",
        "src/ray_serve_npu/.env",
        "recipes/auth_token",
        "build/docs/html/index.html",
        ".nox/tests/bin/python",
        "src/ray_serve_npu/__pycache__/app.cpython-311.pyc",
    ],
)
def test_secrets_history_and_local_state_stay_out_of_the_build_context(path: str) -> None:
    assert _excluded(path)


def _package_files() -> list[str]:
    """What the image's `pip install /opt/ray-serve-npu` builds from (hatch's config)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    sources = [
        "pyproject.toml",
        project["project"]["readme"],
        *wheel["packages"],
        *wheel["force-include"],
    ]
    files = []
    for source in sources:
        path = ROOT / source
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        assert found, f"{source}: named in pyproject.toml, but not in the checkout"
        files += [str(f.relative_to(ROOT)) for f in found if "__pycache__" not in f.parts]
    return files


def test_the_dockerfile_copies_the_context_root_and_the_package_files_reach_it() -> None:
    copies = re.findall(r"^COPY\s+(.+)$", DOCKERFILE.read_text(), re.MULTILINE)
    # What this test assumes; a new COPY source needs its own check here.
    assert copies == [". /opt/ray-serve-npu"]
    assert not [path for path in _package_files() if _excluded(path)]
