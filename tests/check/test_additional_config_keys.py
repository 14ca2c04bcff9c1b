"""The checker's known ``additional_config`` keys are what each release's source reads.

``tools/additional_config_keys.py`` reads the keys from the release's Python files. A
clone with the tags (``RAY_SERVE_NPU_VLLM_ASCEND_GIT``) is one source; without one,
the release's sdist on PyPI is the other. The sdist is taken only if its SHA-256 is the
one recorded, and only once its Python files are shown to be the tag's, byte for byte:
``data/vllm_ascend_sdists.json`` holds the tag's tree digest, made from a clone with
``python tools/additional_config_keys.py --git-dir CLONE TAG --record``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from checker_data import ROOT

from ray_serve_npu.check.rules import available_releases

sys.path.insert(0, str(ROOT / "tools"))
import additional_config_keys as keys  # noqa: E402

#: A clone of vllm-project/vllm-ascend with the release tags, e.g. the one
#: `python tools/upstream_paths.py vllm-ascend --git-dir` reads.
GIT_DIR = os.environ.get("RAY_SERVE_NPU_VLLM_ASCEND_GIT")
SDISTS = json.loads((Path(__file__).parent / "data" / "vllm_ascend_sdists.json").read_text())
PYPI_PROJECT = "https://pypi.org/pypi/vllm-ascend/json"


def test_every_release_has_its_sdist_recorded() -> None:
    assert sorted(SDISTS) == sorted(available_releases())


@pytest.fixture(scope="module")
def pypi_files() -> dict[str, list[dict[str, object]]]:
    """PyPI's files of vllm-ascend, by version, with absolute URLs."""
    try:
        with urllib.request.urlopen(PYPI_PROJECT, timeout=60) as response:
            project = json.load(response)
    except (urllib.error.URLError, OSError) as error:
        pytest.skip(f"PyPI is out of reach ({error}): set RAY_SERVE_NPU_VLLM_ASCEND_GIT instead")
    return {
        version: [{**f, "url": urllib.parse.urljoin(PYPI_PROJECT, str(f["url"]))} for f in files]
        for version, files in project["releases"].items()
    }


def _sdist_files(release: str, pypi: dict[str, list[dict[str, object]]], cache: Path) -> Path:
    """The release's sdist, checked against its recorded SHA-256, with its Python files
    unpacked under ``cache``; the unpacked package's root."""
    record = SDISTS[release]
    archive = cache / record["sdist"]
    if not archive.exists() or _sha256(archive) != record["sha256"]:
        (published,) = [f for f in pypi[record["pypi_version"]] if f["filename"] == record["sdist"]]
        cache.mkdir(parents=True, exist_ok=True)
        partial = archive.with_name(f"{archive.name}.partial")
        with urllib.request.urlopen(str(published["url"]), timeout=300) as response:
            partial.write_bytes(response.read())
        partial.replace(archive)
    assert _sha256(archive) == record["sha256"], f"{archive} is not the sdist recorded"
    root = cache / release
    shutil.rmtree(root, ignore_errors=True)  # what an earlier sdist left there goes
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if m.name.endswith(".py")]
        sdist.extractall(root, members=members, filter="data")
    (package,) = root.iterdir()
    return package


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("release", available_releases())
def test_additional_config_keys_are_what_the_release_reads(
    release: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """known_keys and known_sub_keys are the tool's output for the release: every key the
    source reads, with its line, and no other."""
    source: keys.Source
    # A release whose tag no clone here holds is read in its sdist only.
    if GIT_DIR and "tag_not_readable" not in SDISTS[release]:
        source = keys.GitTag(Path(GIT_DIR), release)
    else:
        pypi = request.getfixturevalue("pypi_files")
        # Kept between runs where the suite keeps its tiny models (RAY_SERVE_NPU_TMPDIR).
        kept = os.environ.get("RAY_SERVE_NPU_TMPDIR")
        cache = Path(kept) if kept else tmp_path_factory.getbasetemp()
        package = _sdist_files(release, pypi, cache / "vllm-ascend-sdists")
        source = keys.PackageDir(package, exclude=SDISTS[release]["not_in_tag"])
    # The files read are the tag's: the sdist's bytes hash to the tag's tree (or, where no
    # copy of the tag is readable, to the sdist's own, recorded beside its SHA-256).
    assert keys.tree_digest(source) == SDISTS[release]["tree_digest"]
    assert keys.differences(source, release) == []
