"""The ``ray-serve-npu`` command."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import sys
from typing import NamedTuple

from packaging.requirements import Requirement


class Subcommand(NamedTuple):
    #: The module whose ``main(argv)`` runs it.
    module: str
    help: str
    #: The extra that installs what it needs beyond the base install, if any.
    extra: str | None = None
    #: Where the extra's exact pins don't bind the command (dry-run runs beside any
    #: vLLM CPU build a measured pair has), the modules it needs, found by name;
    #: otherwise every requirement of the extra is checked.
    modules: tuple[str, ...] = ()


SUBCOMMANDS: dict[str, Subcommand] = {
    "check": Subcommand(
        "ray_serve_npu.check.cli",
        "check Compose files, vllm serve command lines, Serve recipes and configs "
        "against the rules of the vLLM-Ascend release they run",
        extra="check",
    ),
    "dry-run": Subcommand(
        "ray_serve_npu.fake_npu.dry_run",
        "run a recipe on the fake-NPU tier: a local Ray cluster with fake NPUs, "
        "vLLM's CPU build and a tiny random model",
        extra="cpu-engine",
        modules=("psutil", "vllm"),
    ),
}


def missing_requirements(extra: str, distribution: str = "ray-serve-npu") -> list[str]:
    """The requirements of ``distribution``'s ``extra`` that are not installed, or too old.

    Read from the installed distribution's metadata, the one place that lists them
    (pyproject.toml's optional dependencies); empty where the distribution is not
    installed (a source tree on ``PYTHONPATH``).
    """
    try:
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for line in requires:
        requirement = Requirement(line)
        marker = requirement.marker
        # Only requirements of this extra: a marker that holds without it (a Python
        # version) belongs to no extra.
        of_extra = marker is not None and not marker.evaluate({"extra": ""})
        if not of_extra or not marker.evaluate({"extra": extra}):
            continue
        try:
            found = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement.name)
            continue
        if not requirement.specifier.contains(found, prereleases=True):
            missing.append(f"{requirement.name}{requirement.specifier} (found {found})")
    return missing


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; each parses its own arguments."""
    parser = argparse.ArgumentParser(prog="ray-serve-npu", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, subcommand in SUBCOMMANDS.items():
        subparsers.add_parser(name, help=subcommand.help, add_help=False)
    args, rest = parser.parse_known_args(argv)
    subcommand = SUBCOMMANDS[args.command]
    # Before the import: the subcommand's modules import what the extra installs.
    if subcommand.modules:
        lacking = [name for name in subcommand.modules if importlib.util.find_spec(name) is None]
    else:
        lacking = missing_requirements(subcommand.extra) if subcommand.extra else []
    if lacking:
        print(
            f"ray-serve-npu {args.command}: needs {', '.join(lacking)}, which the "
            f"'{subcommand.extra}' extra installs. Fix: pip install "
            f"'ray-serve-npu[{subcommand.extra}]' (from a checkout: "
            f"pip install '.[{subcommand.extra}]').",
            file=sys.stderr,
        )
        return 2
    module = importlib.import_module(subcommand.module)
    return int(module.main(rest))


if __name__ == "__main__":
    sys.exit(main())
