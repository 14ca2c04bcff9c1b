"""Where a page's recipes run: on Ascend NPUs, or on the fake-NPU tier.

The docs harness runs each page as one scenario. It asks a :class:`Tier` to start
what the page's server block starts, runs the page's client blocks against it, and
stops it. Two tiers implement this:

- the Ascend tier (:mod:`.ascend_tier`) runs every block as written, on a host with NPUs;
- the fake-NPU tier (:mod:`ray_serve_npu.fake_npu.fake_tier`, which users run through
  ``ray-serve-npu dry-run``) runs the same commands against a local Ray cluster that
  advertises fake ``NPU`` resources, with vLLM's CPU build and a tiny random model in
  place of the real weights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol


class Server(Protocol):
    """A server a page started, as its clients see it."""

    #: ``http://127.0.0.1:<port>``
    base_url: str

    def logs(self) -> str:
        """What the server printed so far (for failure messages)."""
        ...


class Tier(Protocol):
    """Runs a page's server blocks."""

    #: ``"ascend"`` or ``"fake-npu"``; test ids and the summary show it.
    name: str
    #: True where devices, engine or model are stand-ins.
    fake: bool

    def serve(
        self, command: str, *, cwd: Path, port: int, env: Mapping[str, str] | None = None
    ) -> contextlib.AbstractContextManager[Server]:
        """Start what ``command`` (a page's server block) starts, in ``cwd``, with the
        tier's environment and ``env`` over it.

        Entering waits until ``http://127.0.0.1:<port>/v1/models`` answers, or
        raises with the server's output; leaving stops the server and every
        process it started, also when the body raised.
        """
        ...

    def env(self) -> Mapping[str, str]:
        """Environment for the page's blocks (for example RAY_ADDRESS)."""
        ...
