"""``ray-serve-npu check FILE...``: exit 0 if clean, 1 on error findings, 2 when a file
could not be read (whatever the other files' findings) or on usage errors."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ray_serve_npu.check.findings import Severity
from ray_serve_npu.hardware import NODE_KINDS


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
        help="the vLLM-Ascend release whose rules judge every file (default: the release "
        "a file's vLLM-Ascend image names, else the release the Ray Serve LLM recipes pin)",
    )
    parser.add_argument(
        "--node-kind",
        choices=sorted(NODE_KINDS),
        default=None,
        help="the node every file's deployments run on: flags an image built for another "
        "node kind and a layout beyond the node's NPUs (default: the node kind a "
        "deployment's accelerator_type names, else its image's)",
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
    # A recipe run by --execute-recipes imports vLLM, which logs at import; findings are
    # what the user asked for.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from ray_serve_npu.check import check_paths
    from ray_serve_npu.check.recipe import PROBE_ENV
    from ray_serve_npu.check.rules import available_releases, load_rules, no_rules

    # A link to nothing or a loop exists: check_paths reports its stat error.
    missing = [p for p in args.paths if not os.path.lexists(p)]
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
    if args.release is not None and args.release not in available_releases():
        print(
            f"ray-serve-npu check: --release: {no_rules(args.release)}; pass one of those",
            file=sys.stderr,
        )
        return 2
    try:
        if args.release:
            load_rules(args.release)
        report = check_paths(args.paths, args.release, args.execute_recipes, args.node_kind)
    except (FileNotFoundError, ValueError) as error:
        print(f"ray-serve-npu check: {error}", file=sys.stderr)
        return 2
    findings = report.findings
    if args.format == "json":
        print(
            json.dumps(
                {
                    "checked": report.checked,
                    "findings": [f.model_dump(mode="json") for f in findings],
                    "unreadable": report.unreadable,
                    "skipped": report.skipped,
                },
                indent=2,
            )
        )
    else:
        for finding in findings:
            print(finding.format())
        for line in report.unreadable + report.skipped:
            print(line, file=sys.stderr)
        # Say what was checked, so that silence is never mistaken for a pass.
        summary = f"{report.checked} file(s) checked: {len(findings)} finding(s)"
        if report.unreadable:
            summary += f"; {len(report.unreadable)} file(s) could not be read"
        if report.checked or not report.unreadable:
            print(summary)
    # A file not read outweighs findings: its own findings are unknown.
    if report.unreadable or not report.checked:
        return 2
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
