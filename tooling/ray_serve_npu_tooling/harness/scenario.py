"""One page as one scenario: its blocks run in page order against a tier's server."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from ray_serve_npu_tooling.harness.tier import Server, Tier

from .blocks import Block, Language
from .markers import MarkerKind, skipped_on
from .output import compare_output
from .problems import PageProblem
from .server_config import ServerConfig
from .servers import ServerKeeper
from .status import RUN, STATIC, Outcome, Status
from .summary import Tally

#: How long one client block may take (a chat request on the fake tier takes well under 1 s).
BLOCK_TIMEOUT_S = 300
#: Lines of server log shown when a block fails.
LOG_TAIL_LINES = 40
#: The API key file the pages write once (recipes/make_secrets.py, docs/npu-ascend.md
#: Step 4) and read in every shell and server block, relative to the home directory.
API_KEY_FILE = Path(".ray-serve-npu") / "api_key"


def reader_home(directory: Path, api_key: str) -> Path:
    """A home directory for a fake tier's page blocks and servers, holding the tier's API
    key where the pages keep theirs, readable by its owner alone as make_secrets.py
    writes it: the block that writes a new key is the host's, skipped on a fake tier."""
    key_file = directory / API_KEY_FILE
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.touch(mode=0o600)
    key_file.write_text(api_key + "\n")
    return directory


@dataclass(frozen=True)
class BlockOutput:
    block: Block
    stdout: str


class PageScenario:
    """Runs a page's blocks in order, in ``recipes``; the page's ExitStack stops what they
    start, but for a server on a tier whose cluster outlives the page, which ``servers``
    keeps for whoever starts the same server next."""

    def __init__(
        self,
        servers: ServerKeeper,
        recipes: Path,
        stack: contextlib.ExitStack,
        tally: Tally,
        home: Path | None = None,
    ) -> None:
        self.tier: Tier = servers.tier
        #: The blocks' home directory where the tier gives them one (:func:`reader_home`).
        self.home = home
        self.servers = servers
        self.recipes = recipes
        self.tally = tally
        self._page_stack = stack
        self._server: Server | None = None
        #: The server block that failed to start; blocks after it do not run.
        self._failed_server: Block | None = None
        #: What the previous runnable block printed, None if it did not run.
        self._last_output: BlockOutput | None = None

    def run(self, block: Block, server: ServerConfig | None) -> None:
        """Run ``block`` as a reader would; skip it (with the page's reason) where the page says."""
        kind = block.kind
        if block.marker and skipped_on(kind, fake=self.tier.fake):
            self._last_output = None
            self._skip(block, f"[{kind.value}] {block.marker.reason}")
        if kind is MarkerKind.OUTPUT:
            self._compare(block)
        elif block.language is not Language.SHELL:
            self.tally.record(block.where, STATIC)
        elif kind is MarkerKind.CLUSTER:
            self._start_cluster(block)
        elif kind is MarkerKind.SERVER:
            assert server is not None, "a server block's config is read before it runs"
            self._start_server(block, server)
        else:
            if self._failed_server is not None:
                self._last_output = None
                failed = self._failed_server.where
                self._skip(block, f"the server block at {failed} failed to start")
            self._last_output = BlockOutput(block, self._run_shell(block))
            self.tally.record(block.where, RUN)

    def _skip(self, block: Block, why: str) -> NoReturn:
        self.tally.record(block.where, Outcome(Status.SKIPPED, why))
        pytest.skip(f"{block.where}: {why}")

    def _compare(self, block: Block) -> None:
        previous = self._last_output
        if previous is None:
            self._skip(block, "expected output of the previous block, which did not run")
        difference = compare_output(block.text, previous.stdout)
        if difference is not None:
            raise PageProblem(
                block.where,
                f"the output of the block at {previous.block.where} no longer matches:\n"
                f"{difference}",
                "update the expected output, or write ... where it varies",
            )
        self.tally.record(block.where, RUN)

    def _start_cluster(self, block: Block) -> None:
        self._last_output = None
        if self.tier.fake:
            # The fake tier already runs a Ray cluster with fake NPUs in its place.
            self._skip(block, f"replaced by the {self.tier.name} tier's own Ray cluster")
        self._page_stack.callback(subprocess.run, ["ray", "stop"], env=self._env(), check=False)
        self._run_shell(block)
        self.tally.record(block.where, RUN)

    def _start_server(self, block: Block, config: ServerConfig) -> None:
        self._last_output = None
        self._server, self._failed_server = None, block
        if not self.tier.fake:
            # Here the page's own `cluster` block started Ray, which stops with the page:
            # so does its server, before the cluster (the page's stack unwinds in reverse).
            self._page_stack.callback(self.servers.stop)
        try:
            self._server = self.servers.serve(block.text, cwd=self.recipes, port=config.port)
        except Exception as error:
            raise PageProblem(
                block.where,
                f"the server did not start on the {self.tier.name} tier: {error}",
                "fix the recipe the block starts (its output is above)",
            ) from error
        self._failed_server = None
        self.tally.record(block.where, RUN)

    def _env(self) -> dict[str, str]:
        # `python` in a block is the interpreter running the tests, with its packages.
        bin_dir = str(Path(sys.executable).parent)
        return {
            **os.environ,
            **self.tier.env(),
            "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
            **({"HOME": str(self.home)} if self.home else {}),
        }

    def _run_shell(self, block: Block) -> str:
        try:
            result = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", block.text],
                cwd=self.recipes, env=self._env(), capture_output=True, text=True,
                timeout=BLOCK_TIMEOUT_S, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as error:
            raise PageProblem(
                block.where,
                f"the block did not finish in {BLOCK_TIMEOUT_S} s{self._server_log()}",
                'make the block finish, or mark it `% test: skip "reason"`',
            ) from error
        if result.returncode != 0:
            raise PageProblem(
                block.where,
                f"the block exited with {result.returncode}\n--- stdout\n{result.stdout}"
                f"--- stderr\n{result.stderr}{self._server_log()}",
                "fix the command or the recipe it runs",
            )
        return result.stdout

    def _server_log(self) -> str:
        if self._server is None:
            return ""
        tail = self._server.logs().splitlines()[-LOG_TAIL_LINES:]
        return "\n--- server log (last lines)\n" + "\n".join(tail)
