"""Checks of what a deployment needs of its node: the image's node kind and release,
the parallel layout against the node's NPUs, the context length, the jemalloc path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from ray_serve_npu import hardware
from ray_serve_npu.check.checks.common import engine_int, finding, setting_name
from ray_serve_npu.check.findings import Finding
from ray_serve_npu.check.model import Deployment, ParsedFile
from ray_serve_npu.check.rules import Rule, RuleSet
from ray_serve_npu.releases import RELEASES, parse_image


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
    """The node kind the deployment runs on: the one ``check --node-kind`` names, else its
    accelerator type's; else its image's, or the smallest kind its layout needs where that
    is bigger (an image of too small a node kind is the image's mistake, which
    image-node-kind-mismatch names). A disagreement is node-kind-conflict's."""
    if (declared := _declared_kind(dep)) is not None:
        return declared
    kind = image_node_kind(str(dep.image.value)) if dep.image else None
    if kind is not None:
        needed = _smallest_kind(max(npus for npus, _ in _layout_needs(dep)))
        if needed is not None and needed.devices_per_node > kind.devices_per_node:
            return needed
    return kind


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
    tp = engine_int(dep, "tensor_parallel_size", 1) or 1
    pp = engine_int(dep, "pipeline_parallel_size", 1) or 1
    dp_key = "data_parallel_size_local" if engine_int(dep, "data_parallel_size_local") else None
    dp = engine_int(dep, dp_key or "data_parallel_size", 1) or 1
    keys = ("tensor_parallel_size", dp_key or "data_parallel_size", "pipeline_parallel_size")
    said = " x ".join(
        f"{setting_name(dep, k)} {v}" for k, v in zip(keys, (tp, dp, pp), strict=True)
    )
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
        fields=tuple(setting_name(dep, k) for k in keys),
        line=dep.engine[first].line if first else dep.line,
    )


def _smallest_kind(npus: int) -> hardware.NodeKind | None:
    """The node kind with the fewest NPUs that still has ``npus``; None if none has."""
    fits = [k for k in hardware.NODE_KINDS.values() if k.devices_per_node >= npus]
    return min(fits, key=lambda k: k.devices_per_node, default=None)


def _declarations(dep: Deployment) -> list[tuple[hardware.NodeKind, str]]:
    """The node kinds the deployment is declared to run on, each with who says so: its
    Ray accelerator type, then ``check --node-kind``, which names the node itself."""
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
    """The node kind the deployment is declared to run on: the last declaration, so that
    ``--node-kind`` wins over the accelerator type."""
    declared = _declarations(dep)
    return declared[-1][0] if declared else None


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


def check_node_kind_conflict(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    """``accelerator_type`` against ``check --node-kind``, where both are given."""
    findings = []
    for dep in parsed.deployments:
        declared = _declarations(dep)
        if len({kind.name for kind, _ in declared}) > 1 and dep.accelerator_type is not None:
            message = (
                f"{' and '.join(why for _, why in declared)}: the deployment would "
                "never run on the node it is checked for"
            )
            findings.append(finding(rule, dep, dep.accelerator_type.line, message))
    return findings


def check_parallel_fits_node(rule: Rule, parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings = []
    largest = max(hardware.NODE_KINDS.values(), key=lambda k: k.devices_per_node)
    for dep in parsed.deployments:
        if dep.spans_nodes is not None:
            # Ray may place the engine's bundles on several nodes; the plugin's
            # build-time placement check judges them against the cluster.
            continue
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
            findings.append(finding(rule, dep, parallel.line, beyond, fix))
        elif dep.devices and parallel.npus > len(dep.devices):
            mapped = f"{parallel.said}, but the container maps {len(dep.devices)} davinci devices"
            fix = (
                f"Map /dev/davinci0 to /dev/davinci{parallel.npus - 1} under `devices`, or {lower}"
                if _smallest_kind(parallel.npus)
                else f"Fit the product in {len(dep.devices)}: {lower}"
            )
            findings.append(finding(rule, dep, parallel.line, mapped, fix))
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
        # Every node kind declared that the image contradicts, with all who declare it;
        # declaring none, the layout's need.
        contradicted: dict[str, list[str]] = {}
        for kind, why in declared:
            if kind.name != built_for.name:
                contradicted.setdefault(kind.name, []).append(why)
        mismatches = [
            (hardware.NODE_KINDS[name], " and ".join(whys), False)
            for name, whys in contradicted.items()
        ]
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
    if other and dep.image_build_arg:
        fix = f"docker build --build-arg {dep.image_build_arg}={other}"
    else:
        fix = f"image: {other}" if other else rule.fix
    if other and layout:
        # The layout, not the node, asks for the bigger kind: shrinking it is a fix too.
        fix += (
            f" on {_a(target.name)} node; or keep {image} and fit the service in "
            f"{built_for.devices_per_node} NPUs"
        )
    return finding(
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
        length = engine_int(dep, "max_model_len")
        if length is None:
            continue
        line = dep.engine["max_model_len"].line
        if (limit := _config_json_limit(dep, parsed)) is not None and length > limit:
            findings.append(
                finding(
                    rule,
                    dep,
                    line,
                    f"max_model_len {length} > max_position_embeddings {limit} "
                    "in the model's config.json",
                )
            )
        elif (entry := _model_limits(rule, rules, dep)) and length > entry["max_context"]:
            findings.append(
                finding(
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
        length = engine_int(dep, "max_model_len")
        kind = node_kind(dep)
        entry = _model_limits(rule, rules, dep)
        if length is None or kind is None or entry is None:
            continue
        shown = entry["tutorial_max_per_node_kind"].get(kind.name)
        if shown is not None and shown < length <= entry["max_context"]:
            findings.append(
                finding(
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
        # An image of a release without data: the paths of the release judging the file.
        expected = RELEASES.get(ref.tag, RELEASES[rules.release]).jemalloc_paths[family]
        for entry in re.split(r"[\s:]+", str(preload.value)):
            if "libjemalloc" in entry and entry != expected:
                findings.append(
                    finding(
                        rule,
                        dep,
                        preload.line,
                        f"LD_PRELOAD {entry} on {dep.image.value} ({family} image), "
                        f"whose jemalloc is {expected}",
                        f'LD_PRELOAD: "{expected}"',
                    )
                )
    return findings
