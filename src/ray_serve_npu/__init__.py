"""Huawei Ascend NPU accelerator kind for Ray Serve LLM.

Having this package installed lets ``LLMConfig(accelerator_config={"kind": "npu"})``
build, place and serve on NPUs with released Ray: its ``.pth`` hook
(``ray_serve_npu_autoload``) activates the npu kind in every Python process
when Ray Serve LLM's modules load. Importing the package, or any of its data
modules (:mod:`ray_serve_npu.compat`, :mod:`ray_serve_npu.hardware`,
``ray_serve_npu.check``), imports no Ray and patches nothing; the names below
that need Ray import it when first used. :func:`activate` activates explicitly,
where the hook does not run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray_serve_npu.accelerators import (
        NPU_ACCELERATOR_VALUES,
        HardwareMismatchError,
        NPUAccelerator,
        NPUConfig,
    )
    from ray_serve_npu.activation import activate
    from ray_serve_npu.app import build_dp_openai_app, build_openai_app

__all__ = [
    "NPU_ACCELERATOR_VALUES",
    "HardwareMismatchError",
    "NPUAccelerator",
    "NPUConfig",
    "activate",
    "build_dp_openai_app",
    "build_openai_app",
]

#: Each public name -> the module that defines it, imported when the name is first used.
_PUBLIC: dict[str, str] = {
    "NPU_ACCELERATOR_VALUES": "ray_serve_npu.accelerators",
    "HardwareMismatchError": "ray_serve_npu.accelerators",
    "NPUAccelerator": "ray_serve_npu.accelerators",
    "NPUConfig": "ray_serve_npu.accelerators",
    "activate": "ray_serve_npu.activation",
    "build_dp_openai_app": "ray_serve_npu.app",
    "build_openai_app": "ray_serve_npu.app",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
