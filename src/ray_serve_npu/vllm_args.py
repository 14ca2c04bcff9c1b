"""``vllm serve`` flags and engine keywords: what the installed vLLM's own parser accepts.

The fake-NPU tier's adapter (:mod:`ray_serve_npu.fake_npu.adapter`) keeps only the
flags it accepts, and ``nox -s vllm-flags`` stores them (the checker reads the stored
ones: :mod:`ray_serve_npu.vllm_flags`). Nothing here imports vLLM until asked.
"""

from __future__ import annotations

import argparse
import dataclasses
from functools import cache
from typing import Any

from ray_serve_npu.vllm_flags import ParseError


@cache
def serve_parser() -> argparse.ArgumentParser | None:
    try:
        # vLLM 0.29 moved the serve parser here from vllm.entrypoints.openai.cli_args.
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        try:
            from vllm.entrypoints.openai.cli_args import make_arg_parser
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:
            return None

    class RaisingParser(FlexibleArgumentParser):
        # argparse exits on a bad value; the checker reports it instead.
        def error(self, message: str) -> Any:  # type: ignore[override]
            raise ParseError(message)

    return make_arg_parser(RaisingParser())


def serve_flags() -> frozenset[str] | None:
    """Every option string of ``vllm serve``'s parser, or None if vLLM does not import."""
    parser = serve_parser()
    return None if parser is None else frozenset(parser._option_string_actions)


@cache
def engine_fields() -> frozenset[str] | None:
    """Keywords Ray Serve LLM accepts in engine_kwargs: vLLM's AsyncEngineArgs and
    FrontendArgs fields (ray/llm/_internal/serve/engines/vllm/vllm_models.py:216-228)."""
    try:
        from vllm.engine.arg_utils import AsyncEngineArgs

        try:
            from vllm.entrypoints.launchers.cli_args import FrontendArgs
        except ImportError:
            from vllm.entrypoints.openai.cli_args import FrontendArgs
    except ImportError:
        return None
    return frozenset(
        f.name for cls in (AsyncEngineArgs, FrontendArgs) for f in dataclasses.fields(cls)
    )
