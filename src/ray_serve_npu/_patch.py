"""How the plugin changes Ray Serve LLM: one function per patch the import hook lists.

Each ``_patch_*`` function applies one entry of :data:`ray_serve_npu_autoload.PATCHES`
to one Ray module, right after it is imported (through the import hook) or later
(when the plugin activates after Ray Serve LLM was imported). The hook owns the
list of patches, their order, what each is for and when it goes; this module only
implements them. Nothing here changes the behaviour of the gpu, tpu and cpu
kinds, except in the OpenAI ingress and in the direct-streaming builder, for every
kind: the 404 for an unknown model also names the served models, an API key can be
required, on the ingress or with direct streaming on the engine's replica, and a
request or stream whose replica fails ends in a stable error
(:mod:`ray_serve_npu.ingress`, :mod:`ray_serve_npu.streams`). On a Ray Serve LLM
with an npu kind of its own, only those are patched.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Annotated, Any, Optional, Union, get_args

from pydantic import BaseModel, Field

from ray_serve_npu import accelerators as npu
from ray_serve_npu import ingress, streams
from ray_serve_npu.fake_npu.tier import DRY_RUN_MODEL_ENV_VAR


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


def _rebind_module_names(module: ModuleType) -> None:
    for name, value in _MODULE_NAMES.items():
        if name in vars(module):
            setattr(module, name, value)


def _all_subclasses(cls: type) -> list[type]:
    found: list[type] = []
    for sub in cls.__subclasses__():
        found += [sub, *_all_subclasses(sub)]
    return found


def _widen_fields(model: type[BaseModel]) -> bool:
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


def _patch_accelerators(module: ModuleType) -> None:
    module.NPUConfig = npu.NPUConfig  # type: ignore[attr-defined]
    module.NPUAccelerator = npu.NPUAccelerator  # type: ignore[attr-defined]
    _rebind_module_names(module)


def _patch_llm_config(module: ModuleType) -> bool:
    _rebind_module_names(module)
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
    return _widen_fields(config_cls)


def _patch_vllm_models(module: ModuleType) -> bool:
    _rebind_module_names(module)
    engine_cls = module.VLLMEngineConfig

    # Ray's _build_accelerator validator falls back to the GPU backend for any
    # kind it does not know; swap in the NPU backend where the config is npu.
    def accelerator(self: Any) -> Any:
        if isinstance(self.accelerator_config, npu.NPUConfig) and not isinstance(
            self._accelerator, npu.NPUAccelerator
        ):
            self._accelerator = npu.NPUAccelerator()
        return self._accelerator

    engine_cls.accelerator = property(accelerator, doc=engine_cls.accelerator.__doc__)
    return _widen_fields(engine_cls)


def _without_zero_gpu(deployment_options: dict[str, Any], llm_config: Any) -> dict[str, Any]:
    """Drop the ``GPU`` key Ray writes into every replica bundle, for npu deployments.

    Ray merges ``{"CPU": 1, "GPU": 0, ...}`` for the replica actor into the first
    bundle (``LLMServer.get_deployment_options``); an NPU deployment must not
    mention GPUs at all.
    """
    accelerator_config = llm_config.get_engine_config().accelerator_config
    bundles = deployment_options.get("placement_group_bundles")
    if not isinstance(accelerator_config, npu.NPUConfig) or bundles is None:
        return deployment_options
    if any(bundle.get("GPU", 0) > 0 for bundle in bundles):
        raise npu.HardwareMismatchError(
            "Hardware mismatch: accelerator_config kind 'npu' but the replica asks for GPUs "
            "(deployment_config.ray_actor_options.num_gpus). Fix: remove num_gpus; the "
            "engine workers get their NPUs from the placement group."
        )
    deployment_options["placement_group_bundles"] = [
        {key: value for key, value in bundle.items() if key != "GPU"} for bundle in bundles
    ]
    return deployment_options


def _patch_llm_server(module: ModuleType) -> None:
    server_cls = module.LLMServer
    ray_get_options: Callable[..., dict[str, Any]] = server_cls.get_deployment_options.__func__

    @functools.wraps(ray_get_options)
    def get_deployment_options(cls: type, llm_config: Any) -> dict[str, Any]:
        return _without_zero_gpu(ray_get_options(cls, llm_config), llm_config)

    server_cls.get_deployment_options = classmethod(get_deployment_options)


def _patch_llm_server_for_fake_tier(module: ModuleType) -> None:
    server_cls = module.LLMServer
    ray_get_options: Callable[..., dict[str, Any]] = server_cls.get_deployment_options.__func__

    @functools.wraps(ray_get_options)
    def get_deployment_options(cls: type, llm_config: Any) -> dict[str, Any]:
        if os.environ.get(DRY_RUN_MODEL_ENV_VAR):
            # Imported here: the adapter reads vLLM's argument tables and the
            # checker's data, which a deployment off the fake tier never needs.
            from ray_serve_npu.fake_npu.adapter import adapt_deployed_config

            adapt_deployed_config(llm_config)
        return ray_get_options(cls, llm_config)

    server_cls.get_deployment_options = classmethod(get_deployment_options)


def _patch_ingress_404(module: ModuleType) -> None:
    """Name the served models in the 404 for an unknown model.

    Ray's 404 names only the model asked for (``OpenAiIngress._get_model_id``); the
    commonest mistake on these recipes is a client ``model`` that differs from the
    served ``model_id``, and the fix is one of the served names.
    """
    ingress_cls = module.OpenAiIngress
    ray_get_model_id = ingress_cls._get_model_id
    http_exception = module.HTTPException

    @functools.wraps(ray_get_model_id)
    async def _get_model_id(self: Any, model: str | None) -> str:
        try:
            return await ray_get_model_id(self, model)
        except http_exception as error:
            if error.status_code != 404:
                raise
            served = sorted(self._model_cards)
            raise http_exception(
                404,
                f'{error.detail} Served models: {served}. Fix: set "model" to one of them '
                "(the model_id in model_loading_config).",
            ) from None

    ingress_cls._get_model_id = _get_model_id


def _patch_ingress_api_key(module: ModuleType) -> None:
    """Require the API key on the app the ingress builds, where one is set."""
    # `make_fastapi_ingress` looks `init` up in the module at call time.
    ray_init = module.init

    @functools.wraps(ray_init)
    def init() -> Any:
        app = ray_init()
        ingress.require_api_key(app)
        return app

    module.init = init


def _patch_ingress_failures_before_streaming(module: ModuleType) -> None:
    """Answer a request that fails before its first chunk with a stable 503 or 500."""
    ingress_cls = module.OpenAiIngress
    ingress_cls._process_llm_request = streams.answering_failures(ingress_cls._process_llm_request)


def _patch_ingress_stream_errors(module: ModuleType) -> None:
    """End a stream whose replica or engine fails in an error event."""
    # `_process_llm_request` looks the name up in the module at call time.
    module._openai_json_wrapper = streams.ending_streams_in_errors(module._openai_json_wrapper)


#: Ray's builders that import the direct-streaming builder by name from the core
#: builder module (the same at 2.56.1, 2.57.1 and 2.60.0).
_DIRECT_STREAMING_IMPORTERS = (
    "ray.llm._internal.serve.serving_patterns.data_parallel.builder",
    "ray.llm._internal.serve.serving_patterns.prefill_decode.builder",
)


def _patch_direct_streaming_api_key(module: ModuleType) -> None:
    """Require the API key on the app a direct-streaming server builds, where one is set."""
    ray_build = module._build_direct_streaming_llm_deployment

    @functools.wraps(ray_build)
    def _build_direct_streaming_llm_deployment(llm_config: Any, **kwargs: Any) -> Any:
        digest = ingress.key_digest_from_env()
        if digest is not None:
            # Ray's own choice of server class, keyed.
            server_cls = kwargs.get("deployment_cls") or llm_config.server_cls or module.LLMServer
            kwargs["deployment_cls"] = ingress.keyed_server_class(server_cls, digest)
        return ray_build(llm_config, **kwargs)

    module._build_direct_streaming_llm_deployment = _build_direct_streaming_llm_deployment
    # Through the import hook, this runs before those builders are executed and they
    # import the keyed builder; after a late activate(), rebind the ones loaded.
    for name in _DIRECT_STREAMING_IMPORTERS:
        importer = sys.modules.get(name)
        if getattr(importer, "_build_direct_streaming_llm_deployment", None) is ray_build:
            importer._build_direct_streaming_llm_deployment = _build_direct_streaming_llm_deployment
