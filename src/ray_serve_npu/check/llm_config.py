"""Ray Serve LLM ``LLMConfig`` (as a dict) to a deployment, shared by Serve YAML and recipes."""

from __future__ import annotations

from typing import Any

from ray_serve_npu.check.arguments import apply_engine_kwargs
from ray_serve_npu.check.model import Deployment, Setting

# The LLMConfig fields the checker reads.
FIELDS = frozenset(
    {
        "model_loading_config",
        "engine_kwargs",
        "runtime_env",
        "accelerator_type",
        "placement_group_config",
    }
)
#: Placement strategies under which Ray may put a placement group's bundles on several
#: nodes (STRICT_PACK keeps them on one; ray.util.placement_group.placement_group).
SPANNING_STRATEGIES = frozenset({"PACK", "SPREAD"})


def _below(lines: dict[str, int], prefix: str) -> dict[str, int]:
    return {k[len(prefix) :]: v for k, v in lines.items() if k.startswith(prefix)}


def deployment_from_llm_config(
    path: str, config: dict[str, Any], lines: dict[str, int], anchor: int
) -> Deployment:
    """``lines`` maps dotted key paths inside the LLMConfig (``engine_kwargs.x``) to lines."""
    deployment = Deployment(file=path, line=anchor)

    def at(key: str) -> int:
        return lines.get(key, anchor)

    loading = config.get("model_loading_config") or {}
    for key in ("model_source", "model_id"):
        if isinstance(loading.get(key), str):
            deployment.model = Setting(value=loading[key], line=at(f"model_loading_config.{key}"))
            break
    if config.get("accelerator_type"):
        deployment.accelerator_type = Setting(
            value=str(config["accelerator_type"]), line=at("accelerator_type")
        )
    strategy = (config.get("placement_group_config") or {}).get("strategy")
    if strategy in SPANNING_STRATEGIES:
        deployment.spans_nodes = Setting(value=strategy, line=at("placement_group_config.strategy"))
    runtime_env = config.get("runtime_env") or {}
    for key, value in (runtime_env.get("env_vars") or {}).items():
        deployment.env[key] = Setting(value=str(value), line=at(f"runtime_env.env_vars.{key}"))
    if runtime_env.get("image_uri"):
        deployment.image = Setting(value=runtime_env["image_uri"], line=at("runtime_env.image_uri"))
    engine_lines = {k: v for k, v in _below(lines, "engine_kwargs.").items() if "." not in k}
    apply_engine_kwargs(config.get("engine_kwargs") or {}, engine_lines, deployment)
    deployment.additional_config_lines = _below(lines, "engine_kwargs.additional_config.")
    return deployment
