"""``ray-serve-npu check FILE...``: exit 0 if clean, 1 on error findings, 2 on usage errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import nullcontext

from ray_serve_npu.check.findings import Severity


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-serve-npu check",
        description="Check serving configurations against a vLLM-Ascend release's rules.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="FILE",
        help="Compose, Serve YAML, recipe (.py), Markdown or shell files",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--release",
        default=None,
        help="rule file to use (default: the release the image tag names, "
        "else the newest rule file)",
    )
    parser.add_argument(
        "--execute-recipes",
        action="store_true",
        help="run each Python recipe's module-level code to read its LLMConfigs, instead of "
        "reading them from the source; only for recipes you trust",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return 2 if exit_.code else 0
    # vLLM logs at import; findings are what the user asked for.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from ray_serve_npu.check import RecipeError, check_paths
    from ray_serve_npu.check.recipe import PROBE_ENV, executing_recipes
    from ray_serve_npu.check.rules import load_rules
    from ray_serve_npu.check.vllm_args import vllm_version

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"ray-serve-npu check: FILE: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.execute_recipes:
        print(
            "ray-serve-npu check: warning: --execute-recipes runs the module-level code of every "
            "recipe that builds an LLMConfig, with your user's rights; the recipe sees only "
            f"{', '.join(PROBE_ENV)} of your environment. Use it only on recipes you trust.",
            file=sys.stderr,
        )
    try:
        if args.release:
            load_rules(args.release)
        with executing_recipes() if args.execute_recipes else nullcontext():
            findings = check_paths(args.paths, release=args.release)
    except (FileNotFoundError, RecipeError, ValueError) as error:
        print(f"ray-serve-npu check: {error}", file=sys.stderr)
        return 2
    version = vllm_version()
    if args.format == "json":
        print(
            json.dumps(
                {"vllm_parser": version, "findings": [f.model_dump(mode="json") for f in findings]},
                indent=2,
            )
        )
    else:
        for finding in findings:
            print(finding.format())
        # Say what was checked, so that silence is never mistaken for a pass.
        print(f"{len(args.paths)} file(s) checked: {len(findings)} finding(s)")
        if version is None:
            print(
                "note: vLLM is not importable; `vllm serve` flags were not checked", file=sys.stderr
            )
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
