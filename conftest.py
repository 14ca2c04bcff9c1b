"""Root conftest: the docs harness checks every code block of every page under docs/.

``pytest --run-recipes`` also runs each page as one scenario, on Ascend NPUs where the
host has them and on the fake-NPU tier elsewhere (src/ray_serve_npu/testing/harness/).
"""

from pathlib import Path

import pytest

pytest_plugins = ["ray_serve_npu.testing.harness.plugin"]

PLUGIN_TESTS = Path(__file__).parent / "tests" / "plugin"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run tests/plugin first (a stable sort keeps the rest in order).

    Its Ray instance lives in the test process; the Serve handles of a later
    in-process driver (tests/multinode) leave threads that keep Ray connected
    after ray.shutdown(), so a Ray started after them fails to connect.
    """
    items.sort(key=lambda item: not item.path.is_relative_to(PLUGIN_TESTS))
