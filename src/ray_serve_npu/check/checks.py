"""The checks that rule files name. A rule supplies severity, text, params and source."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ray_serve_npu import hardware
from ray_serve_npu.check.findings import Finding, Severity
from ray_serve_npu.check.model import MISSING, Deployment, ParsedFile
from ray_serve_npu.check.rules import Rule, RuleSet
from ray_serve_npu.check.vllm_args import vllm_version
from ray_serve_npu.releases import DEFAULT_RELEASE, RELEASES, parse_image
from ray_serve_npu.vllm_cli import engine_flag

Check = Callable[[Rule, ParsedFile, RuleSet], list[Finding]]


def _finding(
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
        message=message,
        fix=fix or rule.fix,
    )


def truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def image_release(image: str) -> str | None:
    """The vLLM-Ascend release an image tag names, or None for other images."""
    ref = parse_image(image)
    return ref.tag if ref else None


def image_node_kind(image: str) -> hardware.NodeKind | None:
    """The node kind a vLLM-Ascend image is built for; None for others and unknown suffixes."""
    ref = parse_image(image)
    return hardware.NODE_KINDS.get(ref.node_kind) if ref and ref.node_kind else None


def soc_node_kind(soc: str) -> hardware.NodeKind | None:
    """Node kind of an SoC name, or of a family prefix such as Ray's ``Ascend910B``."""
    exact = hardware.node_kind_of_soc(soc)
    if exact is not None:
        return exact
    matches = {
        k.name: k
        for k in hardware.NODE_KINDS.values()
        for name in k.soc_names
        if name.startswith(soc)
    }
    return next(iter(matches.values())) if len(matches) == 1 else None


def node_kind(dep: Deployment) -> hardware.NodeKind | None:
    """The node kind the deployment runs on: the one its accelerator type names; else its
    image's, or the smallest kind its layout needs where that is bigger (an image of too
    small a node kind is the image's mistake, which image-node-kind-mismatch names)."""
    if (declared := _declared_kind(dep)) is not None:
        return declared
    kind = image_node_kind(str(dep.image.value)) if dep.image else None
    if kind is not None:
        needed = _smallest_kind(max(npus for npus, _ in _layout_needs(dep)))
        if needed is not None and needed.devices_per_node > kind.devices_per_node:
            return needed
    return kind


def _int(dep: Deployment, key: str, default: int | None = None) -> int | None:
    value = dep.engine[key].value if key in dep.engine else None
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _as_dict(value: Any) -> dict[str, Any]:
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


