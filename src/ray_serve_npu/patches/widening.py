"""The npu-aware types the patched Ray modules bind, and the pydantic rebuilds they need.

Shared by the patches of the accelerators, the LLM config and the vLLM engine config
(:mod:`.accelerators`, :mod:`.llm_config`, :mod:`.vllm_models`); it patches nothing.
"""

from __future__ import annotations

from types import ModuleType
from typing import Annotated, Any, Optional, Union, get_args

from pydantic import BaseModel, Field

from ray_serve_npu import accelerators as npu


def _widened_accelerator_union(ray_union: Any) -> Any:
    """Ray's discriminated union of accelerator configs, plus :class:`NPUConfig`."""
    members = get_args(get_args(ray_union)[0])
    if npu.NPUConfig in members:
        return ray_union
    return Annotated[Union[(*members, npu.NPUConfig)], Field(discriminator="kind")]  # noqa: UP007


AnyAcceleratorConfig = _widened_accelerator_union(npu.ray_accelerators.AnyAcceleratorConfig)

#: Module-level names that the Ray modules bind at import, and their npu-aware values.
_MODULE_NAMES: dict[str, Any] = {
    "AnyAcceleratorConfig": AnyAcceleratorConfig,
    "AcceleratorType": npu.AcceleratorType,
    "infer_hardware_kind_from_bundles": npu.infer_hardware_kind_from_bundles,
}

#: The pydantic fields that hold those types, and the annotation each must have.
_FIELD_ANNOTATIONS: dict[str, Any] = {
    "accelerator_config": Optional[AnyAcceleratorConfig],  # noqa: UP045
    "accelerator_type": Optional[npu.AcceleratorType],  # noqa: UP045
}


def rebind_module_names(module: ModuleType) -> None:
    """Point the names ``module`` bound at import at their npu-aware values."""
    for name, value in _MODULE_NAMES.items():
        if name in vars(module):
            setattr(module, name, value)


def _all_subclasses(cls: type) -> list[type]:
    found: list[type] = []
    for sub in cls.__subclasses__():
        found += [sub, *_all_subclasses(sub)]
    return found


def widen_fields(model: type[BaseModel]) -> bool:
    """Give ``model`` and its subclasses the npu-aware field types; return whether any changed."""
    changed = False
    for cls in [model, *_all_subclasses(model)]:
        cls_changed = False
        for name, annotation in _FIELD_ANNOTATIONS.items():
            field = cls.model_fields.get(name)
            if field is None or field.annotation == annotation:
                continue
            # LLMConfig keeps accelerator_type a plain string; only enum fields widen.
            if name == "accelerator_type" and "AcceleratorType" not in repr(field.annotation):
                continue
            field.annotation = annotation
            cls_changed = True
        if cls_changed:
            cls.model_rebuild(force=True)
            changed = True
    return changed


def rebuild_models_that_embed_configs() -> None:
    """Rebuild loaded Serve LLM models that embed an LLMConfig (LLMServingArgs, ...).

    pydantic copies a nested model's schema into the outer model when the outer
    one is built, so models built before the fields widened keep the old union.
    """
    for cls in _all_subclasses(BaseModel):
        if cls.__module__.startswith(("ray.llm.", "ray.serve.llm")):
            cls.model_rebuild(force=True, raise_errors=False)
