"""The release data files: each loads, a bad one names its field and fix, and code reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ray_serve_npu import compat, hardware
from ray_serve_npu.check.rules import BASE_FILE, RULES_DIR, load_rules
from ray_serve_npu.releases import (
    COMPOSE_RELEASE,
    DATA_DIR,
    GUIDE_RELEASE,
    OPERATING_SYSTEMS,
    PATHS_FILE,
    RELEASES,
    SERVE_LLM_RELEASE,
    BadReleaseDataError,
    load_path_releases,
    load_release_file,
    release,
)
from ray_serve_npu.releases.loader import PACKAGE_DIR

SUPPORTED = ("v0.22.1rc1", "v0.23.0", "v0.25.1rc1", "v0.26.0rc1", "v0.27.1rc1")


def test_every_supported_release_loads() -> None:
    assert tuple(RELEASES) == SUPPORTED
    for tag in SUPPORTED:
        loaded = load_release_file(DATA_DIR / f"{tag}.yaml")
        assert loaded == RELEASES[tag] == release(tag)
        assert loaded.tag == tag


def test_each_path_pins_the_release_paths_yaml_names() -> None:
    # Ray Serve LLM: the exact pairing (Ray 2.57.1 pins v0.25.1rc1's vLLM); Compose: the
    # final release; the guide's corrections: the seed release it names.
    assert SERVE_LLM_RELEASE.tag == "v0.25.1rc1"
    assert COMPOSE_RELEASE.tag == "v0.23.0"
    assert GUIDE_RELEASE.tag == "v0.22.1rc1"
    assert compat.VLLM_ASCEND is SERVE_LLM_RELEASE


def test_a_path_pinning_an_unsupported_release_names_the_field_and_the_fix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "paths.yaml"
    text = PATHS_FILE.read_text()
    assert text.count("  release: v0.23.0\n") == 1
    path.write_text(text.replace("  release: v0.23.0\n", "  release: v0.24.0rc1\n"))
    with pytest.raises(BadReleaseDataError) as error:
        load_path_releases(path)
    message = str(error.value)
    assert f"{path}: field compose.release: 'v0.24.0rc1' is not a supported release" in message
    assert "fix: name one of v0.22.1rc1, v0.23.0, v0.25.1rc1" in message


def _paths_file(tmp_path: Path, serve_llm: str, compose: str, why: str = "a reason") -> Path:
    path = tmp_path / "paths.yaml"
    path.write_text(
        f"serve_llm:\n  release: {serve_llm}\n  why: {why}\n"
        f"compose:\n  release: {compose}\n  why: {why}\n"
        f"community_guide:\n  release: v0.22.1rc1\n  why: {why}\n"
    )
    return path


def test_a_ray_path_on_a_release_no_ray_pairs_with_is_refused(tmp_path: Path) -> None:
    path = _paths_file(tmp_path, serve_llm="v0.23.0", compose="v0.23.0")
    with pytest.raises(BadReleaseDataError) as error:
        load_path_releases(path)
    message = str(error.value)
    assert "field serve_llm.release: v0.23.0 pairs with no Ray" in message
    assert (
        "fix: name a release the data pairs with a Ray (v0.22.1rc1, v0.25.1rc1, v0.26.0rc1, "
        "v0.27.1rc1)" in message
    )


def test_a_compose_path_on_a_release_without_rules_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for source in DATA_DIR.glob("v*.yaml"):
        text = source.read_text()
        if source.stem == "v0.25.1rc1":
            text = text.replace("rules: check/rules/v0.25.1rc1.yaml", "rules: null")
        (data / source.name).write_text(text)
    path = _paths_file(tmp_path, serve_llm="v0.22.1rc1", compose="v0.25.1rc1")
    with pytest.raises(BadReleaseDataError, match=r"field compose\.release: v0\.25\.1rc1 has no"):
        load_path_releases(path, data)
    # The same file names a release with rules: it loads.
    assert load_path_releases(_paths_file(tmp_path, "v0.22.1rc1", "v0.23.0"), data)


def test_a_path_with_an_empty_reason_is_refused(tmp_path: Path) -> None:
    path = _paths_file(tmp_path, serve_llm="v0.22.1rc1", compose="v0.23.0", why="''")
    with pytest.raises(BadReleaseDataError, match=r"field serve_llm\.why: String should have"):
        load_path_releases(path)


def test_a_path_without_its_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "paths.yaml"
    path.write_text(
        "serve_llm:\n  release: v0.22.1rc1\ncompose:\n  release: v0.23.0\n  why: x\n"
        "community_guide:\n  release: v0.22.1rc1\n  why: x\n"
    )
    with pytest.raises(
        BadReleaseDataError, match=r"field serve_llm\.why: Field required; fix: add"
    ):
        load_path_releases(path)


def test_an_unknown_release_names_the_supported_ones() -> None:
    with pytest.raises(LookupError, match=r"'v0\.24\.0rc1' is not a supported release.*v0\.23\.0"):
        release("v0.24.0rc1")
    # A published release whose files can't be read here says why (unread.yaml).
    with pytest.raises(LookupError) as error:
        release("v0.30.0")
    assert "'v0.30.0' is not a supported release (its files can't be read here: the copy" in str(
        error.value
    )


@pytest.mark.parametrize("tag", SUPPORTED)
def test_each_release_has_a2_and_a3_images_and_runs(tag: str) -> None:
    data = release(tag)
    for kind in ("A2", "A3"):
        for os in OPERATING_SYSTEMS:
            assert data.image(kind, os).startswith(f"{data.image_repository}:{tag}")
        run = data.run(kind)
        # The tutorial's run fits on one node of its kind.
        node = hardware.NODE_KINDS[kind]
        assert run.tensor_parallel_size * run.data_parallel_size <= node.devices_per_node
        assert run.env["LD_PRELOAD"].startswith(data.jemalloc_paths["ubuntu"])


def test_the_950dt_image_exists_only_where_the_release_publishes_it() -> None:
    assert release("v0.23.0").image("950DT") == "quay.io/ascend/vllm-ascend:v0.23.0-a5"
    assert (
        release("v0.23.0").image("950DT", "openeuler")
        == "quay.io/ascend/vllm-ascend:v0.23.0-a5-openeuler"
    )
    for tag in ("v0.22.1rc1", "v0.25.1rc1"):
        with pytest.raises(LookupError, match=r"publishes no image for node kind '950DT'.*A5"):
            release(tag).image("950DT")


def test_hardware_and_compat_read_the_release_data() -> None:
    for data in RELEASES.values():
        for kind in (hardware.A2, hardware.A3):
            assert hardware.image(data.tag, kind) == data.image(kind.name)
            assert hardware.image(data.tag, kind, openeuler=True) == data.image(
                kind.name, "openeuler"
            )
    assert hardware.IMAGE_REPOSITORY == SERVE_LLM_RELEASE.image_repository
    assert hardware.JEMALLOC_PATHS == SERVE_LLM_RELEASE.jemalloc_paths
    assert compat.VLLM_ASCEND.vllm == SERVE_LLM_RELEASE.stack.vllm.version


# -- A bad data file: the error names the file, the field and the fix ---------


def _planted(tmp_path: Path, old: str, new: str, tag: str = "v0.23.0") -> Path:
    path = tmp_path / f"{tag}.yaml"
    text = (DATA_DIR / f"{tag}.yaml").read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return path


def test_a_bad_version_names_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    path = _planted(tmp_path, "    version: 9.1.0\n", "    version: nine-one\n")
    with pytest.raises(BadReleaseDataError) as error:
        load_release_file(path)
    message = str(error.value)
    assert str(path) in message
    assert "field stack.cann.version" in message
    assert "'nine-one' is not a version; fix: write it as the release states it" in message


def test_a_misspelt_field_is_named_with_the_fields_allowed_there(tmp_path: Path) -> None:
    path = _planted(tmp_path, "  openeuler_source:", "  openeuler_src:")
    with pytest.raises(BadReleaseDataError) as error:
        load_release_file(path)
    message = str(error.value)
    assert "field jemalloc.openeuler_src: Extra inputs are not permitted" in message
    assert "fix: remove jemalloc.openeuler_src or correct its name" in message
    assert "ubuntu_source, openeuler_source" in message
    # The field it should have been is now missing, and named as such.
    assert (
        "field jemalloc.openeuler_source: Field required; fix: add jemalloc.openeuler_source"
        in (message)
    )


def test_an_unquoted_version_that_yaml_reads_as_a_number_says_to_quote_it(tmp_path: Path) -> None:
    path = _planted(tmp_path, "    version: 2.10.0.post4\n", "    version: 2.10\n")
    with pytest.raises(BadReleaseDataError) as error:
        load_release_file(path)
    assert "field stack.torch_npu.version: Input should be a valid string; fix: quote" in str(
        error.value
    )


def test_a_tutorial_run_without_its_parallelism_is_refused(tmp_path: Path) -> None:
    path = _planted(tmp_path, "        tensor-parallel-size: 8\n", "")
    with pytest.raises(BadReleaseDataError, match=r"field deepseek_v4_flash\.runs\.A2\.args: "):
        load_release_file(path)


def test_a_pairing_with_a_ray_but_no_match_is_refused(tmp_path: Path) -> None:
    path = _planted(tmp_path, "  ray: null\n", "  ray: 2.56.1\n")
    with pytest.raises(BadReleaseDataError, match=r"field pairing: ray and match go together"):
        load_release_file(path)


def test_a_file_named_for_another_tag_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v0.24.0rc1.yaml"
    shutil.copy(DATA_DIR / "v0.23.0.yaml", path)
    with pytest.raises(BadReleaseDataError, match=r"field tag: 'v0\.23\.0' differs from the file"):
        load_release_file(path)


def test_a_rules_path_that_is_no_file_is_refused(tmp_path: Path) -> None:
    path = _planted(
        tmp_path,
        "rules: check/rules/v0.22.1rc1.yaml",
        "rules: check/rules/v0.22.1.yaml",
        tag="v0.22.1rc1",
    )
    with pytest.raises(BadReleaseDataError, match=r"field rules: .* relative to src/ray_serve_npu"):
        load_release_file(path)


def test_broken_yaml_is_named(tmp_path: Path) -> None:
    path = tmp_path / "v0.23.0.yaml"
    path.write_text("tag: [v0.23.0\n")
    with pytest.raises(BadReleaseDataError, match=r"v0\.23\.0\.yaml: not valid YAML"):
        load_release_file(path)


# -- The checker's rules files agree with the release data --------------------


def test_each_rules_file_belongs_to_a_release() -> None:
    pointed = {data.rules: data for data in RELEASES.values() if data.rules is not None}
    files = {
        str(path.relative_to(PACKAGE_DIR))
        for path in RULES_DIR.glob("*.yaml")
        if path.name != BASE_FILE  # every release's rules, once
    }
    assert set(pointed) == files, (
        "every rules file is some release's, and no release points nowhere"
    )
    for data in pointed.values():
        # The rule file states no other fact of the release: its vLLM and images are
        # the release data's (check/rules.py).
        assert load_rules(data.tag).release == data.tag
