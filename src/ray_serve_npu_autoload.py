"""The import hook: the one place that activates the npu kind, and the ledger of its patches.

``ray_serve_npu_autoload.pth`` imports this module at interpreter start, in the
driver, the Serve controller and every replica. Importing it imports nothing
from Ray or from ``ray_serve_npu``: it only puts :class:`NPUKindFinder` on
``sys.meta_path``, which watches for the Ray Serve LLM modules that
:data:`PATCHES` names. When the first of them has been executed, the hook
activates the plugin (:func:`activate`): it checks the installed Ray against
:data:`ray_serve_npu.compat.SUPPORTED_RAY` and applies the patches to every
watched module already loaded; each watched module loaded later is patched as
soon as it has been executed. So ``LLMConfig(accelerator_config={"kind": "npu"})``
works without importing ``ray_serve_npu`` first, and importing ``ray_serve_npu``
(or any of its data modules) patches nothing.

Set ``RAY_SERVE_NPU_DISABLE=1`` to turn the plugin off: the hook then patches
nothing and checks no Ray version, and only logs, once per process, that the npu
kind is not available. With an API key set as well, that is an error, since
turning the plugin off would also turn the key off.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

DISABLE_ENV_VAR = "RAY_SERVE_NPU_DISABLE"
#: The variable that holds the OpenAI endpoint's API key. Named here, and read
#: by :mod:`ray_serve_npu.ingress` from here, so that the disable switch sees it
#: without importing Ray.
API_KEY_ENV_VAR = "RAY_SERVE_NPU_API_KEY"

#: The upstream change that gives Ray Serve LLM an npu kind of its own.
NPU_KIND_PR = "ray-project/ray#63617"

ACCELERATORS = "ray.llm._internal.serve.core.configs.accelerators"
LLM_CONFIG = "ray.llm._internal.serve.core.configs.llm_config"
VLLM_MODELS = "ray.llm._internal.serve.engines.vllm.vllm_models"
LLM_SERVER = "ray.llm._internal.serve.core.server.llm_server"
INGRESS = "ray.llm._internal.serve.core.ingress.ingress"
INGRESS_BUILDER = "ray.llm._internal.serve.core.ingress.builder"

logger = logging.getLogger("ray_serve_npu")


@dataclass(frozen=True)
class Patch:
    """One change the plugin makes to a Ray Serve LLM module, and when it can go."""

    #: The Ray module it changes.
    module: str
    #: The function of :mod:`ray_serve_npu._patch` that applies it to that module.
    function: str
    what: str
    why: str
    #: The upstream pull request it stands in for, or None where there is none yet.
    upstream: str | None
    #: The first Ray release that carries the upstream change, or None while no
    #: release does. The patch goes once :data:`ray_serve_npu.compat.SUPPORTED_RAY`
    #: starts at that release, that is after the last supported Ray without it.
    fixed_in_ray: str | None = None
    #: Part of the npu kind: steps aside where Ray Serve LLM has an npu kind of its own.
    npu_kind: bool = False


#: Every patch, in the order the modules must be patched (each imports the ones before).
PATCHES: tuple[Patch, ...] = (
    Patch(
        module=ACCELERATORS,
        function="_patch_accelerators",
        what="Adds NPUConfig and NPUAccelerator, and rebinds the module's union of "
        "accelerator configs, its AcceleratorType (plus the Ascend SoC names) and its "
        "bundle inference (NPU bundles infer npu) to the plugin's.",
        why="Ray Serve LLM knows the gpu, tpu and cpu kinds only: "
        'accelerator_config={"kind": "npu"} fails validation.',
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        module=LLM_CONFIG,
        function="_patch_llm_config",
        what="LLMConfig's fields accept NPUConfig and the Ascend SoC names; an unset "
        "accelerator_config resolves to npu from an Ascend accelerator_type or NPU "
        "bundles; configs whose parts name different hardware fail with "
        "HardwareMismatchError.",
        why="Ray resolves a config it can't place to the gpu kind and checks GPU and "
        "TPU types only.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        module=VLLM_MODELS,
        function="_patch_vllm_models",
        what="VLLMEngineConfig's accelerator is NPUAccelerator for an npu config.",
        why="Ray's _build_accelerator falls back to the GPU backend for a kind it does not know.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        module=LLM_SERVER,
        function="_patch_llm_server",
        what="Drops the GPU key from the replica bundles of an npu deployment, and "
        "refuses num_gpus with the npu kind.",
        why='LLMServer.get_deployment_options merges "GPU": 0 into the first bundle of '
        f"every deployment; the review of {NPU_KIND_PR} flags the same merge for its npu "
        "kind.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        module=LLM_SERVER,
        function="_patch_llm_server_for_fake_tier",
        what="On the fake-NPU tier only (RAY_SERVE_NPU_DRY_RUN_MODEL set, as "
        "ray-serve-npu dry-run and the docs tests set it): each LLMConfig becomes its "
        "fake-tier variant, in place, before Ray computes its deployment options; "
        "every change is logged (ray_serve_npu.fake_npu.adapter).",
        why="Every way of building an app passes its configs through "
        "LLMServer.get_deployment_options (Ray's builders, the plugin's, an LLMServer "
        "deployment of its own), and binds that same object to the deployment; "
        "adapted anywhere else, a recipe built another way would load its real model "
        "with its real parallelism on CPUs.",
        upstream=None,
    ),
    Patch(
        module=INGRESS,
        function="_patch_ingress_404",
        what="The 404 for an unknown model also names the served models and the fix.",
        why="Ray's 404 (OpenAiIngress._get_model_id) names only the model asked for, and "
        "a client model that differs from the served model_id is the commonest mistake.",
        upstream=None,
    ),
    Patch(
        module=INGRESS,
        function="_patch_ingress_api_key",
        what=f"With {API_KEY_ENV_VAR} set where the app is built, every request must "
        "carry Authorization: Bearer <key> (ray_serve_npu.ingress).",
        why="Ray Serve LLM's OpenAI ingress has no API key; ray-project/ray#59578 and "
        "#55369 ask for one, with no pull request.",
        upstream=None,
    ),
    Patch(
        module=INGRESS,
        function="_patch_ingress_failures_before_streaming",
        what="A request that fails before its answer begins gets a stable 503 (replica "
        "lost) or 500 (engine failed) with its request id (ray_serve_npu.streams).",
        why="Ray's ingress answers 500 with the exception's text, which names nodes, "
        "processes and actors.",
        upstream=None,
    ),
    Patch(
        module=INGRESS,
        function="_patch_ingress_stream_errors",
        what="A stream whose replica or engine fails ends in an error event "
        "(ray_serve_npu.streams).",
        why="Ray's ingress ends such a stream with neither data: [DONE] nor a "
        "finish_reason, which OpenAI clients take for a complete answer.",
        upstream=None,
    ),
    Patch(
        module=INGRESS_BUILDER,
        function="_patch_direct_streaming_api_key",
        what=f"With {API_KEY_ENV_VAR} set where the app is built and "
        "RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1, the engine's replica requires the key "
        "on the vLLM app it serves in place of the OpenAI ingress (ray_serve_npu.ingress).",
        why="Direct streaming removes the ingress that carries the key, so the endpoint "
        "would answer without it.",
        upstream=None,
    ),
)

#: The modules the import hook watches, in the order they are patched.
TARGET_MODULES: tuple[str, ...] = tuple(dict.fromkeys(patch.module for patch in PATCHES))

#: Target modules whose code is running right now: in sys.modules, not yet complete.
EXECUTING: set[str] = set()

#: Set on a Ray module once every patch it needs has been applied.
_PATCHED = "__ray_serve_npu_patched__"
#: The plugin's modules that activation imports and that import Ray Serve LLM.
_PLUGIN_MODULES = ("ray_serve_npu._patch", "ray_serve_npu.accelerators")

_activated = False
_warned_disabled = False


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


def _patches_for_this_ray() -> tuple[Patch, ...]:
    """The patches this Ray needs.

    The ingress's and the direct-streaming builder's hold for every kind, so they
    apply even where Ray Serve LLM has an npu kind of its own and the npu kind's
    patches step aside: a key set must never go unenforced.
    """
    from ray_serve_npu import accelerators

    if accelerators.RAY_HAS_NPU_KIND:
        return tuple(patch for patch in PATCHES if not patch.npu_kind)
    return PATCHES


def _patch_module(name: str, patches: tuple[Patch, ...]) -> bool:
    """Apply ``patches`` to the already-imported module ``name`` (once).

    Returns whether pydantic models had to be rebuilt (the module was loaded
    before the plugin activated).
    """
    from ray_serve_npu import _patch

    module = sys.modules[name]
    own = [patch for patch in patches if patch.module == name]
    if not own or getattr(module, _PATCHED, False):
        return False
    rebuilt = False
    for patch in own:
        rebuilt |= bool(getattr(_patch, patch.function)(module))
    setattr(module, _PATCHED, True)
    logger.debug("ray_serve_npu: patched %s", name)
    return rebuilt


def _patch_loaded_modules() -> None:
    """Patch every target module already imported, in dependency order.

    A module whose code is still running is left to the import hook, which
    patches it once it completes.
    """
    from ray_serve_npu import _patch

    patches = _patches_for_this_ray()
    rebuilt = False
    for name in TARGET_MODULES:
        if name in sys.modules and name not in EXECUTING:
            rebuilt |= _patch_module(name, patches)
    if rebuilt:
        _patch.rebuild_models_that_embed_configs()


def activate() -> None:
    """Make the npu kind available in this process.

    The import hook calls it when the first Ray Serve LLM module it watches has
    been executed, so an installed plugin needs no call. Call it where the
    ``.pth`` hook does not run (the package on ``PYTHONPATH`` rather than
    installed) after Ray Serve LLM was imported. On first activation it raises
    :class:`~ray_serve_npu.compat.UnsupportedRayError` on a Ray outside the
    supported range. It then patches the Ray Serve LLM modules already imported
    and hooks the ones imported later. Where Ray Serve LLM has an npu kind of its
    own, it patches only the OpenAI ingress (API key, failure answers and stream
    error events, 404 naming the served models) and the API key of direct
    streaming. Calling it again does nothing.
    """
    global _activated, _warned_disabled
    if disabled():
        refuse_disabling_the_api_key()
        if not _warned_disabled:
            logger.warning(
                "ray_serve_npu is disabled by %s: the npu kind is not available.",
                DISABLE_ENV_VAR,
            )
            _warned_disabled = True
        return
    if not _activated:
        import ray

        from ray_serve_npu.compat import check_ray_version, installed_vllm_version

        # Fail with the fix, rather than deep inside Serve on an untested Ray.
        check_ray_version(ray.__version__, installed_vllm_version())
    from ray_serve_npu import accelerators

    if not _activated and accelerators.RAY_HAS_NPU_KIND:
        logger.info(
            "Ray Serve LLM has its own npu kind; ray_serve_npu leaves it in charge and "
            "adds only the OpenAI ingress's API key, failure answers and 404, and the "
            "API key of direct streaming."
        )
    install()
    _patch_loaded_modules()
    _activated = True


def _partly_imported(name: str) -> bool:
    """Whether ``name`` is in ``sys.modules`` but its code is still running."""
    spec = getattr(sys.modules.get(name), "__spec__", None)
    # importlib sets it while the module executes; CPython's own import lock reads it.
    return bool(getattr(spec, "_initializing", False))


def _after_import(name: str) -> None:
    """Called right after the target module ``name`` has executed."""
    if any(_partly_imported(module) for module in _PLUGIN_MODULES):
        # A module of the plugin imported Ray Serve LLM while it loads (before
        # the plugin activated): activation needs that module complete. The
        # activation under way, or the next watched module or activate() call,
        # patches this one.
        return
    if not _activated or disabled():
        activate()
    else:
        _patch_module(name, _patches_for_this_ray())


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
        _after_import(module.__name__)


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


# The hook's one job, for the .pth line that imports it. Disabled, it stays: the
# first Ray Serve LLM module imported then says the plugin is off, or, with a key
# set, refuses the pair.
install()
