"""The vLLM-Ascend releases this project supports, read from one data file each.

Every fact that changes from one vLLM-Ascend release to the next (the vLLM,
CANN, torch and torch_npu its images carry, the image tags per node kind and
OS, the jemalloc paths, the DeepSeek-V4-Flash tutorial's runs, the Ray that
pairs with it and the checker's rules file) lives in ``<tag>.yaml`` beside this
module, each with the file (and lines) at that tag that states it; ``paths.yaml``
names the release each serving path pins; ``unread.yaml`` lists the published releases
whose tags can't be read here, with what their release pages state (not supported). This
module is the one reader of those files; it imports no Ray.

>>> release("v0.22.1rc1").vllm
'0.22.1'
"""

from __future__ import annotations

from typing import Literal

from packaging.version import InvalidVersion, Version

from ray_serve_npu.releases.images import ImageRef
from ray_serve_npu.releases.images import parse_image as _parse_image
from ray_serve_npu.releases.loader import (
    DATA_DIR,
    PATHS_FILE,
    UNREAD_FILE,
    load_path_releases,
    load_release_file,
    load_unread_releases,
    release,
    releases,
)
from ray_serve_npu.releases.model import (
    OPERATING_SYSTEMS,
    BadReleaseDataError,
    ImageTags,
    Jemalloc,
    NoPairingError,
    PairingError,
    PathRelease,
    PathReleases,
    RayPairing,
    Release,
    TutorialRun,
    UnreadRelease,
    differing_settings,
)
from ray_serve_npu.releases.pairings import pairings

#: Every supported release, oldest first, by tag.
RELEASES: dict[str, Release] = releases()

#: The published releases newer than the supported ones whose tags can't be read here,
#: oldest first, by tag: what their release pages state. Not supported.
UNREAD_RELEASES: dict[str, UnreadRelease] = load_unread_releases()

#: The release each serving path's recipes and pages pin, with the reason.
PATH_RELEASES: PathReleases = load_path_releases()

#: The release the Ray Serve LLM path pins: its recipes, the Dockerfile, KubeRay,
#: and the sources its pages cite.
SERVE_LLM_RELEASE: Release = RELEASES[PATH_RELEASES.serve_llm.release]

#: The release the Docker Compose path (``vllm serve``, no Ray) pins.
COMPOSE_RELEASE: Release = RELEASES[PATH_RELEASES.compose.release]

#: The release the Compose path's community guide names, which the tuning page's
#: corrections to it are traced at.
GUIDE_RELEASE: Release = RELEASES[PATH_RELEASES.community_guide.release]

__all__ = [
    "COMPOSE_RELEASE",
    "DATA_DIR",
    "GUIDE_RELEASE",
    "OPERATING_SYSTEMS",
    "PATHS_FILE",
    "PATH_RELEASES",
    "RELEASES",
    "SERVE_LLM_RELEASE",
    "UNREAD_FILE",
    "UNREAD_RELEASES",
    "BadReleaseDataError",
    "ImageRef",
    "ImageTags",
    "Jemalloc",
    "NoPairingError",
    "PairingError",
    "PathRelease",
    "PathReleases",
    "RayPairing",
    "Release",
    "TutorialRun",
    "UnreadRelease",
    "differing_settings",
    "check_pairing",
    "load_path_releases",
    "load_release_file",
    "load_unread_releases",
    "parse_image",
    "release",
    "series",
]


def check_pairing(tag: str, ray_version: str) -> Literal["pinned", "measured"]:
    """How ``ray_version`` pairs with release ``tag``, or :class:`PairingError` (not a
    version, or a Ray of another series than the data's) or :class:`NoPairingError`
    (no Ray's Serve LLM pins the release's vLLM, and none was measured serving it).

    ``pinned``: the Ray series the data pairs with (``2.56.x``: the data names one Ray
    release, and any patch release of its series pairs too; whether the plugin supports
    that Ray is for :data:`ray_serve_npu.compat.SUPPORTED_RAY`, which the caller
    checks). ``measured``: this very Ray served the release's vLLM when
    ``nox -s pairings`` measured them (:mod:`.pairings`). The errors state the facts
    and name the Rays that pair or were measured serving; each caller adds the fix in
    its own terms.
    """
    data = release(tag)
    try:
        Version(ray_version)
    except InvalidVersion:
        raise PairingError(f"ray {ray_version!r} is not a version, such as 2.57.1") from None
    paired = data.pairing.ray
    if paired is not None and series(ray_version) == series(paired):
        return "pinned"
    measured = pairings()
    if measured.serves(ray_version, data.vllm):
        return "measured"
    served = measured.serving_rays(data.vllm)
    also = (
        f" Measured serving beside vLLM {data.vllm} on the fake-NPU tier: ray {', '.join(served)}."
        if served
        else ""
    )
    if paired is None:
        raise NoPairingError(
            f"ray {ray_version} does not pair with vLLM-Ascend {tag} (vLLM {data.vllm}): "
            f"{' '.join(data.pairing.reason.split())}{also}"
        )
    major, minor = series(paired)
    raise PairingError(
        f"ray {ray_version} does not pair with vLLM-Ascend {tag} (vLLM {data.vllm}); "
        f"the Ray that does is {major}.{minor}.x ({paired}).{also}"
    )


def series(version: str) -> tuple[int, int]:
    """A version's ``(major, minor)``: Ray pairs by it, and vLLM patch releases keep it.

    >>> series("2.57.1")
    (2, 57)
    """
    major, minor = Version(version).release[:2]
    return major, minor


def parse_image(image: str) -> ImageRef | None:
    """The release, node kind and OS a vLLM-Ascend image reference names (None: not one).

    >>> parse_image("quay.io/ascend/vllm-ascend:v0.22.1rc1-a3-openeuler")
    ImageRef(tag='v0.22.1rc1', node_kind='A3', os='openeuler')
    """
    return _parse_image(image, RELEASES)
