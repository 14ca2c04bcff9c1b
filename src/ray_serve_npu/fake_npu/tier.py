"""Where a page's recipes run: on Ascend NPUs, or on the fake-NPU tier.

The docs harness (top-level ``conftest.py``) runs each page as one scenario. It
asks a :class:`Tier` to start what the page's server block starts, runs the
page's client blocks against it, and stops it. Two tiers implement this:

- the Ascend tier runs every block as written, on a host with NPUs;
- the fake-NPU tier (:mod:`ray_serve_npu.fake_npu.fake_tier`) runs the same
  commands against a local Ray cluster that advertises fake ``NPU`` resources,
  with vLLM's CPU build and a tiny random model in place of the real weights.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

#: The one setting of the Ascend tier: where the model weights are.
MODEL_PATH_ENV_VAR = "MODEL_PATH"
#: The API key the pages' servers require and their clients send (the variable
#: OpenAI's clients read). Each tier sets a fresh one, as a reader exports theirs.
CLIENT_API_KEY_ENV_VAR = "OPENAI_API_KEY"
#: Set by ``ray-serve-npu dry-run`` and the fake-NPU tier to a tiny model's
#: directory: each ``LLMConfig`` deployed in that process is then served in its
#: fake-tier variant (:func:`ray_serve_npu.fake_npu.adapter.adapt_deployed_config`).
DRY_RUN_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MODEL"
#: Set beside :data:`DRY_RUN_MODEL_ENV_VAR` to a tiny mixture-of-experts model's
#: directory, which the fake tier serves for data-parallel configs (vLLM refuses
#: data parallel for a dense model).
DRY_RUN_MOE_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MOE_MODEL"
#: Ray's switch for token authentication (``ray/_private/authentication/``). Both
#: tiers run Ray with ``token``, as the pages tell readers to.
RAY_AUTH_MODE_ENV_VAR = "RAY_AUTH_MODE"


def fresh_api_key() -> str:
    return secrets.token_urlsafe(24)


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
        self, command: str, *, cwd: Path, port: int
    ) -> contextlib.AbstractContextManager[Server]:
        """Start what ``command`` (a page's server block) starts, in ``cwd``.

        Entering waits until ``http://127.0.0.1:<port>/v1/models`` answers, or
        raises with the server's output; leaving stops the server and every
        process it started, also when the body raised.
        """
        ...

    def env(self) -> Mapping[str, str]:
        """Environment for the page's blocks (for example RAY_ADDRESS)."""
        ...
