"""Root conftest: the docs harness checks every code block of every page under docs/.

``pytest --run-recipes`` also runs each page as one scenario, on Ascend NPUs where the
host has them and on the fake-NPU tier elsewhere (tooling/ray_serve_npu_tooling/harness/).

``nox -s tests`` runs the suite in two pytest-xdist workers (``--dist loadgroup``);
:data:`WORKER_GROUPS` keeps together what must share one worker.
"""

import importlib.util
from pathlib import Path

import pytest

#: The docs harness is the repository's tooling (tooling/), which the project's wheel
#: doesn't ship: installed beside the project, not with it.
HARNESS = "ray_serve_npu_tooling.harness.plugin"
if importlib.util.find_spec(HARNESS.split(".")[0]) is None:
    pytest.exit(
        "the docs harness is not installed: from the root of the checkout, after "
        "`pip install -e .`, run `pip install -e ./tooling` (nox -s tests installs both)",
        returncode=pytest.ExitCode.USAGE_ERROR,
    )
pytest_plugins = [HARNESS]

PLUGIN_TESTS = Path("tests") / "plugin"

#: The one xdist group of every test that starts Ray, an engine, or a server on port 8000:
#: one worker runs them all, in collection order, and the other worker the rest of the suite.
#: Pages and several tests serve on port 8000, the port the pages tell readers to use;
#: tests/resilience and tests/bench share one served app per package; a test that
#: connects its own process to Ray runs Ray on the host's address with agents on fixed
#: ports. And two clusters at once overload two cores: beside the A3 runs' four
#: engines, the other worker's Ray tests timed out and the A3 cluster's Serve
#: controller was replaced (CI, 2026-11-30). One group alone already keeps the machine
#: busy: tests/fake_tier/test_fake_npu_a3_data_parallel.py, run by itself, kept both
#: cores 91% busy over its 580 s (/proc/stat read every 5 s, 2026-12-02).
RAY_GROUP = "ray"
#: Path (from the repository's root) -> the xdist group of every test below it. A
#: group runs in one worker, in collection order; other tests are spread by module.
WORKER_GROUPS: dict[Path, str] = {
    Path("docs"): RAY_GROUP,
    Path("tests") / "fake_tier" / "test_fake_npu_cluster.py": RAY_GROUP,
    Path("tests") / "fake_tier" / "test_fake_cpu_collectives.py": RAY_GROUP,
    Path("tests") / "resilience": RAY_GROUP,
    Path("tests") / "bench": RAY_GROUP,
    Path("tests") / "multinode": RAY_GROUP,
    # Runs a slice of the suite in a pytest of its own, whose in-process Ray test
    # starts Ray on the host's address.
    Path("tests") / "harness" / "test_worker_groups.py": RAY_GROUP,
    # One browser at a time, on the site built once.
    Path("tests") / "browser": "browser",
}
#: Fixtures that connect the test process itself to Ray (tests/plugin, tests/multinode).
IN_PROCESS_RAY_FIXTURES = frozenset({"ray_with_fake_npus", "two_node_cluster"})
#: The marker of the tests that run on the fake-NPU tier (pyproject.toml's markers).
FAKE_NPU_MARKER = "fake_npu"


def worker_group(item: pytest.Item) -> str | None:
    """The xdist group of a test, if it must share a worker with others."""
    if IN_PROCESS_RAY_FIXTURES & set(getattr(item, "fixturenames", ())):
        return RAY_GROUP
    if item.get_closest_marker(FAKE_NPU_MARKER) is not None:
        return RAY_GROUP
    return worker_group_of_path(item.path.relative_to(item.config.rootpath))


def worker_group_of_path(path: Path) -> str | None:
    """The group of :data:`WORKER_GROUPS` that ``path`` (from the root) is below, if any."""
    return next((group for top, group in WORKER_GROUPS.items() if path.is_relative_to(top)), None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run tests/plugin first (a stable sort keeps the rest in order), and mark groups.

    Its Ray instance lives in the test process; the Serve handles of a later
    in-process driver (tests/multinode) leave threads that keep Ray connected
    after ray.shutdown(), so a Ray started after them fails to connect. With
    xdist workers, all such tests form one group, in this order. This hook runs
    before xdist's own, which reads the groups.
    """
    items.sort(key=lambda item: not item.path.is_relative_to(config.rootpath / PLUGIN_TESTS))
    for item in items:
        group = worker_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


class MeasuredFigures:
    """Figures tests record with ``record_figure``, printed at the end of the run.

    They travel as the reports' user properties, which reach the xdist controller;
    the stash of the worker that measured them does not.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            test = report.nodeid.split("@")[0].rsplit("::", 1)[-1]
            self.lines += [f"{test}: {v}" for key, v in report.user_properties if key == "figure"]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lines:
            terminalreporter.section("figures measured (fake NPU tier)")
            for line in self.lines:
                terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """In the xdist controller: refuse to run if ``--dist loadgroup`` lost the groups.

    pytest-xdist 3.8 groups a test by appending ``@<group>`` to its node id; under
    pytest 9.2 that append is lost and every group is spread without a word
    (pytest-dev/pytest-xdist#1386): two servers would meet on port 8000.
    """
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    if config.getoption("dist") != "loadgroup":
        return
    lost = [i for i in ids if "@" not in i and worker_group_of_path(Path(i.split("::")[0]))]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(lost)} test(s), e.g. {lost[0]}: this "
            "pytest-xdist cannot mark groups under this pytest (pytest-dev/pytest-xdist#1386); "
            "install the pytest that pyproject.toml's test extra allows (pytest<9.2)"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(MeasuredFigures(), "measured-figures")


@pytest.fixture
def record_figure(request: pytest.FixtureRequest) -> object:
    """Record a figure the test measured; the run's summary prints it under the test's name."""

    def record(name: str, value: object) -> None:
        request.node.user_properties.append(("figure", f"{name} = {value}"))

    return record
