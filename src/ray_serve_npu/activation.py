"""Activating the npu kind in a process: the switch, the key policy, the version guard, the patches.

The import hook (``ray_serve_npu_autoload``) calls ``target_executed`` each time a
Ray Serve LLM module that the ledger (:mod:`ray_serve_npu.patches`) patches has
executed. The first call checks the installed Ray against
:data:`ray_serve_npu.compat.SUPPORTED_RAY`; every call applies the ledger's patches
that the loaded modules still lack. So ``LLMConfig(accelerator_config={"kind": "npu"})``
works without importing ``ray_serve_npu`` first, and importing ``ray_serve_npu`` (or
any of its data modules) patches nothing.

Set ``RAY_SERVE_NPU_DISABLE=1`` to turn the plugin off: it then patches nothing and
checks no Ray version, and only logs, once per process, that the npu kind is not
available. With an API key set as well, that is an error, since turning the plugin off
would also turn the key off.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from ray_serve_npu.envs import API_KEY_ENV_VAR, DISABLE_ENV_VAR, DRY_RUN_MODEL_ENV_VAR
from ray_serve_npu.patches import (
    PATCH_MODULES,
    PATCHES,
    SERVE_WIDE_TARGETS,
    TARGET_MODULES,
    Patch,
)

logger = logging.getLogger("ray_serve_npu")

#: Set on a patched Ray module: the ledger's patchers applied to it.
APPLIED = "__ray_serve_npu_patches__"
#: The plugin's modules that activation imports: a target that executes while one of
#: them is still loading (it imported Ray Serve LLM) waits for it to complete.
_PLUGIN_MODULES = ("ray_serve_npu.accelerators", "ray_serve_npu.patches.widening", *PATCH_MODULES)

_checked_ray = False
_warned_disabled = False


class DisabledWithApiKeyError(RuntimeError):
    """The plugin is switched off while an API key is set."""


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV_VAR, "") not in ("", "0")


def _stay_off() -> None:
    """Raise :class:`DisabledWithApiKeyError` if a key is set, else say once the plugin is off.

    The key is the plugin's: switched off, it would serve an open endpoint.
    """
    global _warned_disabled
    if API_KEY_ENV_VAR in os.environ:
        raise DisabledWithApiKeyError(
            f"{DISABLE_ENV_VAR} turns ray-serve-npu off, and with it the API key in "
            f"{API_KEY_ENV_VAR}: the OpenAI endpoint would accept requests without the key. "
            f"Fix: unset {DISABLE_ENV_VAR} to serve with the key, or unset "
            f"{API_KEY_ENV_VAR} too to serve without the plugin and without a key."
        )
    if not _warned_disabled:
        logger.warning(
            "ray_serve_npu is disabled by %s: the npu kind is not available.", DISABLE_ENV_VAR
        )
        _warned_disabled = True


def _check_ray_once() -> None:
    """Fail with the fix on an untested Ray, rather than deep inside Serve (first call only)."""
    global _checked_ray
    if _checked_ray:
        return
    import ray

    from ray_serve_npu import accelerators
    from ray_serve_npu.compat import check_ray_version, installed_vllm_version

    check_ray_version(ray.__version__, installed_vllm_version())
    if accelerators.RAY_HAS_NPU_KIND:
        logger.info(
            "Ray Serve LLM has its own npu kind; ray_serve_npu leaves it in charge and "
            "adds only the OpenAI ingress's API key, failure answers and 404, the API key "
            "of direct streaming, HAProxy's statistics and metrics on loopback, and on the "
            "fake-NPU tier its adapter."
        )
    _checked_ray = True


def patches_for_this_process(targets: tuple[str, ...] = TARGET_MODULES) -> tuple[Patch, ...]:
    """The ledger's patches of ``targets`` that this process needs.

    The npu kind's step aside where Ray Serve LLM has an npu kind of its own; the
    ingress's and the direct-streaming builder's hold for every kind, so a key set
    never goes unenforced. The fake tier's apply only where the fake tier is on.
    Ray Serve LLM is imported only to ask whether it has an npu kind, and only where
    a target of the npu kind is asked for: a Serve controller loads none.
    """
    fake_tier = bool(os.environ.get(DRY_RUN_MODEL_ENV_VAR))
    wanted = [
        patch for patch in PATCHES if patch.target in targets and (fake_tier or not patch.fake_tier)
    ]
    if any(patch.npu_kind for patch in wanted):
        from ray_serve_npu import accelerators

        if accelerators.RAY_HAS_NPU_KIND:
            wanted = [patch for patch in wanted if not patch.npu_kind]
    return tuple(wanted)


def _partly_imported(name: str) -> bool:
    """Whether ``name`` is in ``sys.modules`` but its code is still running."""
    spec = getattr(sys.modules.get(name), "__spec__", None)
    # importlib sets it while the module executes; CPython's own import lock reads it.
    return bool(getattr(spec, "_initializing", False))


def _patch_module(name: str, patches: tuple[Patch, ...]) -> bool:
    """Apply to the loaded module ``name`` the ``patches`` it lacks, in ledger order.

    Returns whether pydantic models had to be rebuilt (the module was loaded
    before the plugin activated).
    """
    module = sys.modules[name]
    applied: frozenset[str] = getattr(module, APPLIED, frozenset())
    rebuilt = False
    for patch in patches:
        if patch.target != name or patch.patcher in applied:
            continue
        patcher = getattr(importlib.import_module(patch.module), patch.function)
        rebuilt |= bool(patcher(module))
        applied |= {patch.patcher}
        setattr(module, APPLIED, applied)
        logger.debug("ray_serve_npu: %s applied to %s", patch.patcher, name)
    return rebuilt


def _loaded_targets(executed: str | None = None) -> tuple[str, ...]:
    """The target modules loaded, in ledger order.

    ``executed`` has just run its code (the hook's call); any other module whose code
    is still running is left to the hook, which calls again once it completes.
    """
    return tuple(
        name
        for name in TARGET_MODULES
        if name in sys.modules and (name == executed or not _partly_imported(name))
    )


def _patch_loaded_modules(loaded: tuple[str, ...]) -> None:
    """Patch the target modules ``loaded``, in ledger order."""
    patches = patches_for_this_process(loaded)
    rebuilt = False
    for name in loaded:
        rebuilt |= _patch_module(name, patches)
    if rebuilt:
        from ray_serve_npu.patches.widening import rebuild_models_that_embed_configs

        rebuild_models_that_embed_configs()


def target_executed(name: str) -> None:
    """The import hook's call: the target module ``name`` has just executed."""
    if any(_partly_imported(module) for module in _PLUGIN_MODULES):
        # A module of the plugin imported Ray Serve LLM while it loads: patching needs
        # that module complete. The next target or activate() call patches this one.
        return
    if disabled():
        _stay_off()
        return
    loaded = _loaded_targets(executed=name)
    # Serve's own targets check their lines themselves; a Ray Serve LLM target waiting
    # to be patched with them still needs the version check.
    if not set(loaded) <= SERVE_WIDE_TARGETS:
        _check_ray_once()
    _patch_loaded_modules(loaded)


def activate() -> None:
    """Make the npu kind available in this process.

    An installed plugin needs no call: its import hook activates it when Ray Serve
    LLM loads. Call it where the ``.pth`` hook does not run (the package on
    ``PYTHONPATH`` rather than installed). It raises
    :class:`~ray_serve_npu.compat.UnsupportedRayError` on a Ray outside the supported
    range, then imports the Ray modules the ledger patches (the vLLM
    engine's only where vLLM is installed) and applies the patches this process needs.
    Where Ray Serve LLM has an npu kind of its own, it patches only the OpenAI ingress
    (API key, failure answers and stream error events, 404 naming the served models),
    the API key of direct streaming and of its request router, Serve's HAProxy template
    (statistics and metrics on loopback), HAProxy's Lua for the request router (the
    client's key passed on) and, on the fake-NPU tier, the tier's adapter.
    Calling it again applies only what is missing, such as the fake tier's patch once
    the fake tier is on.
    """
    if disabled():
        _stay_off()
        return
    _check_ray_once()
    for name in TARGET_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:
            # Ray Serve LLM's vLLM engine config imports vLLM, which a process that
            # builds apps need not have, and Serve's HAProxy manager imports jinja2 at
            # Ray 2.56.1 to 2.58.1 (haproxy.py, line 18 or 19), which at 2.56.1 only
            # HAProxy's nodes need (Serve itself imports the manager from 2.57.1);
            # the hook patches either if it loads later.
            missing = (error.name or "").partition(".")[0]
            if not (missing.startswith("vllm") or missing == "jinja2"):
                raise
    _patch_loaded_modules(_loaded_targets())
