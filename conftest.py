"""Root conftest: the docs harness checks every code block of every page under docs/.

``pytest --run-recipes`` also runs each page as one scenario, on Ascend NPUs where the
host has them and on the fake-NPU tier elsewhere (tooling/ray_serve_npu_tooling/harness/).

The suite has three tiers (tooling/ray_serve_npu_tooling/tiers.py): ``nox -s tests`` runs
the fast one in two pytest-xdist workers (``--dist loadgroup``; the groups are in
tooling/ray_serve_npu_tooling/worker_groups.py), ``nox -s recipes`` the fake-NPU tier,
``nox -s compat`` the plugin's tests at the older Rays.
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
#: The suite's tiers (which tests a run selects; the fast tier's engine tripwire), and
#: which tests share a pytest-xdist worker.
#: The tiers first: the others import it, and pytest warns of a plugin that something
#: imported before pytest loaded it (PytestAssertRewriteWarning).
#: Then the figures the fake-tier tests measure (``record_figure``, ``--figures-json``).
pytest_plugins = [
    "ray_serve_npu_tooling.tiers",
    "ray_serve_npu_tooling.worker_groups",
    "ray_serve_npu_tooling.figures",
    HARNESS,
]

PLUGIN_TESTS = Path("tests") / "plugin"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run tests/plugin first (a stable sort keeps the rest in order).

    Its Ray instance lives in the test process; the Serve handles of a later in-process
    driver (tests/multinode) leave threads that keep Ray connected after ray.shutdown(),
    so a Ray started after them fails to connect. Both are in one worker group
    (ray_serve_npu_tooling.worker_groups), which runs in this order.
    """
    items.sort(key=lambda item: not item.path.is_relative_to(config.rootpath / PLUGIN_TESTS))


def pytest_configure(config: pytest.Config) -> None:
    # One place for the site's builds, so that each builder and edition is built once for
    # every test and xdist worker of the run that reads it.
    from ray_serve_npu_tooling.docs.site import SITE_CACHE_ENV_VAR
    from ray_serve_npu_tooling.tiers import run_environ

    run_environ(config, SITE_CACHE_ENV_VAR, "site-builds-")
