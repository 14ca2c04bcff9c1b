"""The suite's xdist groups (ray_serve_npu_tooling.worker_groups): by marker and fixture.

The groups are read from fake items; one small nested run of two static pages in two
workers checks what only a real xdist run shows: the harness's tally, printed once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray_serve_npu_tooling import worker_groups
from ray_serve_npu_tooling.tiers import RECIPE_TIER_MARKER

ROOT = Path(__file__).parents[2]


class _Item:
    """What worker_groups reads of a test: its markers and fixtures."""

    def __init__(self, *, marker: str | None = None, fixtures: tuple[str, ...] = ()) -> None:
        self.fixturenames = list(fixtures)
        self._marker = marker
        self.nodeid = "tests/x.py::test_x"

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == self._marker else None


@pytest.mark.parametrize(
    ("item", "group"),
    [
        pytest.param(_Item(marker=RECIPE_TIER_MARKER), "ray", id="recipe-tier-marker"),
        pytest.param(_Item(fixtures=("tmp_path", "ray_with_fake_npus")), "ray", id="in-process"),
        pytest.param(_Item(fixtures=("two_node_cluster",)), "ray", id="two-nodes"),
        pytest.param(_Item(fixtures=("tmp_path", "arm_clusters")), "ray", id="arm-clusters"),
        pytest.param(_Item(fixtures=("browser",)), "browser", id="browser"),
        pytest.param(_Item(fixtures=("docs_page",)), "pages", id="static-page"),
        pytest.param(
            _Item(marker=RECIPE_TIER_MARKER, fixtures=("docs_page",)), "ray", id="page-run"
        ),
        pytest.param(_Item(fixtures=("tmp_path",)), None, id="free"),
    ],
)
def test_a_test_joins_a_group_by_its_marker_or_fixture(item: _Item, group: str | None) -> None:
    assert worker_groups.worker_group(item) == group  # type: ignore[arg-type]


def _controller(dist: str) -> SimpleNamespace:
    """What worker_groups reads of the run's controlling process: its --dist."""
    return SimpleNamespace(getoption=lambda name, default=None: dist)


@pytest.mark.parametrize(("version", "refused"), [("9.1.1", False), ("9.2.0", True)])
def test_a_pytest_that_would_lose_the_groups_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, version: str, refused: bool
) -> None:
    # pytest-dev/pytest-xdist#1386: from pytest 9.2 the "@group" suffix is lost.
    monkeypatch.setattr(pytest, "__version__", version)
    if refused:
        with pytest.raises(pytest.UsageError, match=r"pytest<9\.2"):
            worker_groups.pytest_configure(_controller("loadgroup"))  # type: ignore[arg-type]
    else:
        worker_groups.pytest_configure(_controller("loadgroup"))  # type: ignore[arg-type]
    # Without --dist loadgroup nothing is grouped, whatever the pytest.
    worker_groups.pytest_configure(_controller("no"))  # type: ignore[arg-type]


_RAN = re.compile(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+) *$", re.MULTILINE)


def test_static_pages_share_a_worker_and_the_tally_is_printed_once() -> None:
    # Two static pages in two workers (no Ray): one worker checks both.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v"]
        + ["-p", "no:cacheprovider", "docs/checks.md", "docs/testing.md"],
        cwd=ROOT,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    ran = _RAN.findall(result.stdout)
    assert ran and all(nodeid.endswith("@pages") for _, nodeid in ran), ran
    assert len({worker for worker, _ in ran}) == 1, ran
    # The worker that ran the pages hands its tally to the controller, which prints it once.
    tallies = re.findall(r"^docs harness \(.*$", result.stdout, re.MULTILINE)
    # Every block the worker ran is in it: checked statically, or shown as a page shows it
    # (testing.md includes the soak's figures).
    assert len(tallies) == 1 and f"2 pages, {len(ran)} blocks" in tallies[0], tallies
