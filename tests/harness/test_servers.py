"""The harness keeps one server at a time, for the next scenario that starts the same one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness.blocks import read_page
from ray_serve_npu_tooling.harness.scenario import PageScenario
from ray_serve_npu_tooling.harness.server_config import ServerConfig
from ray_serve_npu_tooling.harness.servers import ServerKeeper
from ray_serve_npu_tooling.harness.summary import Tally

from ray_serve_npu.fake_npu.processes import free_port

from .mock_tier import MockServer, MockTier


@pytest.fixture
def tier() -> MockTier:
    return MockTier("mock-model")


@pytest.fixture
def servers(tier: MockTier) -> Iterator[ServerKeeper]:
    with ServerKeeper(tier) as keeper:
        yield keeper


def test_the_same_server_is_joined_not_started_again(
    servers: ServerKeeper, tier: MockTier, tmp_path: Path
) -> None:
    port = free_port()
    first = servers.serve("python serve_mock.py", cwd=tmp_path, port=port)
    # The same directory, written another way, is the same server.
    again = servers.serve("python serve_mock.py", cwd=tmp_path / "." / "", port=port)
    assert again is first
    assert [command for command, _, _ in tier.served] == ["python serve_mock.py"]
    assert tier.stopped == []
    assert list(servers.joined.values()) == [1]


def test_every_server_gets_the_keepers_environment(tier: MockTier, tmp_path: Path) -> None:
    # The pages' home: a server block reads the key file there, as the pages' shells do.
    with ServerKeeper(tier, {"HOME": str(tmp_path)}) as servers:
        servers.serve("python serve_mock.py", cwd=tmp_path, port=free_port())
        servers.serve("python serve_other.py", cwd=tmp_path, port=free_port())
    assert tier.envs == [{"HOME": str(tmp_path)}] * 2


def test_another_server_stops_the_kept_one_first(
    servers: ServerKeeper, tier: MockTier, tmp_path: Path
) -> None:
    port = free_port()
    servers.serve("python serve_mock.py", cwd=tmp_path, port=port)
    # The same port: the kept server must be gone before the other binds it.
    servers.serve("python serve_other.py", cwd=tmp_path, port=port)
    assert [command for command, _, _ in tier.served] == [
        "python serve_mock.py",
        "python serve_other.py",
    ]
    assert tier.stopped == [port]
    servers.stop()
    assert tier.stopped == [port, port]


class _RefusingTier(MockTier):
    """Fails to start a server, as a recipe with a typo does."""

    @contextlib.contextmanager
    def serve(
        self, command: str, *, cwd: Path, port: int, env: Mapping[str, str] | None = None
    ) -> Iterator[MockServer]:
        raise RuntimeError("the server exited with 1")
        yield  # pragma: no cover


def test_a_server_that_does_not_start_is_not_kept(tmp_path: Path) -> None:
    servers = ServerKeeper(_RefusingTier("mock-model"))
    with pytest.raises(RuntimeError, match="exited with 1"):
        servers.serve("python serve_mock.py", cwd=tmp_path, port=free_port())
    with pytest.raises(RuntimeError, match="exited with 1"):
        servers.serve("python serve_mock.py", cwd=tmp_path, port=free_port())


PAGE = """\
% test: server
```bash
python serve_mock.py
```
"""


@pytest.mark.parametrize("fake", [True, False], ids=["fake-tier", "ascend-tier"])
def test_a_pages_server_outlives_the_page_only_where_the_tiers_cluster_does(
    servers: ServerKeeper, tier: MockTier, tmp_path: Path, fake: bool
) -> None:
    # On the Ascend tier the page's own `cluster` block starts Ray, and stops it after
    # the page: its server goes first. The fake tier's cluster is the tier's, for all pages.
    tier.fake = fake
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    (item,) = read_page(PAGE, page, tmp_path)
    assert item.block is not None
    port = free_port()
    with contextlib.ExitStack() as page_stack:
        scenario = PageScenario(servers, tmp_path, page_stack, Tally(tier="mock", shellcheck=False))
        scenario.run(item.block, ServerConfig(frozenset({"mock-model"}), None, port, "mock"))
    assert tier.stopped == ([] if fake else [port])
    servers.stop()
    assert tier.stopped == [port]
