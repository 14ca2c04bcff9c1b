"""One server at a time on a tier, kept up for the next scenario that starts the same one.

Starting a recipe's server is the dearest step of the fake-NPU tier (a Ray Serve app and
a vLLM engine, about a minute on two cores). A page's server block and a test that needs
only that server up ask the keeper for the same command; the second joins the first's
server instead of starting its own. A different command stops the kept server first:
both would hold the tier's NPUs and its port.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ray_serve_npu_tooling.harness.tier import Server, Tier


@dataclass(frozen=True)
class ServerKey:
    """What makes two requests the same server: the block's command, where, on which port."""

    command: str
    cwd: Path
    port: int


class ServerKeeper:
    """Starts servers on ``tier`` one at a time and keeps the last until another is needed.

    Leave it (a context manager) or :meth:`stop` it where the tier's cluster ends: a kept
    server lives on the tier's cluster, not on a page's.
    """

    def __init__(self, tier: Tier, env: Mapping[str, str] | None = None) -> None:
        self.tier = tier
        #: Over the tier's environment for every server (a page's ``HOME``).
        self.env = dict(env or {})
        self._key: ServerKey | None = None
        self._server: Server | None = None
        self._stack = contextlib.ExitStack()
        #: How many requests joined a server already up, by server.
        self.joined: dict[ServerKey, int] = {}

    def __enter__(self) -> ServerKeeper:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve(self, command: str, *, cwd: Path, port: int) -> Server:
        """The server ``command`` starts in ``cwd`` on ``port``: the kept one if it is that
        server, else a new one, started after the kept one stopped.

        Raises what the tier raises for a server that does not come up; nothing is kept then.
        """
        key = ServerKey(command, cwd.resolve(), port)
        if self._key == key and self._server is not None:
            self.joined[key] = self.joined.get(key, 0) + 1
            return self._server
        self.stop()
        self._server = self._stack.enter_context(
            self.tier.serve(command, cwd=cwd, port=port, env=self.env)
        )
        self._key = key
        return self._server

    def stop(self) -> None:
        """Stop the kept server, if any, and every process it started."""
        self._key = self._server = None
        stack, self._stack = self._stack, contextlib.ExitStack()
        stack.close()
