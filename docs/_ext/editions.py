"""Link each page to the same page in the site's other editions.

The English edition is the site's root and each translation is a directory below
it (``zh_CN/``), so a page's other editions are at fixed relative paths. The theme's
navbar shows the links through ``_templates/language-switcher.html``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docutils import nodes
from ray_serve_npu_tooling.docs.pages import NUMBER_WORDS
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.search.zh import SearchChinese

#: Language code -> (label in that language, directory below the site's root).
EDITIONS: dict[str, tuple[str, str]] = {
    "en": ("English", ""),
    "zh_CN": ("中文", "zh_CN/"),
}


def edition_texts(texts: Mapping[str, dict[str, str]], language: str | None) -> dict[str, str]:
    """Generated text in the build's edition; English where the site has no translation."""
    return texts.get(language or "en", texts["en"])


def inline_code(text: str) -> list[nodes.Node]:
    """``text`` as docutils nodes, each part in backticks as inline code."""
    parts = text.split("`")
    return [
        nodes.literal(part, part) if index % 2 else nodes.Text(part)
        for index, part in enumerate(parts)
        if part
    ]


def code_cell(*paragraphs: str) -> nodes.entry:
    """A table cell of generated text: one paragraph per text, backticks as inline code."""
    entry = nodes.entry()
    for text in paragraphs:
        entry += nodes.paragraph("", "", *inline_code(text))
    return entry


def table_frame(
    name: str, headings: list[str], widths: tuple[int, ...]
) -> tuple[nodes.table, nodes.tbody]:
    """An empty table of class ``name`` with its heading row (each heading's `code` as
    code); the caller fills the body it returns."""
    table = nodes.table(classes=[name])
    group = nodes.tgroup(cols=len(headings))
    table += group
    group += [nodes.colspec(colwidth=width) for width in widths]
    head = nodes.thead()
    head += nodes.row("", *(code_cell(heading) for heading in headings))
    group += head
    body = nodes.tbody()
    group += body
    return table, body


def edition_links(language: str, target_uri: str, depth: int) -> list[dict[str, Any]]:
    """Links from one page (``target_uri``, ``depth`` directories down) to every edition."""
    site_root = "../" * depth + ("../" if EDITIONS[language][1] else "")
    return [
        {
            "language": code,
            "hreflang": code.replace("_", "-"),
            "label": label,
            "url": f"{site_root}{directory}{target_uri}",
            "current": code == language,
        }
        for code, (label, directory) in EDITIONS.items()
    ]


def _page_context(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    language = app.config.language or "en"
    if language not in EDITIONS:
        return
    target = app.builder.get_target_uri(pagename)
    context["editions"] = edition_links(language, target, pagename.count("/"))


def _catalogs_outside_the_sources(app: Sphinx, config: Config) -> None:
    """Read the translations from a copy beside the doctrees.

    Sphinx compiles each ``.po`` into a ``.mo`` next to it; pointed at a copy under
    the build directory, it leaves the source tree as it found it.
    """
    if (config.language or "en") == "en":
        return
    copy = Path(app.doctreedir) / "locale"
    for source in config.locale_dirs:
        shutil.copytree(
            Path(app.confdir) / source,
            copy,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("*.mo"),
        )
    config.locale_dirs = [str(copy)]


class SearchChineseWithoutStemmer(SearchChinese):
    """Sphinx 9.0's Chinese search, minus its broken JavaScript stemmer.

    Sphinx 9.0.4 ships the English stemmer for Chinese pages but names it
    ``ChineseStemmer`` in ``language_data.js``, so the search page fails with a
    ReferenceError. The index holds every word unstemmed as well, so the default
    pass-through stemmer still finds ``NPU`` and the other Latin terms.
    """

    js_stemmer_rawcode = ""


def _number_words(app: Sphinx, config: Config) -> None:
    """Add ``<name>_words`` for every whole-number substitution ``<name>``.

    English prose spells out zero to nine (Ray's style guide); other editions
    write digits, so that a translation never shows an English word.
    """
    english = config.language in (None, "en")
    config.myst_substitutions = {
        **config.myst_substitutions,
        **{
            f"{name}_words": _english_number(value) if english else value
            for name, value in config.myst_substitutions.items()
            if isinstance(value, str) and value.isdigit()
        },
    }


def _english_number(digits: str) -> str:
    number = int(digits)
    return NUMBER_WORDS[number] if number < len(NUMBER_WORDS) else digits


def setup(app: Sphinx) -> dict[str, object]:
    app.add_search_language(SearchChineseWithoutStemmer)
    app.connect("config-inited", _catalogs_outside_the_sources)
    app.connect("config-inited", _number_words)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
