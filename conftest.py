"""Root conftest: the docs harness checks every code block of every page under docs/.

``pytest --run-recipes`` also runs each page as one scenario, on Ascend NPUs where the
host has them and on the fake-NPU tier elsewhere (src/ray_serve_npu/testing/harness/).
"""

pytest_plugins = ["ray_serve_npu.testing.harness.plugin"]
