"""The suite's xdist groups (conftest.py, WORKER_GROUPS): each group runs in one worker.

Runs a slice of the suite in two workers, as ``nox -s tests`` runs all of it, and
reads where each test ran from pytest's verbose report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).parents[2]
#: Tests put in the Ray group by their path and by their fixture, and free ones; the
#: static checks of a page are quick.
SLICE = [
    "docs/checks.md",
    "docs/testing.md",
    "tests/fake_tier/test_adapter.py",
    "tests/plugin/test_data_parallel.py::test_build_dp_app_accepts_a_gang_the_cluster_holds",
    "tests/plugin/test_data_parallel.py::test_dp2_tp4_fits_one_a2_node",
]
_RAN = re.compile(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+) *$", re.MULTILINE)


def test_each_group_runs_in_one_worker_and_other_tests_run_free() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v"]
        + ["-p", "no:cacheprovider", *SLICE],
        cwd=ROOT,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    workers_of: dict[str, set[str]] = defaultdict(set)
    ran = _RAN.findall(result.stdout)
    for worker, nodeid in ran:
        group = nodeid.rpartition("@")[2] if "@" in nodeid else "none"
        workers_of[group].add(worker)
    page_tests = [nodeid for _, nodeid in ran if nodeid.startswith("docs/")]
    assert page_tests, result.stdout[-4000:]
    # Pages start Ray and servers on port 8000: one worker runs them all, with every
    # other test that starts Ray. tests/fake_tier's static tests start nothing and run free.
    assert {nodeid.split("::")[0] for nodeid in page_tests} == {"docs/checks.md", "docs/testing.md"}
    assert all(nodeid.endswith("@ray") for nodeid in page_tests)
    assert len(workers_of["ray"]) == 1, dict(workers_of)
    assert not any("@" in nodeid for _, nodeid in ran if "test_adapter" in nodeid)
    # The worker that ran the page hands its tally to the controller, which prints it once.
    tallies = re.findall(r"^docs harness \(.*$", result.stdout, re.MULTILINE)
    assert len(tallies) == 1 and f"{len(page_tests)} checked statically" in tallies[0], tallies
    # A test that connects this process to Ray is grouped by its fixture, not its path.
    dp = [nodeid for _, nodeid in ran if "test_data_parallel" in nodeid]
    assert sorted(dp) == [
        "tests/plugin/test_data_parallel.py::test_build_dp_app_accepts_a_gang_the_cluster_holds"
        "@ray",
        "tests/plugin/test_data_parallel.py::test_dp2_tp4_fits_one_a2_node",
    ]


class _Item:
    """What :func:`conftest.worker_group` reads of a pytest item."""

    def __init__(self, path: str, marker: str | None = None) -> None:
        self.path = ROOT / path
        self.fixturenames: list[str] = []
        self.config = SimpleNamespace(rootpath=ROOT)
        self._marker = marker

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == self._marker else None


def test_a_fake_npu_test_joins_the_ray_group_wherever_it_lives(pytestconfig: pytest.Config) -> None:
    # The root conftest, by its path: in a whole run, `import conftest` may find another.
    root = pytestconfig.pluginmanager.get_plugin(str(ROOT / "conftest.py"))
    path = "tests/fake_tier/test_fake_npu_end_to_end.py"
    assert root.worker_group(_Item(path, marker=root.FAKE_NPU_MARKER)) == root.RAY_GROUP
    assert root.worker_group(_Item(path)) is None
