"""recipes/Dockerfile builds any supported release by build argument, and its first RUN
step stops the build when the Ray asked for and the image's vLLM do not pair.

No Docker engine runs here: the tests run the check step's own Python (cut from the
Dockerfile) with the build arguments in its environment, as ``docker build`` passes
them, for every release in the data and each Ray the project tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from ray_serve_npu import compat
from ray_serve_npu.releases import RELEASES, SERVE_LLM_RELEASE, Release
from ray_serve_npu.releases.pairings import pairings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "recipes" / "Dockerfile"
START, END = "# __pairing_check_start__", "# __pairing_check_end__"


def _text() -> str:
    return DOCKERFILE.read_text()


def _check_step() -> str:
    """The pairing check's RUN instruction, between its markers."""
    text = _text()
    assert START in text and END in text, "the pairing check's markers are gone"
    return text[text.index(START) : text.index(END)]


def _check_script() -> str:
    """The Python the check step hands ``python3 -`` through its heredoc."""
    found = re.search(r"<<'PY'\n(?P<body>.*?)\nPY\n", _check_step(), re.DOTALL)
    assert found, "the check step runs no python3 heredoc"
    return found.group("body")


def _arg_defaults() -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S*)$", _text(), re.MULTILINE))


def _run(tag: str, image: str, ray: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "VLLM_ASCEND_TAG": tag,
        "VLLM_ASCEND_IMAGE": image,
        "RAY_VERSION": ray,
    }
    return subprocess.run(
        [sys.executable, "-"],
        input=_check_script(),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _series(version: str) -> tuple[int, ...]:
    return Version(version).release[:2]


def test_the_build_arguments_default_to_the_serve_llm_release() -> None:
    defaults = _arg_defaults()
    assert defaults["VLLM_ASCEND_TAG"] == SERVE_LLM_RELEASE.tag
    assert defaults["VLLM_ASCEND_IMAGE"] == SERVE_LLM_RELEASE.image("A2")
    assert defaults["RAY_VERSION"] == SERVE_LLM_RELEASE.ray


def test_the_stage_declares_every_argument_the_check_reads() -> None:
    # An ARG before FROM is not in a stage's environment unless the stage declares it.
    text = _text()
    stage = text[text.index("\nFROM ") :]
    read = set(re.findall(r'"(VLLM_ASCEND_TAG|VLLM_ASCEND_IMAGE|RAY_VERSION)"', _check_script()))
    assert read == {"VLLM_ASCEND_TAG", "VLLM_ASCEND_IMAGE", "RAY_VERSION"}
    declared = set(re.findall(r"^ARG (\w+)", stage[: stage.index(START)], re.MULTILINE))
    assert read <= declared


def test_the_check_runs_before_the_heavy_installs() -> None:
    text = _text()
    first_run = re.search(r"^RUN ", text, re.MULTILINE)
    assert first_run and text.index(START) < first_run.start() < text.index(END)
    assert text.index('"ray[serve]==${RAY_VERSION}"') > text.index(END)
    # Before its Python, the check installs its YAML reader and nothing else.
    shell = _check_step().split("<<'PY'")[0]
    installs = re.findall(r"pip install --no-cache-dir (.*?) \\", shell)
    assert installs == ['"ruamel.yaml>=0.19"']


@pytest.mark.parametrize("tag", list(RELEASES))
@pytest.mark.parametrize("ray", compat.TESTED_RAY)
def test_the_check_passes_only_a_pairing_the_data_holds(tag: str, ray: str) -> None:
    data: Release = RELEASES[tag]
    result = _run(tag, data.image("A3"), ray)
    paired = data.pairing.ray
    pinned = paired is not None and _series(paired) == _series(ray)
    measured = pairings().serves(ray, data.vllm)
    if pinned or measured:
        assert result.returncode == 0, result.stderr
        assert f"vLLM {data.vllm}" in result.stdout and f"ray {ray}" in result.stdout
        assert ("(pinned)" if pinned else "(measured)") in result.stdout
        return
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    # Both versions, and the Ray that pairs (or that none does), and the Rays measured.
    assert f"vLLM {data.vllm}" in message and f"ray {ray}" in message
    if paired is None:
        assert "or VLLM_ASCEND_TAG to a release a Ray pairs with" in message
    else:
        assert f"RAY_VERSION={paired}" in message
    served = pairings().serving_rays(data.vllm)
    assert all(served_ray in message for served_ray in served)


def test_a_ray_measured_serving_beside_a_releases_vllm_passes() -> None:
    (pair, *_) = [
        pair
        for pair in pairings().pairs
        for data in RELEASES.values()
        if pair.serves and pair.vllm == data.vllm and data.pairing.ray is not None
        and _series(pair.ray) != _series(data.pairing.ray)
    ]  # fmt: skip
    (data,) = [data for data in RELEASES.values() if data.vllm == pair.vllm]
    result = _run(data.tag, data.image("A2"), pair.ray)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(f"pairs with ray {pair.ray} (measured)")


def test_a_patch_release_of_the_paired_series_passes() -> None:
    paired = SERVE_LLM_RELEASE.ray
    major, minor, patch = Version(paired).release[:3]
    result = _run(
        SERVE_LLM_RELEASE.tag, SERVE_LLM_RELEASE.image("A2"), f"{major}.{minor}.{patch + 1}"
    )
    assert result.returncode == 0, result.stderr


def test_an_image_of_another_release_stops_the_build() -> None:
    (other, *_) = [data for data in RELEASES.values() if data.tag != SERVE_LLM_RELEASE.tag]
    result = _run(SERVE_LLM_RELEASE.tag, other.image("A2"), SERVE_LLM_RELEASE.ray)
    assert result.returncode != 0
    assert other.image("A2") in result.stderr and SERVE_LLM_RELEASE.tag in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unsupported_tag_names_the_supported_ones() -> None:
    result = _run("v0.1.0", SERVE_LLM_RELEASE.image("A2"), SERVE_LLM_RELEASE.ray)
    assert result.returncode != 0
    assert result.stderr.startswith("VLLM_ASCEND_TAG:")
    assert all(tag in result.stderr for tag in RELEASES)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("ray", "says"),
    [
        ("2.56.0", "RAY_VERSION: ray 2.56.0 is outside the Rays ray-serve-npu supports"),
        ("latest", "RAY_VERSION: 'latest' is not a version"),
    ],
)
def test_a_ray_the_plugin_does_not_support_stops_the_build(ray: str, says: str) -> None:
    # 2.56.0 is of v0.22.1rc1's series, but the plugin refuses it at import.
    data = RELEASES["v0.22.1rc1"]
    result = _run(data.tag, data.image("A2"), ray)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(says)
