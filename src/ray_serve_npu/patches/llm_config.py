"""Patches ``ray.llm._internal.serve.core.configs.llm_config``: LLMConfig resolves and checks npu.

Why: Ray resolves a config it can't place to the gpu kind, and checks GPU and TPU
accelerator types only.
Upstream: ray-project/ray#63617 (open).
Goes: once every supported Ray has an npu kind of its own; until then it steps aside
on a Ray that has one.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from ray_serve_npu import accelerators as npu
from ray_serve_npu.patches.widening import rebind_module_names, widen_fields


def resolve_and_check_npu(module: ModuleType) -> bool:
    rebind_module_names(module)
    config_cls = module.LLMConfig
    resolve = config_cls._resolve_accelerator_config
    check = config_cls._check_accelerator_type_matches_hardware

    @functools.wraps(resolve)
    def _resolve_accelerator_config(self: Any) -> None:
        inferred = npu.infer_npu_config(
            self.accelerator_config, self.accelerator_type, self.placement_group_config
        )
        if inferred is not None:
            self.accelerator_config = inferred
        resolve(self)

    @functools.wraps(check)
    def _check_accelerator_type_matches_hardware(self: Any) -> None:
        kind = self.accelerator_config.kind
        if npu.involves_npu(kind, self.accelerator_type, self.placement_group_config):
            npu.check_npu_hardware_match(kind, self.accelerator_type, self.placement_group_config)
        else:
            check(self)

    config_cls._resolve_accelerator_config = _resolve_accelerator_config
    config_cls._check_accelerator_type_matches_hardware = _check_accelerator_type_matches_hardware
    return widen_fields(config_cls)
