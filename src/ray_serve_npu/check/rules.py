"""Rule files: every rule once in ``rules/base.yaml``, and what differs per release beside it.

``base.yaml`` holds each rule with what it checks: its id, severity, check, what, fix
and the parameters every release shares. ``rules/<tag>.yaml`` holds, for each rule,
the release's citation (``source``, traced at that tag) and only the fields that
differ at that tag: a ``severity``, ``what`` or ``fix`` of its own, parameters of its
own (merged key by key over the base's), or ``not_applicable``. ``{release}`` in a
base text stands for the release's tag.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ray_serve_npu.check.findings import Severity
from ray_serve_npu.check.model import VALUE_TYPES, split_path
from ray_serve_npu.releases import RELEASES, UNREAD_RELEASES

RULES_DIR = Path(__file__).parent / "rules"
#: The file of every rule, in RULES_DIR; every other file there is one release's.
BASE_FILE = "base.yaml"
#: Stands in a base rule's text for the tag of the release it judges.
RELEASE_TOKEN = "{release}"
#: The fields a release's file may set for a rule (``id`` and ``check`` are the base's).
RELEASE_FIELDS = frozenset({"severity", "what", "fix", "params", "source", "not_applicable"})
#: The repository whose tags the rule files are named after.
RELEASE_REPO = "vllm-project/vllm-ascend"


class Source(BaseModel):
    """Where the fact a rule enforces is stated."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    ref: str
    file: str
    lines: str | None = None
    # True where the file and lines were traced at ``ref`` itself.
    verified_at_tag: bool
    # Where ``verified_at_tag`` is false, why, and what was read instead.
    note: str = ""

    @model_validator(mode="after")
    def _reason_for_unverified(self) -> Source:
        if not self.verified_at_tag and not self.note.strip():
            raise ValueError(
                f"source {self.cite()}: verified_at_tag is false and note is empty; "
                "say in note why the source could not be read at its tag"
            )
        return self

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
    # Why the rule does not apply to this release (the source shows the release behaves
    # otherwise); such a rule is kept, for the record, and never fires.
    not_applicable: str | None = None

    @property
    def applies(self) -> bool:
        return self.not_applicable is None


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    release: str
    rules: list[Rule]

    @field_validator("release")
    @classmethod
    def _a_supported_release(cls, tag: str) -> str:
        # The release's facts (its vLLM, its images) are its release data's.
        if tag not in RELEASES:
            raise ValueError(
                f"release {tag!r} has no release data; add src/ray_serve_npu/releases/{tag}.yaml "
                f"or name one of {', '.join(RELEASES)}"
            )
        return tag

    @property
    def vllm_version(self) -> str:
        """The vLLM the release's images carry (its release data)."""
        return RELEASES[self.release].vllm

    @model_validator(mode="after")
    def _setting_paths_parse(self) -> RuleSet:
        # A misspelt path would never match a setting, and its rule never fire.
        for rule in self.rules:
            for condition in _conditions(rule.params):
                try:
                    split_path(condition["path"])
                except ValueError as error:
                    raise ValueError(f"rule {rule.id!r}: params: {error}") from None
                if "type" in condition and condition["type"] not in VALUE_TYPES:
                    raise ValueError(
                        f"rule {rule.id!r}: params: type {condition['type']!r} of "
                        f"{condition['path']} is not one of {sorted(VALUE_TYPES)}"
                    )
                # `in: lazy` would test substrings of "lazy".
                if "in" in condition and not isinstance(condition["in"], list):
                    raise ValueError(
                        f"rule {rule.id!r}: params: `in` of {condition['path']} must be a "
                        f"list of values, such as `in: [{condition['in']}]`"
                    )
        return self

    @model_validator(mode="after")
    def _traced_at_this_release(self) -> RuleSet:
        for rule in self.rules:
            source = rule.source
            if (
                source.repo == RELEASE_REPO
                and source.verified_at_tag
                and source.ref != self.release
            ):
                raise ValueError(
                    f"rule {rule.id!r}: source.ref is {source.ref!r} with verified_at_tag true, "
                    f"but these are the rules of {self.release}; trace the source at "
                    f"{self.release}, or set verified_at_tag false and say why in note"
                )
        return self

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(f"rule {rule_id!r} is not in the rules of {self.release}")


