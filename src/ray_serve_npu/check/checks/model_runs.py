"""Checks of a deployment against its release's runs of the same model
(:mod:`ray_serve_npu.check.model_runs`): the NPUs it gives the engine, and the settings
those runs fix for the model."""

from __future__ import annotations

from ray_serve_npu.check.checks.common import finding, setting_name
from ray_serve_npu.check.findings import Finding
from ray_serve_npu.check.model import Deployment, ParsedFile
from ray_serve_npu.check.model_runs import (
    PARALLEL_KEYS,
    ModelRun,
    engine_npus,
    model_key,
    runs_by_model,
)
from ray_serve_npu.check.rules import Rule, RuleSet


def _runs_of(dep: Deployment, rules: RuleSet) -> tuple[ModelRun, ...]:
    # A value the checker could not read may be any of the settings compared here; the
    # recipe-value-unread error or shell-value-unread warning already says so.
    unread = dep.unread or dep.shell_values
    if dep.model is None or not isinstance(dep.model.value, str) or unread:
        return ()
    return runs_by_model(rules.release).get(model_key(dep.model.value), ())


def _engine_npus(dep: Deployment) -> tuple[int, int]:
    """NPUs of the whole engine, and the line of its first parallel setting."""
    npus = engine_npus({key: setting.value for key, setting in dep.engine.items()})
    lines = [dep.engine[key].line for key in PARALLEL_KEYS if key in dep.engine]
    return npus, min(lines, default=dep.line)


def check_model_run_npus(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        runs = _runs_of(dep, rules)
        if not runs:
            continue
        npus, line = _engine_npus(dep)
        fewest = min(runs, key=lambda run: run.npus)
        if npus < fewest.npus:
            findings.append(
                finding(
                    rule,
                    dep,
                    line,
                    f"{npus} NPUs for {dep.model.value}; no run of it at {rules.release} "
                    f"uses fewer than {fewest.npus} ({fewest.name}, {fewest.source}): " + rule.what,
                )
            )
    return findings


def check_model_run_settings(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        runs = _runs_of(dep, rules)
        for key in rule.params["same_as_a_run"]:
            setting = [run for run in runs if key in run.engine]
            if not setting:
                continue
            used = sorted({str(run.engine[key]) for run in setting})
            cited = "; ".join(f"{run.name}, {run.source}" for run in setting[:2])
            more = f" and {len(setting) - 2} more" if len(setting) > 2 else ""
            where = f"at {rules.release} ({cited}{more})"
            name = setting_name(dep, key)
            if key in dep.engine:
                value = dep.engine[key].value
                if str(value) not in used:
                    findings.append(
                        finding(
                            rule,
                            dep,
                            dep.engine[key].line,
                            f"{name} {value!r} for {dep.model.value}, whose runs {where} use "
                            f"{' or '.join(used)}: " + rule.what,
                        )
                    )
            elif key in rule.params["set_by_every_run"] and len(setting) == len(runs):
                findings.append(
                    finding(
                        rule,
                        dep,
                        dep.line,
                        f"{name} is not set for {dep.model.value}, whose every run {where} "
                        f"sets it to {' or '.join(used)}: " + rule.what,
                    )
                )
    return findings
