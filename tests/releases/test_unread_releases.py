"""The releases whose tags can't be read here (``unread.yaml``): what is known of them
loads, and a file that contradicts the supported releases' data is refused by field."""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.releases import (
    RELEASES,
    UNREAD_FILE,
    UNREAD_RELEASES,
    BadReleaseDataError,
    load_unread_releases,
)


def test_the_newer_releases_are_listed_with_their_vllm_and_none_is_supported() -> None:
    assert {tag: data.vllm for tag, data in UNREAD_RELEASES.items()} == {
        "v0.30.0": "0.30.0",
        "v0.32.0rc1": "0.32.0",
    }
    assert not set(UNREAD_RELEASES) & set(RELEASES)
    # A candidate of v0.30.0 is readable (PyPI's archive); none of v0.32.0rc1's is.
    assert "0.30.0rc2" in (UNREAD_RELEASES["v0.30.0"].nearest_read or "")
    assert UNREAD_RELEASES["v0.32.0rc1"].nearest_read is None


def _planted(tmp_path: Path, old: str, new: str) -> Path:
    text = UNREAD_FILE.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / "unread.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_a_release_with_a_data_file_is_refused_naming_the_entry(tmp_path: Path) -> None:
    path = _planted(tmp_path, "  - tag: v0.30.0\n", "  - tag: v0.26.0rc1\n")
    with pytest.raises(BadReleaseDataError) as error:
        load_unread_releases(path)
    assert (
        f"{path}: field releases.0.tag: v0.26.0rc1 has a data file (v0.26.0rc1.yaml), so it is "
        "read, not unread; fix: remove its entry here"
    ) == str(error.value)


def test_a_release_older_than_the_newest_supported_one_is_refused(tmp_path: Path) -> None:
    # Not supported and older than a supported release: a release that was skipped, not
    # one that can't be read yet.
    path = _planted(tmp_path, "  - tag: v0.30.0\n", "  - tag: v0.24.0rc1\n")
    with pytest.raises(BadReleaseDataError) as error:
        load_unread_releases(path)
    assert "releases.0.tag: v0.24.0rc1 is not newer than the newest supported release" in str(
        error.value
    )


def test_a_release_listed_twice_is_refused(tmp_path: Path) -> None:
    path = _planted(tmp_path, "  - tag: v0.32.0rc1\n", "  - tag: v0.30.0\n")
    with pytest.raises(BadReleaseDataError, match="releases.1.tag: v0.30.0 is listed twice"):
        load_unread_releases(path)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        (
            'month: "2026-10"',
            "month: October",
            "field releases.0.month: write it as YYYY-MM; got 'October'",
        ),
        ("  - tag: v0.30.0\n", "  - tag: 0.30.0\n", "a vLLM-Ascend tag starts with 'v'"),
        (
            "but not v0.30.0\n",
            "but not v0.30.0.\n",
            "field releases.0.unread_because: unread_because is a clause the checker quotes",
        ),
    ],
    ids=["month", "tag", "full-stop"],
)
def test_a_bad_field_is_named_with_its_fix(tmp_path: Path, old: str, new: str, named: str) -> None:
    with pytest.raises(BadReleaseDataError) as error:
        load_unread_releases(_planted(tmp_path, old, new))
    assert named in str(error.value)