def _conditions(params: Any) -> list[dict[str, Any]]:
    """Every mapping with a ``path`` in a rule's params, at any depth."""
    if isinstance(params, dict):
        own = [params] if isinstance(params.get("path"), str) else []
        return own + [found for value in params.values() for found in _conditions(value)]
    if isinstance(params, list):
        return [found for item in params for found in _conditions(item)]
    return []


def available_releases(rules_dir: Path = RULES_DIR) -> list[str]:
    return sorted(p.stem for p in rules_dir.glob("*.yaml") if p.name != BASE_FILE)


def no_rules(tag: str) -> str:
    """That the checker has no rules for release ``tag``, why (from the release data), and
    the releases it has rules for."""
    known = ", ".join(available_releases())
    if tag in UNREAD_RELEASES:
        why = " ".join(UNREAD_RELEASES[tag].unread_because.split())
        return (
            f"the checker has no rules for vLLM-Ascend {tag}: its files can't be read here: "
            f"{why}. It has rules for {known}"
        )
    if tag in RELEASES:
        return (
            f"the checker has no rules for vLLM-Ascend {tag} yet: its facts are read, its "
            f"rules are not written; it has rules for {known}"
        )
    hint = f" (a tag starts with 'v': v{tag})" if f"v{tag}" in available_releases() else ""
    return f"the checker has no rules for vLLM-Ascend {tag!r}{hint}; it has rules for {known}"


def _mapping(data: Any, path: Path, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{path}: {what} must be a mapping, not {type(data).__name__}")
    return data


def _merged(base: dict[str, Any], own: dict[str, Any], release: str) -> dict[str, Any]:
    """One release's rule: the base rule, its texts naming the release, then what the
    release's file sets (its parameters merged key by key over the base's)."""
    rule = {
        key: value.replace(RELEASE_TOKEN, release) if isinstance(value, str) else value
        for key, value in base.items()
    }
    for key, value in own.items():
        if key == "params":
            rule["params"] = {**rule.get("params", {}), **value}
        else:
            rule[key] = value
    return rule


@cache
def load_rules(release: str, rules_dir: Path = RULES_DIR) -> RuleSet:
    path = rules_dir / f"{release}.yaml"
    if path.name == BASE_FILE or not path.is_file():
        known = ", ".join(available_releases(rules_dir)) or "none"
        raise FileNotFoundError(
            f"release: no rule file for vLLM-Ascend {release!r} in {rules_dir}; "
            f"the checker has rules for {known}. Add {path.name} to check that release"
        )
    base_path = rules_dir / BASE_FILE
    base_rules = _mapping(yaml.safe_load(base_path.read_text()), base_path, "the file")["rules"]
    data = _mapping(yaml.safe_load(path.read_text()), path, "the file")
    own_rules = _mapping(data.get("rules"), path, "rules")
    base_ids = [rule["id"] for rule in base_rules]
    unknown = sorted(set(own_rules) - set(base_ids))
    if unknown:
        raise ValueError(
            f"{path}: rules {', '.join(unknown)} are not in {BASE_FILE}; add each rule there "
            "once, with what it checks, and here only what differs at this release"
        )
    for rule_id, own in own_rules.items():
        extra = sorted(set(_mapping(own, path, f"rules.{rule_id}")) - RELEASE_FIELDS)
        if extra:
            raise ValueError(
                f"{path}: rules.{rule_id}: {', '.join(extra)} can't differ per release; "
                f"set them in {BASE_FILE}"
            )
    missing = [rule_id for rule_id in base_ids if rule_id not in own_rules]
    if missing:
        raise ValueError(
            f"{path}: no entry for {', '.join(missing)}; every rule needs its source traced "
            f"at {release} (rules.<id>.source), or not_applicable with why"
        )
    merged = {
        "release": data.get("release"),
        "rules": [_merged(base, own_rules[base["id"]], release) for base in base_rules],
    }
    try:
        ruleset = RuleSet.model_validate(merged)
    except ValidationError as error:
        raise ValueError(
            f"{path} over {BASE_FILE}: the rules do not fit the rule model: {error}"
        ) from None
    if ruleset.release != release:
        raise ValueError(f"{path}: release is {ruleset.release!r}; it must match the file name")
    return ruleset


def default_release() -> str:
    """The release an input that names none is checked against: the one the Ray Serve
    LLM recipes pin (``ray_serve_npu.releases.SERVE_LLM_RELEASE``). Inputs without an
    image are recipes and Serve configs, which belong to that path; a Compose file
    names its image."""
    from ray_serve_npu.releases import SERVE_LLM_RELEASE

    return SERVE_LLM_RELEASE.tag
