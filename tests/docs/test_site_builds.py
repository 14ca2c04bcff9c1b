"""A test run builds each builder and edition of the site once (ray_serve_npu_tooling.docs.site).

Sphinx is replaced by a stand-in that counts its builds; the real builds are read by the
editions, release-notes, translation and browser tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs import site
from ray_serve_npu_tooling.docs.site import SITE_CACHE_ENV_VAR, built


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str, str]]:
    """Each build the stand-in made: (out, builder, language)."""
    made: list[tuple[Path, str, str]] = []

    def build(docs: Path, out: Path, *, language: str = "en", builder: str = "html") -> Path:
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.txt").write_text(f"{docs} {builder} {language}")
        made.append((out, builder, language))
        return out

    monkeypatch.setattr(site, "build", build)
    return made


def test_each_builder_and_edition_is_built_once_per_run(
    builds: list[tuple[Path, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SITE_CACHE_ENV_VAR, str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    with built(docs, builder="xml") as first, built(docs, builder="xml") as again:
        assert first == again
    with built(docs, builder="xml", language="zh_CN") as chinese:
        assert chinese != first
    assert [(builder, language) for _, builder, language in builds] == [
        ("xml", "en"), ("xml", "zh_CN")
    ]  # fmt: skip
    # HTML keeps nox -s docs's layout: each translation below the English edition.
    with built(docs, builder="html") as english:
        with built(docs, builder="html", language="zh_CN") as chinese_html:
            assert chinese_html == english / "zh_CN"
    # Other sources are other builds.
    with built(tmp_path / "other-docs", builder="xml") as other:
        assert other != first
    assert len(builds) == 5
    # The run's builds stay for the rest of the run.
    assert (first / "index.txt").is_file()


def test_without_the_runs_cache_a_build_is_the_callers_and_goes_with_it(
    builds: list[tuple[Path, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SITE_CACHE_ENV_VAR, raising=False)
    with built(tmp_path, builder="gettext") as out:
        assert (out / "index.txt").is_file()
    with built(tmp_path, builder="gettext"):
        pass
    assert len(builds) == 2
    assert not out.exists()
