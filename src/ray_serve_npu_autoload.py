"""Activate the npu kind in every Python process of this environment.

``ray_serve_npu_autoload.pth`` imports this module at interpreter start, in the
driver, the Serve controller and every replica. It imports nothing from Ray: it
only watches for Ray Serve LLM's accelerator modules and patches each one as
soon as it has been executed, so ``LLMConfig(accelerator_config={"kind": "npu"})``
works without importing ``ray_serve_npu`` first. Set ``RAY_SERVE_NPU_DISABLE=1``
to turn it off; with an API key set as well, that is an error, since turning the
plugin off would also turn the key off.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType

DISABLE_ENV_VAR = "RAY_SERVE_NPU_DISABLE"
# ray_serve_npu.ingress.API_KEY_ENV_VAR; named here so that the disable switch
# sees it without importing Ray.
API_KEY_ENV_VAR = "RAY_SERVE_NPU_API_KEY"

# Kept in step with ray_serve_npu._patch.TARGET_MODULES (a test checks it);
# importing that module here would import Ray into every Python process.
TARGET_MODULES = frozenset(
    {
        "ray.llm._internal.serve.core.configs.accelerators",
        "ray.llm._internal.serve.core.configs.llm_config",
        "ray.llm._internal.serve.engines.vllm.vllm_models",
        "ray.llm._internal.serve.core.server.llm_server",
        "ray.llm._internal.serve.core.ingress.ingress",
    }
)

#: Target modules whose code is running right now: in sys.modules, not yet complete.
EXECUTING: set[str] = set()


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV_VAR, "") not in ("", "0")


class DisabledWithApiKeyError(RuntimeError):
    """The plugin is switched off while an API key is set."""


def refuse_disabling_the_api_key() -> None:
    """Raise :class:`DisabledWithApiKeyError` if the plugin is off and an API key is set.

    The key is the plugin's: switched off, it would serve an open endpoint.
    """
    if disabled() and API_KEY_ENV_VAR in os.environ:
        raise DisabledWithApiKeyError(
            f"{DISABLE_ENV_VAR} turns ray-serve-npu off, and with it the API key in "
            f"{API_KEY_ENV_VAR}: the OpenAI endpoint would accept requests without the key. "
            f"Fix: unset {DISABLE_ENV_VAR} to serve with the key, or unset "
            f"{API_KEY_ENV_VAR} too to serve without the plugin and without a key."
        )


class _PatchAfterExec(importlib.abc.Loader):
    """Runs the real loader, then patches the module it produced."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> object:
        # get_source, is_package, get_resource_reader...: the real loader's.
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        EXECUTING.add(module.__name__)
        try:
            self._loader.exec_module(module)
        finally:
            EXECUTING.discard(module.__name__)
        plugin = sys.modules.get("ray_serve_npu")
        if plugin is None:
            # Importing the plugin activates it, which patches this module.
            import ray_serve_npu  # noqa: F401
        elif getattr(plugin, "_imported", False):
            plugin._activate_after_import(module.__name__)
        # Otherwise the plugin's own import led here; it patches every loaded
        # module once it has finished importing.


class NPUKindFinder(importlib.abc.MetaPathFinder):
    """Finds the target modules with the other finders and wraps their loaders."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in TARGET_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchAfterExec(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, NPUKindFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, NPUKindFinder())


# With a key set, the hook stays even when disabled: the first Ray Serve LLM
# module imported then imports ray_serve_npu, which refuses the pair.
if not disabled() or API_KEY_ENV_VAR in os.environ:
    install()
