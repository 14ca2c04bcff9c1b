"""A vLLM-Ascend tag, image or CANN version in a page, recipe or Dockerfile is in the data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ray_serve_npu.releases import RELEASES, UNREAD_RELEASES

ROOT = Path(__file__).resolve().parents[2]

#: An image of vLLM-Ascend, or this project's image built on one (recipes/Dockerfile,
#: tagged like its base): the tag after the colon.
IMAGE = re.compile(r"(?:quay\.io/ascend/vllm-ascend|\bray-serve-npu):(?P<tag>[A-Za-z0-9][\w.-]*)")
#: A vLLM-Ascend git or image tag, where a line speaks of vLLM-Ascend (not one in a
#: URL path, such as vLLM's own ``vllm/blob/v0.25.1``, nor an image tag, judged above).
TAG = re.compile(r"(?<![\w./:])v\d+\.\d+\.\d+(?:rc\d+|\.post\d+)?(?![\w.])")
#: vLLM-Ascend from PyPI, e.g. ``vllm-ascend==0.22.1rc1``.
PIP = re.compile(r"vllm[-_]ascend\s*==\s*(?P<version>[\w.]+)")
#: A CANN version: ``CANN 9.0.0`` in prose, ``cann:9.0.0-...`` in a base image.
CANN = re.compile(r"(?:\bCANN[ _-]?|ascend/cann:)(?P<version>\d+\.\d+\.\d+(?:[.-]?[a-z]+\.?\d*)?)")


def _image_tags() -> set[str]:
    return {
        reference.split(":", 1)[1]
        for data in RELEASES.values()
        for reference in data.image_references().values()
    }


def unknown_versions(text: str) -> list[str]:
    """The versions ``text`` names that no release data file holds, with their lines."""
    # A release that can't be read here is known by its tag, not by any image or CANN.
    tags = set(RELEASES) | set(UNREAD_RELEASES)
    image_tags = _image_tags()
    cann = {data.cann for data in RELEASES.values()}
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in IMAGE.finditer(line):
            if match["tag"] not in image_tags:
                found.append(f"{number}: image tag {match['tag']}")
        if re.search(r"vllm[-_ ]ascend", line, re.IGNORECASE):
            for match in TAG.finditer(line):
                if match[0] not in tags:
                    found.append(f"{number}: vLLM-Ascend tag {match[0]}")
        for match in PIP.finditer(line):
            if f"v{match['version']}" not in tags:
                found.append(f"{number}: vllm-ascend=={match['version']}")
        for match in CANN.finditer(line):
            if match["version"] not in cann:
                found.append(f"{number}: CANN {match['version']}")
    return found


def _scanned() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in sorted((ROOT / "recipes").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files.append(path)
    files += sorted(p for p in ROOT.glob("**/Dockerfile*") if ".nox" not in p.parts)
    return sorted(set(files))


def test_the_scan_covers_the_pages_recipes_and_dockerfiles() -> None:
    names = {str(path.relative_to(ROOT)) for path in _scanned()}
    assert {"README.md", "docs/index.md", "recipes/Dockerfile", "recipes/docker-compose.yaml"} <= (
        names
    )


def test_pages_recipes_and_dockerfiles_name_only_versions_the_data_holds() -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{problem}"
        for path in _scanned()
        for problem in unknown_versions(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not problems, (
        "versions that no file in src/ray_serve_npu/releases/ holds (add the release's data "
        "file, or correct the version):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        ("image: quay.io/ascend/vllm-ascend:v0.24.0rc1", "image tag v0.24.0rc1"),
        ("image: quay.io/ascend/vllm-ascend:v0.25.1rc1-a5", "image tag v0.25.1rc1-a5"),
        ("# vLLM-Ascend v0.24.0rc1 carries vLLM 0.24.0", "vLLM-Ascend tag v0.24.0rc1"),
        ("pip install vllm-ascend==0.24.0rc1", "vllm-ascend==0.24.0rc1"),
        ("FROM quay.io/ascend/cann:8.5.1-910b-ubuntu22.04-py3.12", "CANN 8.5.1"),
        ("Each image carries CANN 9.2.0.", "CANN 9.2.0"),
    ],
)
def test_a_planted_unknown_version_is_reported(planted: str, reported: str) -> None:
    assert unknown_versions(f"intro\n{planted}\n") == [f"2: {reported}"]


@pytest.mark.parametrize(
    "known",
    [
        "image: quay.io/ascend/vllm-ascend:v0.23.0-a5-openeuler",
        "ARG VLLM_ASCEND_IMAGE=quay.io/ascend/vllm-ascend:{{ vllm_ascend_version }}",
        "vLLM-Ascend v0.25.1rc1 carries vLLM 0.25.1 (vllm/blob/v0.25.1)",
        "CANN 9.1.0 and cann:9.0.1-a3-ubuntu22.04-py3.12",
    ],
)
def test_versions_the_data_holds_pass(known: str) -> None:
    assert unknown_versions(known) == []


def test_a_recipe_with_a_planted_tag_fails_the_scan(tmp_path: Path) -> None:
    compose = (ROOT / "recipes" / "docker-compose.yaml").read_text()
    planted = compose.replace("vllm-ascend:v0.23.0", "vllm-ascend:v0.24.0rc1", 1)
    assert planted != compose
    assert any("image tag v0.24.0rc1" in p for p in unknown_versions(planted))
    assert unknown_versions(compose) == []
