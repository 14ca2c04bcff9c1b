"""Serve YAML configs (``applications: ... args: llm_configs: [...]``) and LLMConfig YAML."""

from __future__ import annotations

from typing import Any

from ray_serve_npu.check.llm_config import deployment_from_llm_config
from ray_serve_npu.check.model import Deployment
from ray_serve_npu.check.yamlnodes import Path, flatten_lines


def parse_serve_yaml(path: str, data: dict[str, Any], lines: dict[Path, int]) -> list[Deployment]:
    if "model_loading_config" in data:
        return [deployment_from_llm_config(path, data, flatten_lines(lines, ()), lines[()])]
    deployments = []
    for app_index, app in enumerate(data.get("applications") or []):
        args = app.get("args") or {}
        for cfg_index, config in enumerate(args.get("llm_configs") or []):
            # A string entry names another file; that file is checked on its own.
            if not isinstance(config, dict):
                continue
            prefix: Path = ("applications", app_index, "args", "llm_configs", cfg_index)
            deployments.append(
                deployment_from_llm_config(
                    path, config, flatten_lines(lines, prefix), lines[prefix]
                )
            )
    return deployments
