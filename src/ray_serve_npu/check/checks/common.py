"""What every check shares: its signature and how it words a finding."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ray_serve_npu.check.findings import Finding, Severity
from ray_serve_npu.check.model import Deployment, ParsedFile
from ray_serve_npu.check.rules import Rule, RuleSet
from ray_serve_npu.vllm_cli import engine_flag

Check = Callable[[Rule, ParsedFile, RuleSet], list[Finding]]


def finding(
    rule: Rule,
    dep: Deployment | ParsedFile,
    line: int,
    message: str,
    fix: str | None = None,
    severity: Severity | None = None,
) -> Finding:
    path = dep.file if isinstance(dep, Deployment) else dep.path
    return Finding(
        file=path,
        line=line,
        severity=severity or rule.severity,
        rule_id=rule.id,
        message=f"{dep.label}: {message}" if isinstance(dep, Deployment) and dep.label else message,
        fix=fix or rule.fix,
    )


def setting_name(dep: Deployment, key: str) -> str:
    """An engine setting as the input writes it: a flag on a `vllm serve` line
    (``--max-model-len``), the engine keyword elsewhere (``max_model_len``)."""
    return engine_flag(key) if dep.http_server_line is not None else key


def engine_int(dep: Deployment, key: str, default: int | None = None) -> int | None:
    value = dep.engine[key].value if key in dep.engine else None
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    elif not isinstance(value, dict) and hasattr(value, "__dataclass_fields__"):
        value = {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value if isinstance(value, dict) else {}
