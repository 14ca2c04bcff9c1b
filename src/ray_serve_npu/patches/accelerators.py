"""Patches ``ray.llm._internal.serve.core.configs.accelerators``: the npu kind itself.

Why: Ray Serve LLM knows the gpu, tpu and cpu kinds only.
Upstream: ray-project/ray#63617 (open).
Goes: once every supported Ray has an npu kind of its own; until then it steps aside
on a Ray that has one (:data:`ray_serve_npu.accelerators.RAY_HAS_NPU_KIND`).
"""

from __future__ import annotations

from types import ModuleType

from ray_serve_npu import accelerators as npu
from ray_serve_npu.patches.widening import rebind_module_names


def add_npu_kind(module: ModuleType) -> None:
    module.NPUConfig = npu.NPUConfig  # type: ignore[attr-defined]
    module.NPUAccelerator = npu.NPUAccelerator  # type: ignore[attr-defined]
    rebind_module_names(module)
