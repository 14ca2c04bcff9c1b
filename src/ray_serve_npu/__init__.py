"""Huawei Ascend NPU accelerator kind for Ray Serve LLM.

Importing this package (or merely having it installed, through its ``.pth``
hook) lets ``LLMConfig(accelerator_config={"kind": "npu"})`` build, place and
serve on NPUs with released Ray.
"""

from __future__ import annotations

import logging

import ray

import ray_serve_npu_autoload
from ray_serve_npu.compat import check_ray_version, installed_vllm_version

# Fail at import, with the fix, rather than deep inside Serve on an untested Ray.
check_ray_version(ray.__version__, installed_vllm_version())

from ray_serve_npu import _patch, accelerators  # noqa: E402
from ray_serve_npu.accelerators import (  # noqa: E402
    NPU_ACCELERATOR_VALUES,
    HardwareMismatchError,
    NPUAccelerator,
    NPUConfig,
)
from ray_serve_npu.app import build_openai_app  # noqa: E402

__all__ = [
    "NPU_ACCELERATOR_VALUES",
    "HardwareMismatchError",
    "NPUAccelerator",
    "NPUConfig",
    "activate",
    "build_openai_app",
]

logger = logging.getLogger(__name__)


def _enabled() -> bool:
    if ray_serve_npu_autoload.disabled():
        ray_serve_npu_autoload.refuse_disabling_the_api_key()
        logger.warning(
            "ray_serve_npu is disabled by %s: the npu kind is not available.",
            ray_serve_npu_autoload.DISABLE_ENV_VAR,
        )
        return False
    return True


def activate() -> None:
    """Make the npu kind available in this process.

    Patches the Ray Serve LLM modules already imported and hooks the ones
    imported later. Where Ray Serve LLM has an npu kind of its own, patches only
    the OpenAI ingress (API key, stream guard, 404 naming the served models).
    Importing the package calls it; calling it again does nothing.
    """
    if _enabled():
        if accelerators.RAY_HAS_NPU_KIND:
            logger.info(
                "Ray Serve LLM has its own npu kind; ray_serve_npu leaves it in charge and "
                "adds only the OpenAI ingress's API key, stream guard and 404."
            )
        ray_serve_npu_autoload.install()
        _patch.patch_loaded_modules()


def _activate_after_import(module_name: str) -> None:
    """Called by the import hook right after a Ray Serve LLM module has executed."""
    if _enabled():
        _patch.patch_module(module_name)


activate()
_imported = True
