"""The ``ray-serve-npu`` command."""

from __future__ import annotations

import argparse
import importlib
import sys

#: Subcommand -> (module whose ``main(argv)`` runs it, one-line help).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": (
        "ray_serve_npu.check.cli",
        "check Compose files, vllm serve command lines, Serve recipes and configs "
        "against the rules of the vLLM-Ascend release they run",
    ),
    "dry-run": (
        "ray_serve_npu.fake_npu.dry_run",
        "run a recipe on the fake-NPU tier: a local Ray cluster with fake NPUs, "
        "vLLM's CPU build and a tiny random model",
    ),
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; each parses its own arguments."""
    parser = argparse.ArgumentParser(prog="ray-serve-npu", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in SUBCOMMANDS.items():
        subparsers.add_parser(name, help=help_text, add_help=False)
    args, rest = parser.parse_known_args(argv)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    return int(module.main(rest))


if __name__ == "__main__":
    sys.exit(main())
