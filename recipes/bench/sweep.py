"""Sweep an OpenAI-compatible endpoint: ``python -m bench.sweep --help`` (from ``recipes/``).

Each point of the grid is one ``vllm bench serve`` run. With ``--serve-cmd``, the
sweep starts the server itself, once per combination of ``--serve-param`` values.
Results: ``results.json``, ``results.md`` and ``results.png`` in ``--out-dir``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from .config import SweepConfig, SweepError
from .results import PointResult, markdown_table, write_json
from .runner import bench_serve_argv, check_server, check_tokenizer, run_point
from .server import launched_server

T = TypeVar("T")


def _comma_list(flag: str, kind: Callable[[str], T]) -> Callable[[str], list[T]]:
    def parse(text: str) -> list[T]:
        try:
            return [kind(item) for item in text.split(",") if item.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} {text!r}: give comma-separated {kind.__name__} values, such as 1,8,32"
            ) from None

    return parse


def _serve_param(text: str) -> tuple[str, list[str]]:
    """``max-num-seqs=8,16`` -> ``("--max-num-seqs", ["8", "16"])``."""
    name, equals, values = text.partition("=")
    if not equals or not values or not name.strip("-"):
        raise argparse.ArgumentTypeError(
            f"--serve-param {text!r}: write NAME=V1,V2, such as max-num-seqs=8,16,32"
        )
    return "--" + name.strip("-"), values.split(",")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sweep", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--base-url", required=True, help="server root, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--tokenizer", required=True, help="model directory or Hugging Face id")
    parser.add_argument("--endpoint", default="/v1/chat/completions")
    parser.add_argument("--concurrency", type=_comma_list("--concurrency", int), default=[1, 8, 32])
    parser.add_argument(
        "--request-rate", type=_comma_list("--request-rate", float), default=[float("inf")]
    )
    parser.add_argument("--input-len", type=_comma_list("--input-len", int), default=[1024])
    parser.add_argument("--output-len", type=_comma_list("--output-len", int), default=[128])
    parser.add_argument("--num-prompts", type=int, default=64, help="requests per point")
    parser.add_argument("--serve-cmd", type=shlex.split, default=[], help="server to start")
    parser.add_argument(
        "--serve-param",
        type=_serve_param,
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="server flag to sweep, without its --; needs --serve-cmd; repeat for more",
    )
    parser.add_argument("--out-dir", type=Path, default=Path("bench-results"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.0, help="0 decodes greedily")
    parser.add_argument("--no-plots", action="store_true", help="skip results.png")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the servers and points, run nothing"
    )
    return parser


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    try:
        return SweepConfig(
            base_url=args.base_url,
            model=args.model,
            tokenizer=args.tokenizer,
            endpoint=args.endpoint,
            concurrency=args.concurrency,
            request_rate=args.request_rate,
            input_len=args.input_len,
            output_len=args.output_len,
            num_prompts=args.num_prompts,
            serve_cmd=args.serve_cmd,
            serve_params=dict(args.serve_param),
            seed=args.seed,
            temperature=args.temperature,
            out_dir=args.out_dir,
        )
    except ValidationError as error:
        raise SweepError(
            "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
        ) from None


def print_plan(config: SweepConfig) -> None:
    """The servers and points a sweep would run, and its first point as a command line."""
    server_sets = config.server_settings()
    for server_index, settings in enumerate(server_sets, start=1):
        if config.serve_cmd:
            print(f"server {server_index}/{len(server_sets)}: {config.describe_serve(settings)}")
        points = config.points(settings)
        for index, point in enumerate(points, start=1):
            print(f"  point {index}/{len(points)}: concurrency={point.concurrency} {point.label()}")
    first = config.points(server_sets[0])[0]
    argv = bench_serve_argv(config, first, config.out_dir / "point-000")
    print(f"first point: {shlex.join(['vllm', 'bench', 'serve', *argv])}")


def run_sweep(config: SweepConfig) -> list[PointResult]:
    """Every point against every server; each point's result as soon as it is measured."""
    results: list[PointResult] = []
    server_sets = config.server_settings()
    total = sum(len(config.points(settings)) for settings in server_sets)
    for server_index, settings in enumerate(server_sets):
        with contextlib.ExitStack() as stack:
            if config.serve_cmd:
                print(f"starting: {config.describe_serve(settings)}", flush=True)
                log = config.out_dir / f"server-{server_index}.log"
                stack.enter_context(launched_server(config, settings, log))
            check_server(config)
            for point in config.points(settings):
                workdir = config.out_dir / f"point-{len(results):03d}"
                print(f"[{len(results) + 1}/{total}] {point.label()} "
                      f"concurrency={point.concurrency}", flush=True)  # fmt: skip
                result = run_point(config, point, workdir)
                results.append(result)
                print(f"    {_summary(result)}", flush=True)
                write_json(results, config.out_dir / "results.json")
    return results


def _summary(result: PointResult) -> str:
    if not result.completed:
        return f"failed: {result.error}"
    return (
        f"{result.requests_per_s:.2f} req/s, {result.output_tokens_per_s:.1f} output tok/s, "
        f"TTFT p50 {result.latency('ttft'):.1f} ms, TPOT p50 {result.latency('tpot'):.1f} ms, "
        f"failed {result.failed}/{result.point.num_prompts}"
    )


def write_reports(results: Sequence[PointResult], config: SweepConfig, plots: bool) -> None:
    table = markdown_table(results)
    (config.out_dir / "results.md").write_text(table)
    print(table)
    if plots:
        from .plots import plot_sweep

        png = plot_sweep(results, config.out_dir / "results.png", f"{config.model} sweep")
        print(f"plots: {png}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # vLLM's logging setup would print every request of httpx (the server check).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        config = config_from_args(args)
        if args.dry_run:
            print_plan(config)
            return 0
        if not args.no_plots:
            from .plots import pyplot

            pyplot()  # a missing matplotlib stops the sweep before it starts, not after
        check_tokenizer(config.tokenizer)
        config.out_dir.mkdir(parents=True, exist_ok=True)
        results = run_sweep(config)
        write_reports(results, config, plots=not args.no_plots)
    except SweepError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
