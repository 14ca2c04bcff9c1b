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

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from .engine_tripwire import ENGINE_TRIPWIRE_ENV_VAR

#: The marker of the tests that run on the fake-NPU tier (pyproject.toml's markers): a
#: fake cluster, an engine, or a server of the recipes'.
RECIPE_TIER_MARKER = "fake_npu"
TIER_OPTION = "--tier"
FAST, RECIPES, ALL = "fast", "recipes", "all"
_ENGINE_RECORDS = pytest.StashKey[list[dict[str, object]]]()
_OWN_TRIPWIRE_DIR = pytest.StashKey[Path]()


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


def _is_controller(config: pytest.Config) -> bool:
    """Not a pytest-xdist worker: the process that started the run."""
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """In the fast tier's controlling process: arm the engine tripwire for the whole run.

    Set before xdist starts its workers, the variable reaches every process the run
    starts: workers, the clusters they start and those clusters' Ray workers.
    """
    if selected_tier(config) != FAST or not _is_controller(config):
        return
    if ENGINE_TRIPWIRE_ENV_VAR not in os.environ:
        directory = Path(tempfile.mkdtemp(prefix="engine-tripwire-"))
        config.stash[_OWN_TRIPWIRE_DIR] = directory
        os.environ[ENGINE_TRIPWIRE_ENV_VAR] = str(directory)


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
    """In the fast tier's controlling process: fail the run if an engine core started."""
    config = session.config
    if selected_tier(config) != FAST or not _is_controller(config):
        return
    directory = os.environ.get(ENGINE_TRIPWIRE_ENV_VAR)
    if not directory:
        return
    records = engine_records(Path(directory))
    config.stash[_ENGINE_RECORDS] = records
    if records:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    own = config.stash.get(_OWN_TRIPWIRE_DIR, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


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
