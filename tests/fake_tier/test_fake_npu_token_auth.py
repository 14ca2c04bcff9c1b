"""The fake tier's Ray cluster runs under token authentication and refuses other drivers.

The cluster is the one the end-to-end tests serve recipes/serve_npu.py on, and the
docs harness runs every page on the same kind of cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ray_serve_npu.fake_npu.fake_tier import FakeNPUTier

pytestmark = pytest.mark.fake_npu

DRIVER = "import ray; ray.init(logging_level='ERROR'); print('connected', len(ray.nodes()))"
#: Ray's driver retries the GCS about once a second, 20 times by default
#: (``NUM_REDIS_GET_RETRIES``, ``ray/_private/ray_constants.py``); a refused driver
#: need not wait that long here.
QUICK_REFUSAL = {"RAY_NUM_REDIS_GET_RETRIES": "2"}
#: What Ray's GCS answers a call without the cluster's token (an InvalidAuthToken status).
REFUSED = "Authentication token is missing or incorrect"


def _driver(tier: FakeNPUTier, home: Path, **changes: str) -> subprocess.CompletedProcess[str]:
    # An empty home: no ~/.ray/auth_token of the machine's user can stand in.
    env = {**os.environ, **tier.cluster.env(), "HOME": str(home), **QUICK_REFUSAL, **changes}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=120
    )


def test_fake_npu_driver_with_the_token_connects(tier: FakeNPUTier, tmp_path: Path) -> None:
    result = _driver(tier, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == ["connected", "1"]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"RAY_AUTH_TOKEN": "0" * 64}, id="wrong-token"),
        # A driver that doesn't take part in token authentication sends none.
        pytest.param({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": ""}, id="no-token"),
    ],
)
def test_fake_npu_cluster_refuses_a_driver_without_its_token(
    tier: FakeNPUTier, tmp_path: Path, changes: dict[str, str]
) -> None:
    result = _driver(tier, tmp_path, **changes)
    assert result.returncode != 0
    assert "connected" not in result.stdout
    assert REFUSED in result.stderr, result.stderr[-3000:]
