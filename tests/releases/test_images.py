"""An image reference reads back into the release, node kind and OS the data built it from."""

from __future__ import annotations

import pytest

from ray_serve_npu.check.checks import image_node_kind
from ray_serve_npu.releases import RELEASES, ImageRef, parse_image

EVERY_IMAGE = [
    (tag, kind, os, reference)
    for tag, release in RELEASES.items()
    for (kind, os), reference in release.image_references().items()
]


def test_every_release_publishes_images() -> None:
    assert {tag for tag, *_ in EVERY_IMAGE} == set(RELEASES)


@pytest.mark.parametrize(("tag", "kind", "os", "reference"), EVERY_IMAGE)
def test_each_published_image_reads_back(tag: str, kind: str, os: str, reference: str) -> None:
    assert parse_image(reference) == ImageRef(tag=tag, node_kind=kind, os=os)


def test_a_mirror_keeps_the_repository_path() -> None:
    ref = parse_image("mirror.example:5000/ascend/vllm-ascend:v0.22.1rc1-a3")
    assert ref == ImageRef(tag="v0.22.1rc1", node_kind="A3", os="ubuntu")


def test_an_unsupported_release_is_still_read() -> None:
    # The checker warns that it has no rules for it, so the tag must come through.
    assert parse_image("quay.io/ascend/vllm-ascend:v0.24.0rc1-a3") == ImageRef(
        tag="v0.24.0rc1", node_kind="A3", os="ubuntu"
    )


def test_a_suffix_no_release_publishes_names_no_node_kind() -> None:
    assert parse_image("quay.io/ascend/vllm-ascend:v0.22.1rc1-310p") == ImageRef(
        tag="v0.22.1rc1", node_kind=None, os=None
    )
    assert image_node_kind("quay.io/ascend/vllm-ascend:v0.22.1rc1-310p") is None


def test_a_950dt_image_is_not_taken_for_an_a2_one() -> None:
    # Before the data owned the grammar, any tag without '-a3' counted as A2.
    assert parse_image("quay.io/ascend/vllm-ascend:v0.23.0-a5").node_kind == "950DT"
    assert image_node_kind("quay.io/ascend/vllm-ascend:v0.23.0-a5") is None


@pytest.mark.parametrize(
    "image", ["vllm/vllm-openai:v0.22.1", "quay.io/ascend/vllm-ascend", "ubuntu:22.04"]
)
def test_other_images_are_not_vllm_ascend_images(image: str) -> None:
    assert parse_image(image) is None
