"""The suite's pytest-xdist groups: the tests that must share one worker, by marker and fixture.

``nox -s tests`` and ``nox -s compat`` run in two workers (``--dist loadgroup``); a group
runs in one of them, in collection order, and the other tests are spread by module.
Where a test lives in ``tests/`` does not matter: what it starts does.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from .tiers import RECIPE_TIER_MARKER, is_controller

#: The group of every test that starts Ray, an engine, or a server: Serve's proxies and the
#: pages' servers listen on port 8000, a test that connects its own process to Ray runs
#: Ray on the host's address with agents on fixed ports, and two clusters at once
#: overload two cores (beside the A3 runs' four engines, the other worker's Ray tests
#: timed out, CI 2026-11-30). One cluster alone already keeps the machine busy:
#: tests/fake_tier/test_fake_npu_a3_data_parallel.py, run by itself, kept both cores 91%
#: busy over its 580 s (/proc/stat read every 5 s, 2026-12-02).
RAY_GROUP = "ray"
#: Fixtures whose tests share a worker: those that connect the test process to Ray
#: (tests/plugin, tests/multinode) or start fake clusters for the mock engine
#: (tests/bench/test_bench_levers_served.py); the browser, one at a time on the built
#: site; and the pages' blocks checked statically, whose worker prints the harness's one
#: tally.
GROUP_OF_FIXTURE: dict[str, str] = {
    "ray_with_fake_npus": RAY_GROUP,
    "two_node_cluster": RAY_GROUP,
    "arm_clusters": RAY_GROUP,
    "browser": "browser",
    "docs_page": "pages",
}


def worker_group(item: pytest.Item) -> str | None:
    """The xdist group of a test, if it must share a worker with others."""
    if item.get_closest_marker(RECIPE_TIER_MARKER) is not None:
        return RAY_GROUP
    fixtures = getattr(item, "fixturenames", ())
    return next((GROUP_OF_FIXTURE[f] for f in fixtures if f in GROUP_OF_FIXTURE), None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test's group, before pytest-xdist's own hook appends ``@<group>`` to the
    grouped tests' node ids."""
    for item in items:
        group = worker_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


#: The first pytest whose node ids drop the ``@<group>`` that pytest-xdist 3.8 appends to
#: a grouped test's id (pytest-dev/pytest-xdist#1386): from it on, --dist loadgroup
#: spreads every group without a word, and two servers would meet on port 8000.
PYTEST_THAT_LOSES_GROUPS = Version("9.2")


def pytest_configure(config: pytest.Config) -> None:
    """In the run's controlling process, before any worker starts: refuse ``--dist
    loadgroup`` under a pytest that would lose the groups."""
    if not is_controller(config) or config.getoption("dist", "no") != "loadgroup":
        return
    if Version(pytest.__version__) >= PYTEST_THAT_LOSES_GROUPS:
        raise pytest.UsageError(
            f"--dist loadgroup can't group tests under pytest {pytest.__version__} "
            "(pytest-dev/pytest-xdist#1386): install the pytest that pyproject.toml's test "
            f"extra allows (pytest<{PYTEST_THAT_LOSES_GROUPS})"
        )
