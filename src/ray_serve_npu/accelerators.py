"""The ``npu`` accelerator kind: its config, its backend, and how a config resolves to it.

The classes follow the contract of Ray Serve LLM's own kinds in
``ray/llm/_internal/serve/core/configs/accelerators.py`` (``AcceleratorConfig``,
``AcceleratorBackend``). The functions are the rules that the patches of ``LLMConfig``
and of the vLLM engine config (``ray_serve_npu.patches``) plug in; they are plain
functions so that they can be tested without a Ray cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal

from ray.llm._internal.serve.core.configs import accelerators as ray_accelerators
from ray.util.placement_group import PlacementGroup, placement_group

from ray_serve_npu.hardware import NODE_KINDS, NPU_RESOURCE

# Ray's own inference, kept before the plugin rebinds the module's name to ours.
_ray_infer_hardware_kind_from_bundles = ray_accelerators.infer_hardware_kind_from_bundles

#: True once Ray Serve LLM ships an npu kind of its own; the plugin then steps aside.
RAY_HAS_NPU_KIND: bool = hasattr(ray_accelerators, "NPUConfig")

#: Ascend accelerator types: Ray's (``HUAWEI_NPU_*`` in ``ray/util/accelerators/accelerators.py``)
#: and the SoC names A2 and A3 nodes report (:mod:`ray_serve_npu.hardware`).
NPU_ACCELERATOR_VALUES: frozenset[str] = frozenset(
    {
        member.value
        for name, member in ray_accelerators.AcceleratorType.__members__.items()
        if name.startswith("HUAWEI_NPU")
    }
    | {soc for kind in NODE_KINDS.values() for soc in kind.soc_names}
)

#: Ray Serve LLM's accelerator types plus the Ascend SoC names Ray does not list,
#: so that ``LLMConfig(accelerator_type="Ascend910_9391")`` validates.
AcceleratorType = Enum(  # type: ignore[misc]
    "AcceleratorType",
    {
        **{
            name: member.value
            for name, member in ray_accelerators.AcceleratorType.__members__.items()
        },
        **{
            f"HUAWEI_NPU_{soc.removeprefix('Ascend').replace('-', '_')}": soc
            for soc in sorted(NPU_ACCELERATOR_VALUES)
            if soc not in {m.value for m in ray_accelerators.AcceleratorType}
        },
    },
)

DEVICE_RESOURCES: dict[str, str] = {"GPU": "gpu", "TPU": "tpu", NPU_RESOURCE: "npu"}
"""Ray resource -> the accelerator kind that uses it."""


if RAY_HAS_NPU_KIND:  # pragma: no cover - no Ray release has it yet
    NPUConfig = ray_accelerators.NPUConfig
    NPUAccelerator = ray_accelerators.NPUAccelerator
else:

    class NPUConfig(ray_accelerators.AcceleratorConfig):  # type: ignore[no-redef]
        """Run the engine on Huawei Ascend NPUs.

        Pass it, or its dict form ``{"kind": "npu"}``, as ``LLMConfig.accelerator_config``.
        Each engine worker then gets a placement-group bundle with one ``NPU``.
        """

        kind: Literal["npu"] = "npu"

    class NPUAccelerator(ray_accelerators.AcceleratorBackend):  # type: ignore[no-redef]
        """Placement and initialization for NPU engine workers."""

        def default_bundles(
            self, *, num_devices: int, accelerator_type_str: str | None = None
        ) -> list[dict[str, float]]:
            """One bundle per device: ``{"NPU": 1}``, plus the accelerator-type hint."""
            bundle: dict[str, float] = {NPU_RESOURCE: 1}
            if accelerator_type_str:
                # The same token amount Ray's GPU and TPU kinds use for the hint.
                bundle[ray_accelerators.format_ray_accelerator_resource(accelerator_type_str)] = (
                    0.001
                )
            return [dict(bundle) for _ in range(num_devices)]

        def create_placement_group(
            self,
            *,
            bundles: list[dict[str, float]],
            strategy: str,
            name: str,
            accelerator_type_str: str | None = None,
        ) -> PlacementGroup:
            return placement_group(bundles=bundles, strategy=strategy, name=name)

        @property
        def requires_remote_initialization(self) -> bool:
            # vLLM-Ascend's platform probes the device while building the
            # engine config, so that step must run where an NPU is visible.
            return True

        def get_remote_options(self, accelerator_type_str: str | None = None) -> dict[str, Any]:
            """Options that put the engine-config task on an NPU of the placement group."""
            # A token fraction: Ray then sets ASCEND_RT_VISIBLE_DEVICES for the
            # task without holding a device the engine workers need.
            options: dict[str, Any] = {"resources": {NPU_RESOURCE: 0.001}}
            if accelerator_type_str:
                options["accelerator_type"] = accelerator_type_str
            return options


class HardwareMismatchError(ValueError):
    """The parts of an LLMConfig name different hardware."""


def accelerator_type_kind(accelerator_type: Any) -> str:
    """The kind an ``accelerator_type`` value belongs to: npu, tpu or gpu (Ray's default)."""
    value = str(getattr(accelerator_type, "value", accelerator_type))
    if value in NPU_ACCELERATOR_VALUES:
        return "npu"
    if value in ray_accelerators.TPU_ACCELERATOR_VALUES:
        return "tpu"
    return "gpu"


def bundle_device_kinds(placement_group_config: Mapping[str, Any] | None) -> set[str]:
    """The kinds whose devices the placement-group bundles ask for (empty: CPU only)."""
    if not placement_group_config:
        return set()
    bundles = [placement_group_config.get("bundle_per_worker") or {}]
    bundles += placement_group_config.get("bundles") or []
    return {
        kind
        for bundle in bundles
        for resource, kind in DEVICE_RESOURCES.items()
        if bundle.get(resource, 0) > 0
    }


def infer_hardware_kind_from_bundles(
    placement_group_config: Mapping[str, Any] | None,
) -> str | None:
    """Ray's bundle inference, with bundles that ask for NPUs inferring ``npu``."""
    if "npu" in bundle_device_kinds(placement_group_config):
        return "npu"
    return _ray_infer_hardware_kind_from_bundles(placement_group_config)


def infer_npu_config(
    accelerator_config: Any,
    accelerator_type: Any,
    placement_group_config: Mapping[str, Any] | None,
) -> NPUConfig | None:
    """Return an :class:`NPUConfig` where an unset ``accelerator_config`` should be npu.

    NPU bundles decide first, as bundles do in Ray; without bundles, an Ascend
    ``accelerator_type`` decides. Anything else is left to Ray's resolution.
    """
    if accelerator_config is not None:
        return None
    if placement_group_config:
        if infer_hardware_kind_from_bundles(placement_group_config) == "npu":
            return NPUConfig()
        return None
    if accelerator_type is not None and accelerator_type_kind(accelerator_type) == "npu":
        return NPUConfig()
    return None


_KIND_FIX = {
    "npu": 'accelerator_config={"kind": "npu"} with NPU bundles '
    '(or no placement_group_config, for one {"NPU": 1} bundle per device)',
    "gpu": 'accelerator_config={"kind": "gpu"} with GPU bundles',
    "tpu": 'accelerator_config={"kind": "tpu"} with TPU bundles',
    "cpu": 'accelerator_config={"kind": "cpu"} with CPU-only bundles',
}


def involves_npu(kind: str, accelerator_type: Any, placement_group_config: Any) -> bool:
    """Whether any part of a config names NPUs (otherwise Ray's own checks apply unchanged)."""
    return (
        kind == "npu"
        or "npu" in bundle_device_kinds(placement_group_config)
        or (accelerator_type is not None and accelerator_type_kind(accelerator_type) == "npu")
    )


def check_npu_hardware_match(
    kind: str, accelerator_type: Any, placement_group_config: Mapping[str, Any] | None
) -> None:
    """Raise :class:`HardwareMismatchError` where the parts of a config that involve NPUs disagree.

    ``kind`` is the resolved ``accelerator_config.kind``. The message names both
    sides and the fix.
    """
    bundle_kinds = bundle_device_kinds(placement_group_config)
    if len(bundle_kinds) > 1:
        raise HardwareMismatchError(
            f"Hardware mismatch: placement_group_config bundles ask for "
            f"{' and '.join(sorted(k.upper() for k in bundle_kinds))} devices in one "
            "deployment. Fix: request one kind of device, for example "
            f'{{"bundle_per_worker": {{"{NPU_RESOURCE}": 1}}}}.'
        )
    if bundle_kinds and bundle_kinds != {kind}:
        (bundle_kind,) = bundle_kinds
        raise HardwareMismatchError(
            f"Hardware mismatch: accelerator_config kind '{kind}' but placement_group_config "
            f"bundles ask for {bundle_kind.upper()} devices. Fix: use either "
            f"{_KIND_FIX[kind]}, or {_KIND_FIX[bundle_kind]}."
        )
    if kind == "npu" and placement_group_config and not bundle_kinds:
        raise HardwareMismatchError(
            "Hardware mismatch: accelerator_config kind 'npu' but placement_group_config "
            f'bundles ask for no device (CPU only). Fix: add "{NPU_RESOURCE}": 1 to each '
            'worker bundle, for example {"bundle_per_worker": {"NPU": 1, "CPU": 1}}, or use '
            f"{_KIND_FIX['cpu']}."
        )
    if accelerator_type is None:
        return
    type_kind = accelerator_type_kind(accelerator_type)
    if type_kind != kind:
        value = getattr(accelerator_type, "value", accelerator_type)
        keep = (
            "remove accelerator_type"
            if kind == "cpu"
            else f"an accelerator_type of kind '{kind}' (or none)"
        )
        raise HardwareMismatchError(
            f"Hardware mismatch: accelerator_type='{value}' is a {type_kind.upper()} type but "
            f"accelerator_config resolved to kind '{kind}'. Fix: use {_KIND_FIX[type_kind]}, "
            f"or keep kind '{kind}' and {keep}."
        )
