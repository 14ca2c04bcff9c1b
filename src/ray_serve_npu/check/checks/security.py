"""Checks of what a deployment exposes or is allowed: privileges, kernel tuning,
listening addresses, API keys, secrets and writable host mounts."""

from __future__ import annotations

import re

from ray_serve_npu.check.checks.common import finding
from ray_serve_npu.check.findings import Finding
from ray_serve_npu.check.model import MISSING, ParsedFile, truthy
from ray_serve_npu.check.rules import Rule, RuleSet
from ray_serve_npu.vllm_cli import engine_flag


def check_privileged(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        finding(rule, dep, dep.privileged.line, "the container runs privileged: " + rule.what)
        for dep in parsed.deployments
        if dep.privileged and truthy(dep.privileged.value)
    ]


def check_kernel_tuning_in_container(
    rule: Rule, parsed: ParsedFile, rules: RuleSet
) -> list[Finding]:
    return [
        finding(rule, dep, setting.line, f"the service changes `{setting.value}`: " + rule.what)
        for dep in parsed.deployments
        for setting in dep.kernel_tuning
    ]


_DASHBOARD_ALL = re.compile(r"""dashboard[-_]host["']?\s*[=:\s]\s*["']?0\.0\.0\.0""")


def check_ray_bind_all(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    if parsed.has_warning:
        return []
    return [
        finding(rule, parsed, number, "the Ray dashboard is bound to 0.0.0.0: " + rule.what)
        for number, text in enumerate(parsed.lines, start=1)
        if _DASHBOARD_ALL.search(text)
    ]


def check_open_endpoint(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    """A ``vllm serve`` that listens beyond loopback and has no API key."""
    loopback = set(rule.params["loopback_hosts"])
    findings = []
    for dep in parsed.deployments:
        if dep.http_server_line is None:
            continue
        host = dep.engine.get("host")
        keyed = dep.value_at("engine.api_key") is not MISSING or dep.value_at(
            f"env.{rule.params['key_env']}"
        ) not in (MISSING, "")
        if keyed or (host is not None and str(host.value) in loopback):
            continue
        where = f"--host {host.value}" if host else "no --host (all interfaces)"
        line = host.line if host else dep.http_server_line
        findings.append(finding(rule, dep, line, f"{where} and no API key: " + rule.what))
    return findings


def check_local_media_path(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    """A deployment that lets its clients read local files through the engine."""
    return [
        finding(rule, dep, path.line, f"`allowed_local_media_path` {path.value}: " + rule.what)
        for dep in parsed.deployments
        if (path := dep.engine.get("allowed_local_media_path")) is not None and path.value
    ]


# Compose's interpolation (compose-spec, "Interpolation"): `$NAME`, `${NAME}`, and
# `${NAME<op>ARG}` with op `:-`/`-` (default), `:+`/`+` (alternative), `:?`/`?` (error).
_REFERENCE = re.compile(r"\$(?P<bare>\w+)|\$\{\w+(?:(?P<op>:?[-+?])(?P<arg>.*))?\}", re.DOTALL)


def _reads_the_environment(value: str) -> bool:
    """Whether ``value`` is one variable reference whose every alternative is one too; a
    non-empty default (``${X:-literal}``) or ``$$`` (Compose's literal ``$``) is a literal."""
    match = _REFERENCE.fullmatch(value)
    if match is None:
        return False
    arg = match["arg"] or ""
    return match["op"] is None or "?" in match["op"] or not arg or _reads_the_environment(arg)


def check_secrets(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    name_pattern = re.compile(rule.params["name_pattern"])
    value_patterns = [re.compile(p) for p in rule.params["value_patterns"]]
    lines: dict[int, str] = {}
    for dep in parsed.deployments:
        # Environment variables, and engine settings (`--api-key`) by their flag.
        named = [(name, name, setting, False) for name, setting in dep.env.items()] + [
            (key, f"`{engine_flag(key)}`", setting, dep.http_server_line is not None)
            for key, setting in dep.engine.items()
        ]
        for key, shown, setting, argv in named:
            if not name_pattern.search(key):
                continue
            values = setting.value if isinstance(setting.value, list) else [setting.value]
            if any(isinstance(v, str) and v and not _reads_the_environment(v) for v in values):
                lines[setting.line] = f"{shown} holds a literal value"
            elif argv:
                # The shell or Compose substitutes a reference before vLLM starts, so the
                # secret is in the process's arguments, which `ps` and `docker inspect` show.
                lines[setting.line] = f"{shown} puts the secret on the command line"
    for number, text in enumerate(parsed.lines, start=1):
        if any(p.search(text) for p in value_patterns):
            lines.setdefault(number, "a token-shaped literal")
    return [finding(rule, parsed, n, f"{why}: " + rule.what) for n, why in sorted(lines.items())]


def _within(path: str, root: str) -> bool:
    path, root = path.rstrip("/"), root.rstrip("/")
    return path == root or path.startswith(root + "/")


def check_writable_host_mount(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    read_only: list[str] = rule.params["read_only_paths"]
    findings = []
    for dep in parsed.deployments:
        model = str(dep.model.value) if dep.model else ""
        # The weights are in the mount whose target is the longest prefix of the model's path.
        holders = [m for m in dep.mounts if model.startswith("/") and _within(model, m.target)]
        weights = max(holders, key=lambda m: len(m.target), default=None)
        for mount in dep.mounts:
            if mount.read_only:
                continue
            # Either end inside a protected path, or a protected path inside either end
            # (`/:/host` puts the driver at /host/usr/local/Ascend/driver).
            paths = [p for p in (mount.source, mount.target) if p.startswith("/")]
            inside = next((p for p in read_only if any(_within(m, p) for m in paths)), None)
            holds = next((p for p in read_only if any(_within(p, m) for m in paths)), None)
            if inside is not None:
                why = f"{mount.target} is mounted writable"
            elif holds is not None:
                why = f"{mount.target} is mounted writable and holds {holds}"
            elif mount is weights:
                why = f"{mount.target}, which holds the weights {model}, is mounted writable"
            else:
                continue
            findings.append(finding(rule, dep, mount.line, f"{why}: " + rule.what))
    return findings
