"""Read a vLLM-Ascend image reference back into release, node kind and base OS.

The inverse of :meth:`ray_serve_npu.releases.Release.image`: an image tag is the
release's tag followed by the suffix its data gives a node kind and OS
(``v0.22.1rc1-a3-openeuler``). The checker reads Compose files and Dockerfiles
with it, so the tag grammar has one owner: the release data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ray_serve_npu.releases.model import OPERATING_SYSTEMS, Release


@dataclass(frozen=True)
class ImageRef:
    """What a vLLM-Ascend image reference names."""

    #: The release tag the image tag starts with, supported or not (``v0.24.0rc1``).
    tag: str
    #: The node kind its suffix stands for in the release data, or None for a
    #: suffix no supported release publishes (``-310p``).
    node_kind: str | None
    #: ``ubuntu`` or ``openeuler``, or None with an unknown suffix.
    os: str | None


def _suffixes(releases: dict[str, Release]) -> dict[str, tuple[str, str]]:
    """Every suffix a supported release publishes -> (node kind, OS)."""
    return {
        tags.suffix(os): (kind, os)
        for release in releases.values()
        for kind, tags in release.images.tags.items()
        for os in OPERATING_SYSTEMS
    }


def parse_image(image: str, releases: dict[str, Release]) -> ImageRef | None:
    """The release, node kind and OS an image names; None for another repository's image.

    A registry mirror keeps the repository's path (``mirror.example/ascend/vllm-ascend``),
    so only the path after the registry is compared.
    """
    repository, _, image_tag = image.rpartition(":")
    paths = {release.images.repository.split("/", 1)[1] for release in releases.values()}
    if not image_tag or "/" in image_tag or not any(repository.endswith(p) for p in paths):
        return None
    # Release tags hold no '-'; everything from the first '-' is the suffix.
    tag, dash, rest = image_tag.partition("-")
    kind, os = _suffixes(releases).get(dash + rest, (None, None))
    return ImageRef(tag=tag, node_kind=kind, os=os)
