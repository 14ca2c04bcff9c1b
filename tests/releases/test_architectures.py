"""The architecture classes of the model families, read from the release data (no engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.architectures import (
    ARCHITECTURES_FILE,
    family_of,
    model_families,
)
from ray_serve_npu.releases.model import BadReleaseDataError
from ray_serve_npu.releases.runs import serve_runs
from ray_serve_npu.releases.tutorials import TUTORIALS_DIR, UPSTREAM_DIR

TAG = SERVE_LLM_RELEASE.tag


#: Tutorial pages of the tag stored in this repository: the package's, and the suite's.
STORED_PAGES = (TUTORIALS_DIR / TAG, Path(__file__).parent / "data" / TAG)


def test_every_stored_page_a_family_cites_says_it_on_that_line() -> None:
    # The other pages were checked against vLLM-Ascend's repository at the tag (git show)
    # when the file was written; this repository keeps no copy of them.
    checked = []
    for family in model_families(TAG):
        for source in family.sources:
            name = source.path.removeprefix(f"{UPSTREAM_DIR}/")
            for stored in (folder / name for folder in STORED_PAGES):
                if source.path.startswith(UPSTREAM_DIR) and stored.is_file():
                    line = stored.read_text(encoding="utf-8").splitlines()[source.line - 1]
                    assert source.says in line, (family.family, source)
                    checked.append(name)
    assert sorted(checked) == ["DeepSeek-V4-Flash.md", "DeepSeek-V4-Pro.md"]


def test_each_model_the_models_page_names_has_at_most_one_family() -> None:
    models = {run.model for run in serve_runs(TAG)}
    for model in models:
        matching = [f.family for f in model_families(TAG) if f.matches(model)]
        assert len(matching) <= 1, (model, matching)
    # The families the issue names are classed: Qwen3 dense and MoE, DeepSeek, GLM, Kimi.
    classed = {family_of(model, TAG).family for model in models if family_of(model, TAG)}
    assert {
        "Qwen3 dense",
        "Qwen3-30B-A3B",
        "DeepSeek-R1",
        "GLM-5 and GLM-5.1",
        "Kimi-K2-Thinking",
    } <= classed


def test_a_family_file_with_a_bad_class_names_the_field(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray_serve_npu.releases import architectures

    folder = tmp_path / "v9.9.9"  # type: ignore[operator]
    folder.mkdir()
    (folder / ARCHITECTURES_FILE).write_text(
        "families:\n  - family: X\n    match: 'x'\n    architecture: sparse\n    sources: []\n"
    )
    monkeypatch.setattr(architectures, "TUTORIALS_DIR", tmp_path)
    with pytest.raises(BadReleaseDataError, match=r"families\.0\.architecture"):
        architectures.model_families("v9.9.9")


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("vllm-ascend/DeepSeek-R1-0528-W8A8", "DeepSeek-R1"),
        # Dense models distilled from DeepSeek-R1: not the MoE the R1 page describes.
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", None),
        ("zai-org/GLM-5", "GLM-5 and GLM-5.1"),
        ("zai-org/GLM-5.1", "GLM-5 and GLM-5.1"),
        ("Eco-Tech/GLM-5.1-w8a8", "GLM-5 and GLM-5.1"),
        ("zai-org/GLM-5.2", "GLM-5.2"),
        ("Eco-Tech/GLM-4.7-W8A8-floatmtp", "GLM-4.x"),
        # GLM-4's vision models have pages of their own, not GLM4.x.md.
        ("zai-org/GLM-4.1V-9B-Thinking", None),
        ("Qwen/Qwen3-32B", "Qwen3 dense"),
        ("Qwen/Qwen3-320B", None),
    ],
)
def test_a_family_matches_its_own_models_and_not_their_neighbours(
    model: str, family: str | None
) -> None:
    found = family_of(model, TAG)
    assert (found.family if found else None) == family
