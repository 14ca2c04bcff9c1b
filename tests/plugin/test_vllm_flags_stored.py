"""A stored `vllm serve` flags file says what its vLLM's parser says: checked wherever
that vLLM is installed (nox -s compat installs 0.25.1 and 0.26.0)."""

from __future__ import annotations

import pytest
from ray_serve_npu_tooling import vllm_flags as tool

from ray_serve_npu.vllm_flags import stored_flags, stored_versions


def test_the_stored_file_of_the_installed_vllm_is_what_its_parser_says_now() -> None:
    vllm = pytest.importorskip("vllm")
    version = str(vllm.__version__)
    if version not in stored_versions():
        pytest.skip(
            f"no release with rules carries the installed vLLM {version}; the stored "
            f"files are {', '.join(stored_versions())}, checked where nox -s compat installs them"
        )
    committed = stored_flags(version)
    # By their fields: the committed object may hold the parser it built for an earlier
    # test (its cache is a private attribute, which pydantic's == compares too).
    assert tool.stored_flags(committed.made_by).model_dump() == committed.model_dump()
