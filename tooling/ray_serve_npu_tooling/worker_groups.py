"""The suite's pytest-xdist groups: the tests that must share one worker, by marker and fixture.

``nox -s tests`` and ``nox -s compat`` run in two workers (``--dist loadgroup``); a group
runs in one of them, in collection order, and the other tests are spread by module.
Where a test lives in ``tests/`` does not matter: what it starts does.
"""

from __future__ import annotations

import pytest

from .tiers import RECIPE_TIER_MARKER

#: The group of every test that starts Ray, an engine, or a server: Serve's proxies and the
#: pages' servers listen on port 8000, a test that connects its own process to Ray runs
#: Ray on the host's address with agents on fixed ports, and two clusters at once
#: overload two cores (beside the A3 runs' four engines, the other worker's Ray tests
#: timed out, CI 2026-11-30). One cluster alone already keeps the machine busy:
#: tests/fake_tier/test_fake_npu_a3_data_parallel.py, run by itself, kept both cores 91%
#: busy over its 580 s (/proc/stat read every 5 s, 2026-12-02).
RAY_GROUP = "ray"
#: Fixtures whose tests share a worker: those that connect the test process to Ray
#: (tests/plugin, tests/multinode); the browser, one at a time on the built site; and the
#: pages' blocks checked statically, whose worker prints the harness's one tally.
GROUP_OF_FIXTURE: dict[str, str] = {
    "ray_with_fake_npus": RAY_GROUP,
    "two_node_cluster": RAY_GROUP,
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


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """In an xdist worker with ``--dist loadgroup``: refuse to run if the groups were lost.

    pytest-xdist 3.8 groups a test by appending ``@<group>`` to its node id; under pytest
    9.2 that append is lost and every group is spread without a word
    (pytest-dev/pytest-xdist#1386): two servers would meet on port 8000.
    """
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid
    ]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(lost)} test(s), e.g. {lost[0]}: this "
            "pytest-xdist cannot mark groups under this pytest (pytest-dev/pytest-xdist#1386); "
            "install the pytest that pyproject.toml's test extra allows (pytest<9.2)"
        )
