"""Text about `vllm serve` cites vLLM at the Compose release's vLLM.

The ``{vllm}`` role's default version is the Ray Serve LLM path's vLLM, so a
citation about the Compose path names its version (``path@0.23.0``). Those
versions are typed on the pages; this test moves them with ``releases/paths.yaml``:
a new Compose release fails it until the citations are read again at its vLLM.
"""

from __future__ import annotations

import re
from pathlib import Path

from ray_serve_npu.releases import COMPOSE_RELEASE

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: A ``{vllm}`` citation; its target is the text inside ``<...>`` where it has one.
CITATION = re.compile(r"\{vllm\}`(?:[^`<]*<)?([^`>]+)>?`")


def _compose_texts() -> dict[str, str]:
    """The Compose page, and the troubleshooting section about `vllm serve`'s 404."""
    troubleshooting = (DOCS / "troubleshooting.md").read_text()
    start = troubleshooting.index("% __model_404_start__")
    end = troubleshooting.index("% __model_404_end__")
    return {
        "vllm-ascend-compose.md": (DOCS / "vllm-ascend-compose.md").read_text(),
        "troubleshooting.md (404)": troubleshooting[start:end],
    }


def test_citations_about_vllm_serve_name_the_compose_releases_vllm() -> None:
    found = {
        (page, target)
        for page, text in _compose_texts().items()
        for target in CITATION.findall(text)
    }
    # Each text cites vLLM at least once: a scan that finds nothing checks nothing.
    assert {page for page, _ in found} == set(_compose_texts())
    wrong = sorted(
        (page, target)
        for page, target in found
        if target.split("#")[0].partition("@")[2] != COMPOSE_RELEASE.vllm
    )
    assert not wrong, f"cite these at @{COMPOSE_RELEASE.vllm}, the Compose image's vLLM: {wrong}"


def test_the_404_section_names_the_version_it_read() -> None:
    assert f"vLLM {COMPOSE_RELEASE.vllm}'s" in _compose_texts()["troubleshooting.md (404)"]
