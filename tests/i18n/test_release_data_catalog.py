"""The data sentences the release matrix and the pairings table quote are translated in
each edition, through their own catalogue (docs/_ext/data_catalog.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ray_serve_npu import compat
from ray_serve_npu.releases import PATH_RELEASES, RELEASES, UNREAD_RELEASES
from ray_serve_npu.releases.pairings import pairings

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from data_catalog import (  # noqa: E402
    MissingTranslation,
    catalog_path,
    normalized,
    translator,
    write_catalog,
)
from release_matrix import (  # noqa: E402
    data_sentences,
    in_edition,
    ray_pairings,
    release_matrix,
    texts,
    unread_releases,
)

LOCALE = DOCS / "locale"


def _sentences() -> list[str]:
    return data_sentences(RELEASES.values(), UNREAD_RELEASES.values(), PATH_RELEASES, pairings())


def test_the_catalogue_holds_exactly_the_data_sentences_each_translated(tmp_path: Path) -> None:
    sentences = _sentences()
    assert len(sentences) > 30, "test setup: the tables quote the data's sentences"
    translate = translator(LOCALE, "zh_CN")
    # Each has a translation (translate raises without one); a bare command is its own.
    same = [s for s in sentences if translate(s) == normalized(s)]
    assert all(s.startswith("pip install ") for s in same), same
    # Rewriting it from the data changes nothing: no sentence missing, none left over.
    copy = tmp_path / "locale"
    shutil.copytree(LOCALE / "zh_CN", copy / "zh_CN")
    assert write_catalog(copy, "zh_CN", sentences) == []
    written = catalog_path(copy, "zh_CN").read_text()
    assert written == catalog_path(LOCALE, "zh_CN").read_text()


def test_a_sentence_without_a_translation_stops_the_build_naming_it(tmp_path: Path) -> None:
    missing = write_catalog(tmp_path, "zh_CN", ["A new  reason,\n  not yet translated."])
    assert missing == ["A new reason, not yet translated."]
    with pytest.raises(MissingTranslation) as error:
        translator(tmp_path, "zh_CN")("A new reason, not yet translated.")
    message = str(error.value)
    assert "'A new reason, not yet translated.'" in message and "nox -s docs-po" in message
    # English needs no catalogue.
    assert translator(tmp_path, "en")("A  reason.") == "A reason."


def test_the_chinese_tables_quote_no_english_data_sentence() -> None:
    shown = in_edition(
        RELEASES.values(),
        UNREAD_RELEASES.values(),
        PATH_RELEASES,
        pairings(),
        translator(LOCALE, "zh_CN"),
    )
    releases, unread, pins, measured = shown
    words = texts("zh_CN")
    rendered = " ".join(
        [release_matrix(releases, words, pins, measured).astext()]
        + [node.astext() for node in unread_releases(unread, measured, words)]
        + [
            node.astext()
            for node in ray_pairings(compat.RAY_VLLM_PINS, releases, unread, measured, words)
        ]
    )
    flat = " ".join(rendered.split())
    for sentence in _sentences():
        if not sentence.startswith("pip install "):
            # A table shows `code` as a literal, without its backticks.
            assert normalized(sentence).replace("`", "") not in flat, sentence
    assert "受支持版本中唯一的正式版本" in flat


def test_a_translation_in_progress_survives_a_rewrite(tmp_path: Path) -> None:
    from babel.messages.pofile import read_po, write_po

    write_catalog(tmp_path, "zh_CN", ["One reason."])
    path = catalog_path(tmp_path, "zh_CN")
    with path.open("rb") as stream:
        catalog = read_po(stream)
    catalog["One reason."].string = "一个原因（草稿）"
    catalog["One reason."].flags.add("fuzzy")
    with path.open("wb") as stream:
        write_po(stream, catalog, width=0, omit_header=True)
    # Still counted as missing, and still there.
    assert write_catalog(tmp_path, "zh_CN", ["One reason."]) == ["One reason."]
    with path.open("rb") as stream:
        kept = read_po(stream)["One reason."]
    assert kept.string == "一个原因（草稿）" and kept.fuzzy
