"""Patches ``ray.llm._internal.serve.engines.vllm.vllm_models``: the NPU engine backend.

Why: Ray's ``_build_accelerator`` validator falls back to the GPU backend for any
kind it does not know.
Upstream: ray-project/ray#63617 (open).
Goes: once every supported Ray has an npu kind of its own; until then it steps aside
on a Ray that has one.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ray_serve_npu import accelerators as npu
from ray_serve_npu.patches.widening import rebind_module_names, widen_fields


def npu_accelerator_backend(module: ModuleType) -> bool:
    rebind_module_names(module)
    engine_cls = module.VLLMEngineConfig

    def accelerator(self: Any) -> Any:
        if isinstance(self.accelerator_config, npu.NPUConfig) and not isinstance(
            self._accelerator, npu.NPUAccelerator
        ):
            self._accelerator = npu.NPUAccelerator()
        return self._accelerator

    engine_cls.accelerator = property(accelerator, doc=engine_cls.accelerator.__doc__)
    return widen_fields(engine_cls)