def check_vllm_flags(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    version = vllm_version()
    judge = f"vLLM {version}'s parser"
    if version and version != rules.vllm_version:
        judge += f"; {rules.release} pairs with vLLM {rules.vllm_version}"
    findings = []
    for dep in parsed.deployments:
        for flag, suggestion in dep.unknown_flags:
            fix = f"did you mean `{suggestion}`? " + rule.fix if suggestion else None
            findings.append(
                _finding(
                    rule, dep, flag.line, f"`{flag.value}` is not a vLLM option ({judge})", fix
                )
            )
    return findings


def check_vllm_values(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        _finding(rule, dep, flag.line, f"`{flag.value}`: {message}")
        for dep in parsed.deployments
        for flag, message in dep.invalid_values
    ]


def check_additional_config_keys(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    known: dict[str, str] = rule.params["known_keys"]
    sub_keys: dict[str, list[str]] = rule.params["known_sub_keys"]
    cutoff: float = rule.params["misspelling_cutoff"]
    findings = []

    def judge(dep: Deployment, path: str, key: str, choices: list[str]) -> None:
        close = difflib.get_close_matches(key, choices, n=1, cutoff=cutoff)
        where = f"`additional_config.{path}`"
        if close:
            findings.append(
                _finding(
                    rule,
                    dep,
                    dep.line_of(f"additional_config.{path}"),
                    f"{where} is not a key {rules.release} reads; it is ignored silently",
                    f"did you mean `{close[0]}`? " + rule.fix,
                    Severity(rule.params["misspelling_severity"]),
                )
            )
        else:
            findings.append(
                _finding(
                    rule,
                    dep,
                    dep.line_of(f"additional_config.{path}"),
                    f"{where} is not among the keys this rule file knows for {rules.release}; "
                    "vLLM-Ascend ignores unknown keys silently",
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
        _finding(rule, dep, dep.env[name].line, f"{name}={dep.env[name].value}: " + rule.what)
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
                    _finding(
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
        return truthy(condition["default"] if value is MISSING else value)

    when = rule.params["when"]
    return [
        _finding(rule, dep, dep.line_of(when["path"]), rule.what)
        for dep in parsed.deployments
        if holds(dep, when) and not any(holds(dep, c) for c in rule.params["requires_any"])
    ]


def check_capture_sizes(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        compilation = _as_dict(dep.value_at("engine.compilation_config"))
        mode = compilation.get("cudagraph_mode")
        mode_name = getattr(mode, "name", str(mode))
        sizes = compilation.get("cudagraph_capture_sizes") or []
        max_num_seqs = _int(dep, "max_num_seqs")
        if mode_name not in rule.params["modes"] or not sizes or max_num_seqs is None:
            continue
        speculative = _as_dict(dep.value_at("engine.speculative_config"))
        draft = int(speculative.get("num_speculative_tokens") or 0)
        reach = max_num_seqs * (1 + draft)
        beyond = sorted(s for s in sizes if s > reach)
        if beyond:
            findings.append(
                _finding(
                    rule,
                    dep,
                    dep.line_of("engine.compilation_config"),
                    f"{len(beyond)} of {len(sizes)} capture sizes "
                    f"({beyond[0]}..{beyond[-1]}) exceed max_num_seqs {max_num_seqs} "
                    f"x (1 + {draft} speculative) = {reach}: " + rule.what,
                )
            )
    return findings


class _Parallel(NamedTuple):
    """NPUs the engine's parallel settings ask for on one node, and where they are set."""

    npus: int
    #: ``--tensor-parallel-size 4 x --data-parallel-size 4 x ... = 16 NPUs``
    said: str
    #: The fields, named as the input writes them.
    fields: tuple[str, ...]
    #: The line of the first field set, else the deployment's.
    line: int


def _parallel(dep: Deployment) -> _Parallel:
    tp = _int(dep, "tensor_parallel_size", 1) or 1
    pp = _int(dep, "pipeline_parallel_size", 1) or 1
    dp_key = "data_parallel_size_local" if _int(dep, "data_parallel_size_local") else None
    dp = _int(dep, dp_key or "data_parallel_size", 1) or 1
    # Flags on a `vllm serve` line, engine keywords elsewhere.
    name = engine_flag if dep.http_server_line is not None else str
    keys = ("tensor_parallel_size", dp_key or "data_parallel_size", "pipeline_parallel_size")
    said = " x ".join(f"{name(k)} {v}" for k, v in zip(keys, (tp, dp, pp), strict=True))
    first = next(
        (
            k
            for k in ("tensor_parallel_size", "data_parallel_size_local", "data_parallel_size")
            if k in dep.engine
        ),
        None,
    )
    return _Parallel(
        npus=tp * dp * pp,
        said=f"{said} = {tp * dp * pp} NPUs",
        fields=tuple(name(k) for k in keys),
        line=dep.engine[first].line if first else dep.line,
    )


def _smallest_kind(npus: int) -> hardware.NodeKind | None:
    """The node kind with the fewest NPUs that still has ``npus``; None if none has."""
    fits = [k for k in hardware.NODE_KINDS.values() if k.devices_per_node >= npus]
    return min(fits, key=lambda k: k.devices_per_node, default=None)


def _declarations(dep: Deployment) -> list[tuple[hardware.NodeKind, str]]:
    """The node kinds the deployment is declared to run on, each with who says so: its
    Ray accelerator type, and ``check --node-kind``."""
    declared = []
    if dep.accelerator_type and (kind := soc_node_kind(str(dep.accelerator_type.value))):
        declared.append(
            (kind, f"`accelerator_type` {dep.accelerator_type.value} is {_a(kind.name)} device")
        )
    if dep.node_kind:
        kind = hardware.NODE_KINDS[dep.node_kind]
        declared.append((kind, f"--node-kind {kind.name} says the node is {_a(kind.name)}"))
    return declared


def _declared_kind(dep: Deployment) -> hardware.NodeKind | None:
    """The node kind the deployment is declared to run on (its accelerator type first)."""
    return next((kind for kind, _ in _declarations(dep)), None)


def _layout_needs(dep: Deployment) -> list[tuple[int, str]]:
    """NPUs the service's layout needs on its node, each with what asks for it: the
    highest davinci device it maps, how many it maps, and its parallel settings."""
    needs = []
    if dep.devices:
        highest = max(d.value for d in dep.devices)
        needs.append((highest + 1, f"`devices` maps /dev/davinci{highest}"))
        needs.append((len(dep.devices), f"`devices` maps {len(dep.devices)} davinci devices"))
    parallel = _parallel(dep)
    needs.append((parallel.npus, parallel.said))
    return needs


def check_parallel_fits_node(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    largest = max(hardware.NODE_KINDS.values(), key=lambda k: k.devices_per_node)
    for dep in parsed.deployments:
        parallel = _parallel(dep)
        lower = f"lower {' / '.join(parallel.fields)}, or spread the ranks over nodes."
        kind = node_kind(dep)
        if kind and parallel.npus > kind.devices_per_node:
            beyond = f"{parallel.said}, but one {kind.name} node has {kind.devices_per_node}"
            if largest is not kind:
                beyond += (
                    f" (the largest node kind, {largest.name}, has {largest.devices_per_node})"
                )
            fix = f"Fit the product in {kind.devices_per_node}: {lower}"
            findings.append(_finding(rule, dep, parallel.line, beyond, fix))
        elif dep.devices and parallel.npus > len(dep.devices):
            mapped = f"{parallel.said}, but the container maps {len(dep.devices)} davinci devices"
            fix = (
                f"Map /dev/davinci0 to /dev/davinci{parallel.npus - 1} under `devices`, or {lower}"
                if _smallest_kind(parallel.npus)
                else f"Fit the product in {len(dep.devices)}: {lower}"
            )
            findings.append(_finding(rule, dep, parallel.line, mapped, fix))
    return findings


def _image_for(image: str, kind: hardware.NodeKind) -> str | None:
    """The same release's image, of the same OS, for another node kind (None if unpublished)."""
    ref = parse_image(image)
    if ref is None or ref.os is None or ref.tag not in RELEASES:
        return None
    try:
        reference = RELEASES[ref.tag].image(kind.name, ref.os)
    except LookupError:
        return None
    # Keep a mirror's registry: only the tag changes.
    return image.rpartition(":")[0] + ":" + reference.rpartition(":")[2]


def check_image_node_kind(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    """The image's node kind against each one the deployment is declared to run on (its
    accelerator type, ``check --node-kind``) or, declared on none, the smallest one its
    layout fits on."""
    findings = []
    for dep in parsed.deployments:
        if not dep.image or not (built_for := image_node_kind(str(dep.image.value))):
            continue
        declared = _declarations(dep)
        # Every declaration the image contradicts; declaring none, the layout's need.
        mismatches = [(kind, why, False) for kind, why in declared if kind.name != built_for.name]
        if not declared:
            npus, asks = max(_layout_needs(dep), key=lambda need: need[0])
            target = _smallest_kind(npus)
            # Within the image's node kind, or beyond every node (parallel-exceeds-node).
            if npus > built_for.devices_per_node and target is not None:
                needs = (
                    f"{asks}, which needs {_a(target.name)} node ({target.devices_per_node} NPUs)"
                )
                mismatches.append((target, needs, True))
        findings += [
            _image_mismatch(rule, dep, built_for, target, why, layout)
            for target, why, layout in mismatches
        ]
    return findings


def _image_mismatch(
    rule: Rule,
    dep: Deployment,
    built_for: hardware.NodeKind,
    target: hardware.NodeKind,
    why: str,
    layout: bool,
) -> Finding:
    """The finding for an image built for ``built_for`` where ``target`` is the node."""
    assert dep.image is not None
    image = str(dep.image.value)
    other = _image_for(image, target)
    fix = f"image: {other}" if other else rule.fix
    if other and layout:
        # The layout, not the node, asks for the bigger kind: shrinking it is a fix too.
        fix += (
            f" on {_a(target.name)} node; or keep {image} and fit the service in "
            f"{built_for.devices_per_node} NPUs"
        )
    return _finding(
        rule,
        dep,
        dep.image.line,
        f"`image` {image} is built for {built_for.name} nodes "
        f"({built_for.devices_per_node} NPUs), but {why}",
        fix,
    )


def _a(name: str) -> str:
    """``name`` with its indefinite article, as it is read aloud (an A3, a 950DT)."""
    return f"{'an' if name[:1] in 'AEFHILMNORSX8' else 'a'} {name}"


def _model_limits(rule: Rule, rules: RuleSet, dep: Deployment) -> dict[str, Any] | None:
    source = rules.rule(rule.params["models_from"]) if "models_from" in rule.params else rule
    for entry in source.params["models"]:
        if dep.model and re.search(entry["pattern"], str(dep.model.value)):
            return dict(entry)
    return None


def _config_json_limit(dep: Deployment, parsed: ParsedFile) -> int | None:
    if not dep.model:
        return None
    weights = Path(str(dep.model.value))
    if not weights.is_absolute():
        weights = Path(parsed.path).parent / weights
    try:
        config = json.loads((weights / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    limit = config.get("max_position_embeddings")
    return int(limit) if isinstance(limit, int) else None


def check_max_model_len(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        length = _int(dep, "max_model_len")
        if length is None:
            continue
        line = dep.engine["max_model_len"].line
        if (limit := _config_json_limit(dep, parsed)) is not None and length > limit:
            findings.append(
                _finding(
                    rule,
                    dep,
                    line,
                    f"max_model_len {length} > max_position_embeddings {limit} "
                    "in the model's config.json",
                )
            )
        elif (entry := _model_limits(rule, rules, dep)) and length > entry["max_context"]:
            findings.append(
                _finding(
                    rule,
                    dep,
                    line,
                    f"max_model_len {length} > the support matrix's maximum context "
                    f"{entry['max_context']} for {dep.model.value if dep.model else 'the model'}",
                )
            )
    return findings


def check_max_model_len_unproven(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        length = _int(dep, "max_model_len")
        kind = node_kind(dep)
        entry = _model_limits(rule, rules, dep)
        if length is None or kind is None or entry is None:
            continue
        shown = entry["tutorial_max_per_node_kind"].get(kind.name)
        if shown is not None and shown < length <= entry["max_context"]:
            findings.append(
                _finding(
                    rule,
                    dep,
                    dep.engine["max_model_len"].line,
                    f"max_model_len {length} on one {kind.name} node, where the official "
                    f"tutorial runs {shown}; vLLM stops after loading the weights if the KV "
                    "cache cannot hold one request of this length, and no traced estimate "
                    "shows that it can",
                    f"--max-model-len {shown} (the tutorial's {kind.name} value), or prove the "
                    "larger one on the hardware first.",
                )
            )
    return findings


def check_jemalloc_path(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    for dep in parsed.deployments:
        preload = dep.env.get("LD_PRELOAD")
        ref = parse_image(str(dep.image.value)) if dep.image else None
        # An image whose suffix no release publishes: its jemalloc path is unknown.
        if not preload or ref is None or ref.os is None:
            continue
        family = ref.os
        expected = RELEASES.get(ref.tag, DEFAULT_RELEASE).jemalloc_paths[family]
        for entry in re.split(r"[\s:]+", str(preload.value)):
            if "libjemalloc" in entry and entry != expected:
                findings.append(
                    _finding(
                        rule,
                        dep,
                        preload.line,
                        f"LD_PRELOAD {entry} on {dep.image.value} ({family} image), "
                        f"whose jemalloc is {expected}",
                        f'LD_PRELOAD: "{expected}"',
                    )
                )
    return findings


def check_privileged(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        _finding(rule, dep, dep.privileged.line, "the container runs privileged: " + rule.what)
        for dep in parsed.deployments
        if dep.privileged and truthy(dep.privileged.value)
    ]


def check_kernel_tuning_in_container(
    rule: Rule, parsed: ParsedFile, rules: RuleSet
) -> list[Finding]:
    return [
        _finding(rule, dep, setting.line, f"the service changes `{setting.value}`: " + rule.what)
        for dep in parsed.deployments
        for setting in dep.kernel_tuning
    ]


_DASHBOARD_ALL = re.compile(r"""dashboard[-_]host["']?\s*[=:\s]\s*["']?0\.0\.0\.0""")


def check_ray_bind_all(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    if parsed.has_warning:
        return []
    return [
        _finding(rule, parsed, number, "the Ray dashboard is bound to 0.0.0.0: " + rule.what)
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
        findings.append(_finding(rule, dep, line, f"{where} and no API key: " + rule.what))
    return findings


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
    return [_finding(rule, parsed, n, f"{why}: " + rule.what) for n, why in sorted(lines.items())]


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
            findings.append(_finding(rule, dep, mount.line, f"{why}: " + rule.what))
    return findings


def check_unread_values(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    return [
        _finding(rule, dep, setting.line, f"{setting.value}: " + rule.what)
        for dep in parsed.deployments
        for setting in dep.unread
    ]


CHECKS: dict[str, Check] = {
    "vllm_flags": check_vllm_flags,
    "vllm_values": check_vllm_values,
    "additional_config_keys": check_additional_config_keys,
    "env_var": check_env_var,
    "no_effect_for_model": check_no_effect_for_model,
    "interlock": check_interlock,
    "capture_sizes": check_capture_sizes,
    "parallel_fits_node": check_parallel_fits_node,
    "image_node_kind": check_image_node_kind,
    "max_model_len": check_max_model_len,
    "max_model_len_unproven": check_max_model_len_unproven,
    "jemalloc_path": check_jemalloc_path,
    "privileged": check_privileged,
    "kernel_tuning_in_container": check_kernel_tuning_in_container,
    "ray_bind_all": check_ray_bind_all,
    "open_endpoint": check_open_endpoint,
    "secrets": check_secrets,
    "writable_host_mount": check_writable_host_mount,
    "unread_values": check_unread_values,
}
