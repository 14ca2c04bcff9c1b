"""Docker Compose files: one deployment per service."""

from __future__ import annotations

import shlex
from typing import Any

from ray_serve_npu.check.arguments import apply_serve_argv
from ray_serve_npu.check.cmdline import device_index, serve_argv, split_env
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.mounts import compose_volume
from ray_serve_npu.check.yamlnodes import Path


def _tokens(value: Any, path: Path, lines: dict[Path, int]) -> list[Setting]:
    line = lines.get(path, 1)
    if isinstance(value, str):
        return [Setting(value=w, line=line) for w in shlex.split(value)]
    if not isinstance(value, list):
        return []
    tokens = [Setting(value=str(v), line=lines.get((*path, i), line)) for i, v in enumerate(value)]
    words = [str(t.value) for t in tokens]
    # `bash -c "vllm serve ..."`: the script is one item; split it on that item's line.
    if "-c" in words and words.index("-c") + 1 < len(words):
        script = tokens[words.index("-c") + 1]
        return [Setting(value=w, line=script.line) for w in shlex.split(str(script.value))]
    return tokens


def _tunes_the_kernel(word: str) -> bool:
    """``sysctl``, or a write target under ``/proc/sys`` or cpufreq's governor."""
    return word == "sysctl" or word.startswith("/proc/sys/") or "scaling_governor" in word


def parse_compose(path: str, data: dict[str, Any], lines: dict[Path, int]) -> list[Deployment]:
    deployments = []
    for name, service in (data.get("services") or {}).items():
        base: Path = ("services", name)
        deployment = Deployment(file=path, line=lines.get(base, 1))
        if "image" in service:
            deployment.image = Setting(value=str(service["image"]), line=lines[(*base, "image")])
        environment = service.get("environment") or {}
        if isinstance(environment, dict):
            for key, value in environment.items():
                # Compose writes `true` for a YAML boolean and nothing for a null.
                text = "" if value is None else str(value)
                text = text.lower() if isinstance(value, bool) else text
                deployment.env[key] = Setting(value=text, line=lines[(*base, "environment", key)])
        else:
            for index, item in enumerate(environment):
                if pair := split_env(str(item)):
                    line = lines[(*base, "environment", index)]
                    deployment.env[pair[0]] = Setting(value=pair[1], line=line)
        for index, item in enumerate(service.get("devices") or []):
            if (number := device_index(str(item))) is not None:
                line = lines[(*base, "devices", index)]
                deployment.devices.append(Setting(value=number, line=line))
        for index, item in enumerate(service.get("volumes") or []):
            line = lines.get((*base, "volumes", index), deployment.line)
            if mount := compose_volume(item, line):
                deployment.mounts.append(mount)
        if service.get("privileged") is True:
            deployment.privileged = Setting(value=True, line=lines[(*base, "privileged")])
        if "sysctls" in service:
            line = lines[(*base, "sysctls")]
            deployment.kernel_tuning.append(Setting(value="sysctls", line=line))
        tokens = _tokens(service.get("entrypoint"), (*base, "entrypoint"), lines) + _tokens(
            service.get("command"), (*base, "command"), lines
        )
        deployment.kernel_tuning += [t for t in tokens if _tunes_the_kernel(str(t.value))]
        argv = serve_argv(tokens)
        if argv is not None:
            apply_serve_argv(argv, deployment)
        deployments.append(deployment)
    return deployments
