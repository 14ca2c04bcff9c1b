"""Checks of the engine's settings: vLLM flags and values, vLLM-Ascend's
``additional_config`` and environment, their interlocks, and values the checker
could not read."""

from __future__ import annotations

import difflib
import re
from typing import Any

from ray_serve_npu.check.checks.common import as_dict, engine_int, finding
from ray_serve_npu.check.findings import Finding, Severity
from ray_serve_npu.check.model import MISSING, VALUE_TYPES, Deployment, ParsedFile, truthy
from ray_serve_npu.check.rules import Rule, RuleSet


def check_vllm_flags(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    judge = f"vLLM {rules.vllm_version}, the vLLM {rules.release} carries"
    findings = []
    for dep in parsed.deployments:
        for flag, suggestion in dep.unknown_flags:
            fix = f"did you mean `{suggestion}`? " + rule.fix if suggestion else None
            findings.append(
                finding(rule, dep, flag.line, f"`{flag.value}` is not an option of {judge}", fix)
            )
    return findings


def check_vllm_values(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        finding(rule, dep, flag.line, f"`{flag.value}`: {message}")
        for dep in parsed.deployments
        for flag, message in dep.invalid_values
    ]


def check_additional_config_keys(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    known: dict[str, str] = rule.params["known_keys"]
    sub_keys: dict[str, list[str]] = rule.params["known_sub_keys"]
    cutoff: float = rule.params["misspelling_cutoff"]
    # What the release does with a key it does not take: up to v0.26.0rc1 it drops it
    # without a word; from v0.27.1rc1 AscendConfig refuses it at start-up.
    refused = rule.params["unknown_keys"] == "refused"
    effect = (
        "AscendConfig refuses unknown keys at start-up"
        if refused
        else "vLLM-Ascend ignores unknown keys silently"
    )
    findings = []

    def judge(dep: Deployment, path: str, key: str, choices: list[str]) -> None:
        close = difflib.get_close_matches(key, choices, n=1, cutoff=cutoff)
        where = f"`additional_config.{path}`"
        if close:
            done = "AscendConfig refuses it at start-up" if refused else "it is ignored silently"
            findings.append(
                finding(
                    rule,
                    dep,
                    dep.line_of(f"additional_config.{path}"),
                    f"{where} is not a key {rules.release} reads; {done}",
                    f"did you mean `{close[0]}`? " + rule.fix,
                    Severity(rule.params["misspelling_severity"]),
                )
            )
        else:
            findings.append(
                finding(
                    rule,
                    dep,
                    dep.line_of(f"additional_config.{path}"),
                    f"{where} is not among the keys this rule file knows for {rules.release}; "
                    f"{effect}",
                    rule.fix + " If it is a real key, add it to known_keys with its source.",
                )
            )

    for dep in parsed.deployments:
        config = dep.additional_config()
        for key, value in config.items():
            if key not in known:
                judge(dep, key, key, list(known))
            elif key in sub_keys and isinstance(value, dict):
                for sub in value:
                    if sub not in sub_keys[key]:
                        judge(dep, f"{key}.{sub}", sub, sub_keys[key])
    return findings


def check_env_var(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    name = rule.params["name"]
    return [
        finding(rule, dep, dep.env[name].line, f"{name}={dep.env[name].value}: " + rule.what)
        for dep in parsed.deployments
        if name in dep.env and (truthy(dep.env[name].value) or not rule.params["truthy_only"])
    ]


def check_no_effect_for_model(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    pattern = re.compile(rule.params["model_pattern"])
    findings = []
    for dep in parsed.deployments:
        if not dep.model or not pattern.search(str(dep.model.value)):
            continue
        paths = [f"env.{n}" for n in rule.params.get("env", [])] + [
            f"additional_config.{k}" for k in rule.params.get("additional_config", [])
        ]
        for path in paths:
            if dep.value_at(path) is not MISSING:
                findings.append(
                    finding(
                        rule,
                        dep,
                        dep.line_of(path),
                        f"`{path.partition('.')[2]}` has no effect for {dep.model.value}: "
                        + rule.what,
                    )
                )
    return findings


def check_interlock(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    def holds(dep: Deployment, condition: dict[str, Any]) -> bool:
        value = dep.value_at(condition["path"])
        value = condition["default"] if value is MISSING else value
        # A condition with `in` holds for those values; without, for a truthy one.
        return value in condition["in"] if "in" in condition else truthy(value)

    when = rule.params["when"]
    return [
        finding(rule, dep, dep.line_of(when["path"]), rule.what)
        for dep in parsed.deployments
        if holds(dep, when) and not any(holds(dep, c) for c in rule.params["requires_any"])
    ]


def check_value_type(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    path = rule.params["path"]
    expected = VALUE_TYPES[rule.params["type"]]
    findings = []
    for dep in parsed.deployments:
        value = dep.value_at(path)
        # `type(...) is`, not isinstance: 1 is no bool to vLLM, nor "true".
        if value is not MISSING and type(value) is not expected:
            setting = path.partition(".")[2]
            findings.append(
                finding(rule, dep, dep.line_of(path), f"`{setting}` is {value!r}: {rule.what}")
            )
    return findings


def check_capture_sizes(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        compilation = as_dict(dep.value_at("engine.compilation_config"))
        mode = compilation.get("cudagraph_mode")
        mode_name = getattr(mode, "name", str(mode))
        sizes = compilation.get("cudagraph_capture_sizes") or []
        max_num_seqs = engine_int(dep, "max_num_seqs")
        if mode_name not in rule.params["modes"] or not sizes or max_num_seqs is None:
            continue
        speculative = as_dict(dep.value_at("engine.speculative_config"))
        draft = int(speculative.get("num_speculative_tokens") or 0)
        reach = max_num_seqs * (1 + draft)
        beyond = sorted(s for s in sizes if s > reach)
        if beyond:
            findings.append(
                finding(
                    rule,
                    dep,
                    dep.line_of("engine.compilation_config"),
                    f"{len(beyond)} of {len(sizes)} capture sizes "
                    f"({beyond[0]}..{beyond[-1]}) exceed max_num_seqs {max_num_seqs} "
                    f"x (1 + {draft} speculative) = {reach}: " + rule.what,
                )
            )
    return findings


def check_shell_values(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        finding(rule, dep, setting.line, f"`{setting.value}`: " + rule.what)
        for dep in parsed.deployments
        for setting in dep.shell_values
    ]


def check_unread_values(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        finding(rule, dep, setting.line, f"{setting.value}: " + rule.what)
        for dep in parsed.deployments
        for setting in dep.unread
    ]
