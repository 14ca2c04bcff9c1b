"""The suite's tiers: which tests a run selects, and the fast tier's promise that no engine starts.

- ``fast`` (plain ``pytest``; ``nox -s tests``): every test not marked :data:`RECIPE_TIER_MARKER`,
  and every page's blocks checked statically. No vLLM engine may start: a run in which one
  did fails, naming the process (:mod:`.engine_tripwire`).
- ``recipes`` (``pytest --run-recipes``; ``nox -s recipes``): the tests marked
  :data:`RECIPE_TIER_MARKER` and every page run as a scenario, which the docs harness marks.
- ``all`` (``--tier all``; ``nox -s compat``): both, for the plugin's tests at older Rays.

A test joins the recipes tier by its marker alone; where it sits in ``tests/`` does not matter.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from .engine_tripwire import ENGINE_TRIPWIRE_ENV_VAR, record_engine_start

#: The marker of the tests that run on the fake-NPU tier (pyproject.toml's markers): a
#: fake cluster, an engine, or a server of the recipes'.
RECIPE_TIER_MARKER = "fake_npu"
TIER_OPTION = "--tier"
FAST, RECIPES, ALL = "fast", "recipes", "all"
#: The vLLM plugin that records engine cores, as tooling/pyproject.toml's entry point
#: must name it.
TRIPWIRE_ENTRY_POINT = f"{record_engine_start.__module__}:{record_engine_start.__name__}"
_ENGINE_RECORDS = pytest.StashKey[list[dict[str, object]]]()
#: Whether this run armed the tripwire, and so judges what it recorded.
_ARMED_HERE = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("suite tiers").addoption(
        TIER_OPTION,
        choices=(FAST, RECIPES, ALL),
        default=None,
        help=(
            f"{FAST}: tests not marked {RECIPE_TIER_MARKER}, no engine may start (the default); "
            f"{RECIPES}: tests marked {RECIPE_TIER_MARKER} and the pages' runs (the default "
            f"with --run-recipes); {ALL}: both"
        ),
    )


def selected_tier(config: pytest.Config) -> str:
    """The tier this run selects: ``--tier``, or ``recipes`` with ``--run-recipes``, or ``fast``."""
    tier = config.getoption(TIER_OPTION)
    if tier is not None:
        return tier
    return RECIPES if config.getoption("--run-recipes", default=False) else FAST


def is_controller(config: pytest.Config) -> bool:
    """Not a pytest-xdist worker: the process that started the run."""
    return not hasattr(config, "workerinput")


def run_environ(config: pytest.Config, name: str, prefix: str) -> bool:
    """In the run's controlling process: ``name`` names a new directory for the whole run,
    unless an outer run set it already; both go when the run ends. Whether this run set it.

    Set before xdist starts its workers, the variable reaches every process the run
    starts: workers, the clusters they start and those clusters' Ray workers. A run
    nested in a test's process (pytester) gives the variable back as it found it.
    """
    if not is_controller(config) or name in os.environ:
        return False
    directory = tempfile.mkdtemp(prefix=prefix)
    os.environ[name] = directory

    def give_back() -> None:
        os.environ.pop(name, None)
        shutil.rmtree(directory, ignore_errors=True)

    config.add_cleanup(give_back)
    return True


def _tripwire_plugin_installed() -> bool:
    """Whether vLLM will find the tripwire among its general plugins (tooling's entry point)."""
    plugins = importlib.metadata.entry_points(group="vllm.general_plugins")
    return any(plugin.value == TRIPWIRE_ENTRY_POINT for plugin in plugins)


def pytest_configure(config: pytest.Config) -> None:
    """In the fast tier's controlling process: arm the engine tripwire for the whole run."""
    if selected_tier(config) != FAST or not is_controller(config):
        return
    if not _tripwire_plugin_installed():
        raise pytest.UsageError(
            "the fast tier's engine tripwire is not registered with vLLM (the tooling's "
            f"vllm.general_plugins entry point {TRIPWIRE_ENTRY_POINT}): reinstall the "
            "tooling, `pip install -e ./tooling` (nox -s tests installs it)"
        )
    config.stash[_ARMED_HERE] = run_environ(config, ENGINE_TRIPWIRE_ENV_VAR, "engine-tripwire-")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of the other tier."""
    tier = selected_tier(config)
    if tier == ALL:
        return
    want_marked = tier == RECIPES
    keep, drop = [], []
    for item in items:
        marked = item.get_closest_marker(RECIPE_TIER_MARKER) is not None
        (keep if marked == want_marked else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def engine_records(directory: Path) -> list[dict[str, object]]:
    """What the engine cores that started recorded in ``directory`` (engine_tripwire)."""
    return [json.loads(path.read_text()) for path in sorted(directory.glob("engine-*.json"))]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the fast tier's controlling process: fail the run if an engine core started.

    A run nested in a fast-tier run (one whose tripwire was armed already) leaves the
    verdict to the outer run, which reads the same directory.
    """
    config = session.config
    if not config.stash.get(_ARMED_HERE, False):
        return
    records = engine_records(Path(os.environ[ENGINE_TRIPWIRE_ENV_VAR]))
    config.stash[_ENGINE_RECORDS] = records
    if records:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    records = config.stash.get(_ENGINE_RECORDS, [])
    if not records:
        return
    terminalreporter.section("engine tripwire: FAILED")
    terminalreporter.write_line(
        f"{len(records)} vLLM engine core(s) started in the fast tier, which starts none; "
        f"mark the test that started it @pytest.mark.{RECIPE_TIER_MARKER} (it then runs in "
        "nox -s recipes):",
        red=True,
    )
    for record in records:
        terminalreporter.write_line(
            f"  pid {record['pid']}: {' '.join(map(str, record['argv']))[:200]}"
            + (f" (test: {record['test']})" if record["test"] else "")
        )
