"""Run one load point with ``vllm bench serve``, in this process, with its output in a log file."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import warnings
from pathlib import Path

import httpx

from .config import LATENCY_METRICS, PERCENTILES, LoadPoint, SweepConfig, SweepError
from .results import PointResult

#: ``vllm bench serve``'s client for ``/v1/chat/completions`` (``--backend``).
CHAT_BACKEND = "openai-chat"


def bench_serve_argv(config: SweepConfig, point: LoadPoint, result_dir: Path) -> list[str]:
    """The ``vllm bench serve`` arguments that measure ``point``, with random prompts."""
    argv = [
        "--backend", CHAT_BACKEND if config.endpoint.endswith("/chat/completions") else "openai",
        "--base-url", config.base_url,
        "--endpoint", config.endpoint,
        "--model", config.model,
        "--tokenizer", config.tokenizer,
        "--dataset-name", "random",
        "--random-input-len", str(point.input_len),
        "--random-output-len", str(point.output_len),
        "--num-prompts", str(point.num_prompts),
        "--max-concurrency", str(point.concurrency),
        "--request-rate", "inf" if math.isinf(point.request_rate) else f"{point.request_rate:g}",
        "--percentile-metrics", ",".join(LATENCY_METRICS),
        "--metric-percentiles", ",".join(map(str, PERCENTILES)),
        "--ready-check-timeout-sec", str(config.ready_check_timeout_s),
        "--seed", str(config.seed),
        "--temperature", f"{config.temperature:g}",
        "--save-result", "--result-dir", str(result_dir),
    ]  # fmt: skip
    return argv


def served_models(base_url: str) -> list[str]:
    """The model names the server lists; a clear error when nothing answers there."""
    # The key OpenAI's clients read; vllm bench serve sends it too.
    api_key = os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url}/v1/models", headers=headers, timeout=10)
        response.raise_for_status()
    except httpx.HTTPError as error:
        raise SweepError(
            f"--base-url {base_url}: GET /v1/models failed ({type(error).__name__}: {error}); "
            "start the server first, or point --base-url at it"
        ) from error
    return [model["id"] for model in response.json()["data"]]


def check_tokenizer(tokenizer: str) -> None:
    """A path that is no directory would reach Hugging Face as a model id, and fail there."""
    if tokenizer.startswith(("/", ".", "~")) and not Path(tokenizer).expanduser().is_dir():
        raise SweepError(
            f"--tokenizer {tokenizer!r} is no directory; give the model's directory "
            "(the one the server loads) or a Hugging Face model id"
        )


def check_server(config: SweepConfig) -> None:
    """Fail before the first point, not after a ready-check timeout, on a wrong URL or name."""
    models = served_models(config.base_url)
    if config.model not in models:
        raise SweepError(
            f"--model {config.model!r} is not served at {config.base_url}; it serves "
            f"{models}: pass --model with one of them"
        )


def _bench_parser() -> argparse.ArgumentParser:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    return parser


def run_point(config: SweepConfig, point: LoadPoint, workdir: Path) -> PointResult:
    """Measure one point; a point that fails is recorded as failed, and the sweep goes on."""
    from vllm.benchmarks.serve import main as bench_serve

    workdir.mkdir(parents=True, exist_ok=True)
    argv = bench_serve_argv(config, point, workdir)
    command = shlex.join(["vllm", "bench", "serve", *argv])
    log_file = workdir / "vllm-bench-serve.log"
    args = _bench_parser().parse_args(argv)
    # vLLM prints its report on stdout, and its request progress bar on stderr:
    # the report goes to the point's log, the bar stays on the terminal.
    with log_file.open("w") as log, contextlib.redirect_stdout(log), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = bench_serve(args)
        except Exception as error:  # noqa: BLE001 - any failure is this point's result
            return PointResult.failure(point, command, f"{type(error).__name__}: {error}")
    return PointResult.from_vllm(point, command, result)
