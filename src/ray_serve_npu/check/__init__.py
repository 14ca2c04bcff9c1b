"""Check serving configurations against the rules of a pinned vLLM-Ascend release.

``check_paths`` reads Docker Compose files, Serve YAML and LLMConfig YAML,
Ray Serve LLM Python recipes, Markdown pages and shell command lines, and
returns a finding for every rule of ``rules/<release>.yaml`` they break.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ray_serve_npu.check.checks import CHECKS, image_release
from ray_serve_npu.check.cmdline import parse_commands
from ray_serve_npu.check.compose import parse_compose
from ray_serve_npu.check.findings import Finding, Severity
from ray_serve_npu.check.markdown import SHELL, YAML, code_blocks, has_warning
from ray_serve_npu.check.model import Deployment, ParsedFile
from ray_serve_npu.check.recipe import RecipeError, parse_recipe
from ray_serve_npu.check.rules import RuleSet, available_releases, default_release, load_rules
from ray_serve_npu.check.serve_yaml import parse_serve_yaml
from ray_serve_npu.check.yamlnodes import load_documents

__all__ = ["Finding", "RecipeError", "Severity", "check_file", "check_paths", "parse_file"]


def _parse_yaml(path: str, text: str, first_line: int = 1) -> list[Deployment]:
    deployments: list[Deployment] = []
    for data, lines in load_documents(text):
        if not isinstance(data, dict):
            continue
        if first_line != 1:
            lines = {k: v + first_line - 1 for k, v in lines.items()}
        if "services" in data:
            deployments += parse_compose(path, data, lines)
        elif "applications" in data or "model_loading_config" in data:
            deployments += parse_serve_yaml(path, data, lines)
    return deployments


def parse_file(path: str | Path) -> ParsedFile:
    """Read one file into deployments, choosing the parser by its suffix."""
    name = str(path)
    text = Path(path).read_text()
    parsed = ParsedFile(path=name, lines=text.splitlines())
    suffix = Path(path).suffix.lower()
    if suffix == ".py":
        parsed.deployments = parse_recipe(name, text)
    elif suffix in (".yaml", ".yml"):
        parsed.deployments = _parse_yaml(name, text)
    elif suffix == ".md":
        parsed.has_warning = has_warning(text)
        for language, body, first in code_blocks(text):
            if language in SHELL:
                parsed.deployments += parse_commands(name, body, first)
            elif language in YAML:
                parsed.deployments += _parse_yaml(name, body, first)
    else:
        parsed.deployments = parse_commands(name, text)
    return parsed


def _release_for(parsed: ParsedFile, fallback: str) -> tuple[str, list[Finding]]:
    """The release the file's images name, if one has a rule file; else ``fallback``."""
    known = available_releases()
    for dep in parsed.deployments:
        if dep.image and (release := image_release(str(dep.image.value))):
            if release in known:
                return release, []
            return fallback, [
                Finding(
                    file=parsed.path,
                    line=dep.image.line,
                    severity=Severity.WARNING,
                    rule_id="release-without-rules",
                    message=f"no rule file for vLLM-Ascend {release}; checked against {fallback}",
                    fix=f"add src/ray_serve_npu/check/rules/{release}.yaml, or pass --release",
                )
            ]
    return fallback, []


def run_rules(parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules.rules:
        if rule.check not in CHECKS:
            raise ValueError(
                f"rules {rules.release}: rule {rule.id!r} has check: {rule.check!r}, which is not "
                f"one of {sorted(CHECKS)}; fix the check name or add the check to checks.py"
            )
        findings += CHECKS[rule.check](rule, parsed, rules)
    return findings


def check_file(path: str | Path, release: str | None = None) -> list[Finding]:
    """Findings for one file; ``release`` forces the rule file, else the image tag chooses."""
    parsed = parse_file(path)
    if release is not None:
        chosen, notes = release, []
    else:
        chosen, notes = _release_for(parsed, default_release())
    findings = notes + run_rules(parsed, load_rules(chosen))
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule_id))


def check_paths(paths: Iterable[str | Path], release: str | None = None) -> list[Finding]:
    """Findings for every file (directories are walked for the kinds the checker reads)."""
    findings: list[Finding] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.suffix.lower() in (".py", ".yaml", ".yml", ".md", ".sh") and p.is_file()
            )
        else:
            files = [path]
        for file in files:
            findings += check_file(file, release)
    return findings
