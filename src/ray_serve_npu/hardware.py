"""Facts about Ascend hardware and the vLLM-Ascend images that serve it.

This module is the one place that states them; the plugin, the fake-NPU tier,
the checker and the docs read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ray_serve_npu.releases import SERVE_LLM_RELEASE, release

#: The Ray resource an NPU is counted in. vLLM-Ascend's platform asks Ray for
#: it per worker (``ray_device_key = "NPU"`` in ``vllm_ascend/platform.py``).
#: Ray Core's Ascend support owns this name, and the variables that say which NPUs a
#: worker sees (:mod:`ray_serve_npu.envs`), in ``ray/_private/accelerators/npu.py``;
#: it is written out here so that this module imports no Ray, and a test checks it
#: against Ray's.
NPU_RESOURCE: str = "NPU"


@dataclass(frozen=True)
class NodeKind:
    """One kind of Atlas 800 inference node and the vLLM-Ascend image built for it."""

    name: str
    #: NPU devices Ray counts on one node.
    devices_per_node: int
    #: SoC names that ``acl.get_soc_name()`` reports on this node kind. Ray
    #: uses that name as the node's accelerator type (``ray/_private/accelerators/npu.py``).
    #: Source: ``socVersionMap`` in Ascend/pytorch ``torch_npu/csrc/core/npu/NpuVariables.cpp``,
    #: which torch_npu fills from the same AscendCL call.
    soc_names: tuple[str, ...]
    #: Memory of one NPU Ray counts, in GB.
    memory_per_device_gb: int
    # The DeepSeek-V4-Flash tutorial's line 26, at v0.22.1rc1: `64G × 8`
    # for A2, `128G × 8` for A3.
    #: NPUs (chips) per module. vLLM-Ascend's tutorials list a node by modules; Ray
    #: and ``npu-smi`` count chips, two per A3 module.
    devices_per_module: int

    @property
    def tutorial_listing(self) -> str:
        """The node as vLLM-Ascend's tutorials list it: memory per module × modules."""
        modules = self.devices_per_node // self.devices_per_module
        return f"{self.memory_per_device_gb * self.devices_per_module}G × {modules}"


#: Atlas 800 A2: eight Ascend 910B devices of 64 GB each.
A2 = NodeKind(
    name="A2",
    devices_per_node=8,
    soc_names=(
        "Ascend910B1",
        "Ascend910B2",
        "Ascend910B2C",
        "Ascend910B3",
        "Ascend910B4",
        "Ascend910B4-1",
    ),
    # The tutorial's `64G × 8` (DeepSeek-V4-Flash.md line 26 at v0.22.1rc1).
    memory_per_device_gb=64,
    devices_per_module=1,
)

#: Atlas 800 A3: sixteen Ascend 910_93 devices.
A3 = NodeKind(
    name="A3",
    devices_per_node=16,
    soc_names=(
        "Ascend910_9391",
        "Ascend910_9392",
        "Ascend910_9381",
        "Ascend910_9382",
        "Ascend910_9372",
        "Ascend910_9361",
    ),
    # `128G × 8` in the DeepSeek-V4-Flash tutorial (line 26), `64G × 16` in the
    # single-node long-sequence tutorial (docs/source/tutorials/features/
    # long_sequence_context_parallel_single_node.md line 13), both at v0.22.1rc1.
    memory_per_device_gb=64,
    devices_per_module=2,
)

NODE_KINDS: dict[str, NodeKind] = {kind.name: kind for kind in (A2, A3)}

# The image repository, tags and jemalloc paths vary by release: each release's
# data (ray_serve_npu/releases/<tag>.yaml) states them. The two names below are the
# Ray Serve LLM path's release's; image() gives any release's.

#: The vLLM-Ascend image repository (vllm-ascend ``docs/source/installation.md``).
IMAGE_REPOSITORY: str = SERVE_LLM_RELEASE.image_repository

#: jemalloc in the images, by base OS: the Ubuntu images (default tags) and the
#: openEuler ones (``-openeuler`` tags). The vLLM-Ascend DeepSeek-V4-Flash
#: tutorial preloads the Ubuntu path.
JEMALLOC_PATHS: dict[str, str] = SERVE_LLM_RELEASE.jemalloc_paths


def image(tag: str, node_kind: NodeKind, *, openeuler: bool = False) -> str:
    """Return the vLLM-Ascend image reference for a release and a node kind.

    >>> image("v0.22.1rc1", A3)
    'quay.io/ascend/vllm-ascend:v0.22.1rc1-a3'
    """
    # From the release's data: an unsupported release, or one that publishes no
    # image for the node kind, raises LookupError naming what it has.
    return release(tag).image(node_kind.name, "openeuler" if openeuler else "ubuntu")


def node_kind_of_soc(soc_name: str) -> NodeKind | None:
    """Return the node kind whose devices report ``soc_name``, if it is one we know."""
    for kind in NODE_KINDS.values():
        if soc_name in kind.soc_names:
            return kind
    return None
