"""The import hook that activates the npu kind: a finder, and nothing else.

``ray_serve_npu_autoload.pth`` imports this module at interpreter start, in the
driver, the Serve controller and every replica. It imports only the standard
library: it puts :class:`NPUKindFinder` on ``sys.meta_path``, which wraps the
loaders of the Ray modules in :data:`TARGETS` (Ray Serve LLM's, and Serve's
HAProxy template). Right after one of them
has executed, the finder hands its name to ``ray_serve_npu.activation``, which
checks the Ray version and applies the patches its ledger lists
(``ray_serve_npu.patches``). ``RAY_SERVE_NPU_DISABLE=1`` is read there: disabled,
the finder stays, so that the first target imported says the plugin is off, or,
with an API key set, refuses the pair.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

#: The Ray modules the plugin patches, in the order it patches them. Written
#: out, so that the hook imports nothing of the plugin at start; a test holds it to
#: the ledger (``ray_serve_npu.patches.TARGET_MODULES``).
TARGETS: tuple[str, ...] = (
    "ray.llm._internal.serve.core.configs.accelerators",
    "ray.llm._internal.serve.core.configs.llm_config",
    "ray.llm._internal.serve.engines.vllm.vllm_models",
    "ray.llm._internal.serve.core.server.llm_server",
    "ray.llm._internal.serve.core.ingress.ingress",
    "ray.llm._internal.serve.core.ingress.builder",
    "ray.serve._private.haproxy_templates",
    "ray.serve._private.haproxy",
)


class _PatchAfterExec(importlib.abc.Loader):
    """Runs the real loader, then has the plugin patch the module it produced."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> object:
        # get_source, is_package, get_resource_reader...: the real loader's.
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        # Imported only now: activation imports Ray, which a process that never loads
        # Ray Serve LLM must not pay for.
        from ray_serve_npu.activation import target_executed

        target_executed(module.__name__)


class NPUKindFinder(importlib.abc.MetaPathFinder):
    """Finds the target modules with the other finders and wraps their loaders."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in TARGETS:
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


install()
