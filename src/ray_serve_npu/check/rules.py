"""Rule files: one YAML file per vLLM-Ascend release, in ``rules/``."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ray_serve_npu.check.findings import Severity

RULES_DIR = Path(__file__).parent / "rules"


class Source(BaseModel):
    """Where the fact a rule enforces is stated."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    ref: str
    file: str
    lines: str | None = None
    # True where the file and lines were traced at ``ref`` itself.
    verified_at_tag: bool
    note: str = ""

    def cite(self) -> str:
        where = f"{self.file}:{self.lines}" if self.lines else self.file
        return f"{self.repo}@{self.ref} {where}"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    severity: Severity
    # Name of the function in checks.CHECKS that evaluates this rule.
    check: str
    what: str
    fix: str
    params: dict[str, Any] = Field(default_factory=dict)
    source: Source


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    release: str
    vllm_version: str
    image_repository: str
    rules: list[Rule]

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(f"rule {rule_id!r} is not in the rules of {self.release}")


def available_releases(rules_dir: Path = RULES_DIR) -> list[str]:
    return sorted(p.stem for p in rules_dir.glob("*.yaml"))


@cache
def load_rules(release: str, rules_dir: Path = RULES_DIR) -> RuleSet:
    path = rules_dir / f"{release}.yaml"
    if not path.is_file():
        known = ", ".join(available_releases(rules_dir)) or "none"
        raise FileNotFoundError(
            f"release: no rule file for vLLM-Ascend {release!r} in {rules_dir} "
            f"(known: {known}); add {path.name} to check that release"
        )
    ruleset = RuleSet.model_validate(yaml.safe_load(path.read_text()))
    if ruleset.release != release:
        raise ValueError(f"{path}: release is {ruleset.release!r}; it must match the file name")
    return ruleset


def default_release(rules_dir: Path = RULES_DIR) -> str:
    """The newest release with a rule file: what an input that names none is checked against."""
    from packaging.version import Version

    return max(available_releases(rules_dir), key=lambda r: Version(r.lstrip("v")))
