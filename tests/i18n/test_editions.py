"""The Chinese edition: every page message translated, and code identical to the English."""

from __future__ import annotations

import contextlib
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.site import EDITIONS, built
from ray_serve_npu_tooling.docs.translations import check_catalogs, check_language, verbatim_parts

DOCS = Path(__file__).resolve().parents[2] / "docs"
_CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_message_of_every_page_is_translated() -> None:
    problems = check_language(DOCS, "zh_CN")
    assert not problems, "run `nox -s docs-po`, then translate:\n" + "\n".join(
        problem.format() for problem in problems
    )


MSGID = "Run `ray start` with {{ npu_resource }}, see {doc}`tuning`."
GOOD = "运行 `ray start`，资源为 {{ npu_resource }}，参见 {doc}`tuning`。"


def _catalog(msgstr: str, flags: str = "") -> str:
    entry = f"{flags}msgid {MSGID!r}\nmsgstr {msgstr!r}\n".replace("'", '"')
    return 'msgid ""\nmsgstr ""\n\n' + entry


def _problems(tmp_path: Path, msgstr: str, flags: str = "") -> list[str]:
    (tmp_path / "page.pot").write_text(_catalog(""))
    (tmp_path / "page.po").write_text(_catalog(msgstr, flags))
    return [problem.what for problem in check_catalogs(tmp_path, tmp_path)]


def test_a_good_translation_passes(tmp_path: Path) -> None:
    assert _problems(tmp_path, GOOD) == []


@pytest.mark.parametrize(
    ("msgstr", "flags", "what"),
    [
        ("", "", "untranslated"),
        (GOOD, "#, fuzzy\n", "fuzzy"),
        (GOOD.replace("ray start", "ray stop"), "", "code or names changed"),
        (GOOD.replace("`ray start`", "ray start"), "", "code or names changed"),
        (GOOD.replace("资源为 {{ npu_resource }}，", ""), "", "code or names changed"),
    ],
)
def test_a_bad_translation_is_reported(tmp_path: Path, msgstr: str, flags: str, what: str) -> None:
    assert _problems(tmp_path, msgstr, flags) == [what]


def test_a_page_without_a_catalog_is_reported(tmp_path: Path) -> None:
    (tmp_path / "page.pot").write_text(_catalog(""))
    assert [p.what for p in check_catalogs(tmp_path, tmp_path / "missing")] == ["untranslated"]


def test_rst_and_myst_roles_compare_equal() -> None:
    assert verbatim_parts(":func:`ray.serve.llm.build_openai_app`") == verbatim_parts(
        "{func}`ray.serve.llm.build_openai_app`"
    )


def test_a_role_title_is_translated_and_its_target_kept() -> None:
    source = "{vllm-ascend}`tutorial <docs/source/tutorials/models/DeepSeek-V4-Flash.md>`"
    translated = "{vllm-ascend}`教程 <docs/source/tutorials/models/DeepSeek-V4-Flash.md>`"
    assert verbatim_parts(source) == verbatim_parts(translated)
    moved = "{vllm-ascend}`教程 <docs/source/tutorials/models/GLM5.md>`"
    assert verbatim_parts(source) != verbatim_parts(moved)


def test_a_role_may_gain_a_translated_title_for_the_same_target() -> None:
    assert verbatim_parts("one {term}`gang`") == verbatim_parts("一个 {term}`组 <gang>`")
    assert verbatim_parts("one {term}`gang`") != verbatim_parts("一个 {term}`组 <bundle>`")


@pytest.fixture(scope="module")
def editions() -> Iterator[dict[str, Path]]:
    """Both editions read into docutils XML, the doctree Sphinx writes HTML from: the
    run's builds (ray_serve_npu_tooling.docs.site.built), which the release notes read too."""
    with contextlib.ExitStack() as stack:
        yield {
            language: stack.enter_context(built(DOCS, builder="xml", language=language))
            for language in EDITIONS
        }


def _pages(edition: Path) -> dict[str, ElementTree.Element]:
    return {
        str(path.relative_to(edition)): ElementTree.parse(path).getroot()
        for path in sorted(edition.rglob("*.xml"))
    }


def _code_blocks(page: ElementTree.Element) -> list[str]:
    return ["".join(block.itertext()) for block in page.iter("literal_block")]


def test_code_blocks_are_identical_in_both_editions(editions: dict[str, Path]) -> None:
    english, chinese = _pages(editions["en"]), _pages(editions["zh_CN"])
    assert english.keys() == chinese.keys()
    assert sum(len(_code_blocks(page)) for page in english.values()) > 50
    for name, page in english.items():
        assert _code_blocks(chinese[name]) == _code_blocks(page), name


def _own_words(element: ElementTree.Element) -> str:
    """The text of ``element`` less its inline code and links: a link's text is the title
    of the page it leads to, translated there, and would make an English sentence count."""
    inner = "".join(
        child.tail or ""
        if child.tag in ("literal", "reference")
        else _own_words(child) + (child.tail or "")
        for child in element
    )
    return (element.text or "") + inner


def test_every_page_of_the_chinese_edition_is_in_chinese(editions: dict[str, Path]) -> None:
    for name, page in _pages(editions["zh_CN"]).items():
        # A generated table's cells are data (a model's name, "16 (8 × 2)"); its
        # sentences have a catalogue and a check of their own (data_catalog).
        cells = {id(p) for entry in page.iter("entry") for p in entry.iter("paragraph")}
        paragraphs = [_own_words(p) for p in page.iter("paragraph") if id(p) not in cells]
        in_chinese = [text for text in paragraphs if _CJK.search(text)]
        assert len(in_chinese) >= len(paragraphs) / 2, name


def test_a_role_made_into_code_is_a_change() -> None:
    assert verbatim_parts("see {doc}`tuning`") != verbatim_parts("参见 `tuning`")
