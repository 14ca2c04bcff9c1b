"""The fake-NPU tier that this package's tests share: one cluster, started once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ray_serve_npu.fake_npu.fake_tier import FakeNPUTier, fake_npu_tier


@pytest.fixture(scope="package")
def tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNPUTier]:
    with fake_npu_tier(tmp_path_factory.mktemp("fake-npu-tier")) as tier:
        yield tier
