"""Fail the build when a recipe pins another release than its path's.

``recipes/Dockerfile`` (the Ray Serve LLM path) and the Compose files must state
their pins literally (a reader copies them), so this check keeps them equal to the
release each path pins (``ray_serve_npu.releases.PATH_RELEASES``), the one
definition the pages are built from.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from ray_serve_npu import compat, hardware
from ray_serve_npu.releases import COMPOSE_RELEASE, RELEASES

logger = logging.getLogger(__name__)


def check_pins(recipes: Path) -> list[str]:
    """Return one message per recipe pin that disagrees with the package."""
    release = compat.VLLM_ASCEND
    problems: list[str] = []
    dockerfile = (recipes / "Dockerfile").read_text()
    wanted = {
        "VLLM_ASCEND_IMAGE": hardware.image(release.tag, hardware.A2),
        "RAY_VERSION": release.ray,
    }
    for name, value in wanted.items():
        found = re.search(rf"^ARG {name}=(\S+)$", dockerfile, re.MULTILINE)
        if found is None or found.group(1) != value:
            problems.append(
                f"recipes/Dockerfile: ARG {name} is "
                f"{found.group(1) if found else 'missing'}, expected {value}"
            )
    # The Dockerfile builds any supported release by build argument, so it keeps the
    # cap while a supported release pairs with ray 2.56.
    fastapi = f'"fastapi{compat.RAY_2_56_FASTAPI}"'
    pairs_2_56 = [
        r.tag
        for r in RELEASES.values()
        if r.pairing.ray and compat.ray_series(r.pairing.ray) == "2.56.x"
    ]
    if pairs_2_56 and fastapi not in dockerfile:
        problems.append(
            f"recipes/Dockerfile: pip must install {fastapi}, which ray 2.56 needs "
            f"({', '.join(pairs_2_56)} pairs with it)"
        )
    for name, kind in (
        ("docker-compose.yaml", hardware.A2),
        ("docker-compose-a3.yaml", hardware.A3),
    ):
        image = hardware.image(COMPOSE_RELEASE.tag, kind)
        if f"image: {image}\n" not in (recipes / name).read_text():
            problems.append(f"recipes/{name}: expected image {image}")
    return problems


def _builder_inited(app: Sphinx) -> None:
    for problem in check_pins(Path(app.confdir).parent / "recipes"):
        logger.warning(problem)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
