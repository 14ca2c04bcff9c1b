"""Show how each page is tested, from the same markers the docs harness runs the page by.

Every page with code blocks gets a note at its end: how many blocks run on the
fake-NPU tier, how many are checked statically and how many are skipped (with the
markers' reasons), and what Ascend runners would run. The ``test-status-table``
directive renders the same for every page, block by block (docs/testing.md).

Both come from :func:`ray_serve_npu_tooling.harness.status.page_status`, the outcomes
the harness holds every block to: a test run fails any block whose outcome differs,
so a page can't claim a run the suite does not make. The note's text is in the
build's language (English, or Chinese for ``-D language=zh_CN``); the markers'
reasons are quoted as the pages write them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from docutils import nodes
from editions import edition_texts, inline_code, table_frame
from ray_serve_npu_tooling.harness.status import (
    Mode,
    Outcome,
    PageStatus,
    Status,
    calls_docker,
    page_status,
)
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: The label of the table's section on docs/testing.md, which every note links to.
TABLE_LABEL = "testing-status"
_MARKER_KIND = re.compile(r"^\[[\w-]+\] ")

#: Every sentence the notes and the table show, per language; ``code`` in backticks.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Test status",
        "section": "How this page is tested",
        "blocks": "This page has {n} code blocks.",
        "shown": "Shown only, with no checker for their language: {n}.",
        "fake": "Fake-NPU tier",
        "fake_what": "real Ray, real vLLM CPU engine, fake devices; "
        "`pytest --run-recipes` on a host without NPUs",
        "ascend": "Ascend runners",
        "ascend_what": "`pytest --run-recipes` on NPUs",
        "no_ascend_run": "No Ascend run has been recorded yet.",
        "docker": "{n} of the blocks that would run call `docker`, which the runners' "
        "container does not have, so they can't run there as the workflow stands.",
        "reasons": "Skipped: {reasons}.",
        "reason_count": "{reason} ({n} blocks)",
        "reason_sep": "; ",
        "every_page": "Every page's status: ",
        "count_sep": ", ",
        "end": ".",
        "open": " (",
        "close": "): ",
        "space": " ",
        Status.RUN.name: "{n} run",
        "would_run": "{n} would run",
        Status.STATIC.name: "{n} checked statically",
        Status.SKIPPED.name: "{n} skipped",
        "cell_run": "runs",
        "cell_would_run": "would run",
        "cell_docker": "would run, but calls `docker`",
        "cell_static": "checked statically",
        "cell_skipped": "skipped: {reason}",
        "cell_shown": "shown only",
        "head_page": "Page",
        "head_block": "Block",
        "head_fake": "Fake-NPU tier",
        "head_ascend": "Ascend runners (declared; no run recorded yet)",
        "block": "line {line}, `{label}`",
    },
    "zh_CN": {
        "title": "测试状态",
        "section": "本页如何测试",
        "blocks": "本页有 {n} 个代码块。",
        "shown": "仅作展示、没有对应语言检查器的：{n} 个。",
        "fake": "模拟 NPU 层",
        "fake_what": "真实的 Ray、真实的 vLLM CPU 引擎、模拟的设备；"
        "在没有 NPU 的主机上运行 `pytest --run-recipes`",
        "ascend": "昇腾 runner",
        "ascend_what": "在 NPU 上运行 `pytest --run-recipes`",
        "no_ascend_run": "目前还没有任何昇腾运行的记录。",
        "docker": "其中 {n} 个将运行的代码块调用 `docker`，而 runner 的容器里没有 Docker，"
        "因此按现在的工作流它们无法在那里运行。",
        "reasons": "跳过原因：{reasons}。",
        "reason_count": "{reason}（{n} 个）",
        "reason_sep": "；",
        "every_page": "所有页面的测试情况：",
        "count_sep": "，",
        "end": "。",
        "open": "（",
        "close": "）：",
        "space": "",
        Status.RUN.name: "运行 {n} 个",
        "would_run": "将运行 {n} 个",
        Status.STATIC.name: "静态检查 {n} 个",
        Status.SKIPPED.name: "跳过 {n} 个",
        "cell_run": "运行",
        "cell_would_run": "将运行",
        "cell_docker": "将运行，但调用 `docker`",
        "cell_static": "静态检查",
        "cell_skipped": "跳过：{reason}",
        "cell_shown": "仅展示",
        "head_page": "页面",
        "head_block": "代码块",
        "head_fake": "模拟 NPU 层",
        "head_ascend": "昇腾 runner（按标记声明；尚无运行记录）",
        "block": "第 {line} 行，`{label}`",
    },
}


def texts(language: str | None) -> dict[str, str]:
    """The texts of the build's language; English where the site has no translation."""
    return edition_texts(TEXTS, language)


def _paragraph(*parts: nodes.Node | str) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for part in parts:
        paragraph += inline_code(part) if isinstance(part, str) else [part]
    return paragraph


def _reason(outcome: Outcome) -> str:
    """The marker's own reason, without the ``[skip]`` the harness's summary adds."""
    return _MARKER_KIND.sub("", outcome.reason)


def _counts(status: PageStatus, mode: Mode, words: dict[str, str]) -> str:
    counts = status.counts(mode)
    shown = []
    for state in (Status.RUN, Status.STATIC, Status.SKIPPED):
        if counts[state]:
            key = "would_run" if state is Status.RUN and mode is Mode.ASCEND else state.name
            shown.append(words[key].format(n=counts[state]))
    return words["count_sep"].join(shown) or "0"


def _reasons(status: PageStatus, mode: Mode, words: dict[str, str]) -> str:
    reasons = {}
    for _, outcome in status.outcomes(mode):
        if outcome.status is Status.SKIPPED:
            reason = _reason(outcome)
            reasons[reason] = reasons.get(reason, 0) + 1
    listed = [
        words["reason_count"].format(reason=reason, n=n) if n > 1 else reason
        for reason, n in reasons.items()
    ]
    return words["reasons"].format(reasons=words["reason_sep"].join(listed)) if listed else ""


def _reason_set(status: PageStatus, mode: Mode) -> set[str]:
    return {o.reason for _, o in status.outcomes(mode) if o.status is Status.SKIPPED}


def _ref(target: str, reftype: str, docname: str) -> addnodes.pending_xref:
    """A reference resolved at write time: a page's title, or a section's."""
    ref = addnodes.pending_xref(
        "", refdomain="std", reftype=reftype, reftarget=target, refexplicit=False,
        refwarn=True, refdoc=docname,
    )  # fmt: skip
    ref += nodes.inline(target, target.lstrip("/"))
    return ref


def page_note(status: PageStatus, words: dict[str, str], docname: str) -> nodes.admonition:
    """The note at a page's end."""
    note = nodes.admonition(classes=["note", "test-status"])
    note += nodes.title(words["title"], words["title"])
    counts = status.counts(Mode.FAKE)
    intro = words["blocks"].format(n=status.blocks)
    if counts[Status.SHOWN]:
        intro += words["space"] + words["shown"].format(n=counts[Status.SHOWN])
    note += _paragraph(intro)
    items = nodes.bullet_list()
    for mode, label in ((Mode.FAKE, "fake"), (Mode.ASCEND, "ascend")):
        paragraph = _paragraph(
            nodes.strong(words[label], words[label]),
            words["open"] + words[f"{label}_what"] + words["close"],
            _counts(status, mode, words) + words["end"],
        )
        # On Ascend runners a block is skipped only where the fake tier skips it too, for the
        # same reason: list the reasons again only if that ever stops being so.
        listed = mode is Mode.FAKE or not _reason_set(status, Mode.ASCEND) <= _reason_set(
            status, Mode.FAKE
        )
        sentences = [_reasons(status, mode, words) if listed else ""]
        if mode is Mode.ASCEND:
            docker = status.runs_docker(mode)
            sentences.append(words["docker"].format(n=docker) if docker else "")
            sentences.append(words["no_ascend_run"])
        for sentence in filter(None, sentences):
            paragraph += inline_code(words["space"] + sentence)
        items += nodes.list_item("", paragraph)
    note += items
    note += _paragraph(words["every_page"], _ref(TABLE_LABEL, "ref", docname), words["end"])
    return note


def _cell(*parts: nodes.Node | str) -> nodes.entry:
    return nodes.entry("", _paragraph(*parts))


def _outcome_cell(block: Any, outcome: Outcome, mode: Mode, words: dict[str, str]) -> str:
    if outcome.status is Status.RUN:
        if mode is Mode.FAKE:
            return words["cell_run"]
        return words["cell_docker"] if calls_docker(block) else words["cell_would_run"]
    if outcome.status is Status.STATIC:
        return words["cell_static"]
    if outcome.status is Status.SHOWN:
        return words["cell_shown"]
    return words["cell_skipped"].format(reason=_reason(outcome))


def status_table(
    statuses: Iterable[tuple[str, PageStatus]], words: dict[str, str], docname: str
) -> nodes.table:
    """Every block of every page, with its outcome on each tier."""
    table, body = table_frame(
        "test-status-table",
        [words["head_page"], words["head_block"], words["head_fake"], words["head_ascend"]],
        (20, 16, 32, 32),
    )
    for page, status in statuses:
        pairs = zip(status.fake, status.ascend, strict=True)
        for index, ((block, fake), (_, ascend)) in enumerate(pairs):
            row = nodes.row()
            if index == 0:
                page_cell = _cell(_ref("/" + page, "doc", docname))
                page_cell["morerows"] = status.blocks - 1
                row += page_cell
            row += _cell(words["block"].format(line=block.line, label=block.label))
            row += _cell(_outcome_cell(block, fake, Mode.FAKE, words))
            row += _cell(_outcome_cell(block, ascend, Mode.ASCEND, words))
            body += row
    return table


def _page_status(app: Sphinx, docname: str) -> PageStatus | None:
    """The page's declared outcomes, as the harness reads them; None for a page it doesn't read."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return None
    status = page_status(path.read_text(encoding="utf-8"), path, Path(app.srcdir))
    return status if status.blocks else None


class TestStatusTable(SphinxDirective):
    """``{test-status-table}``: every page's blocks and their outcome on each tier."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        statuses = []
        for docname in sorted(self.env.found_docs):
            status = _page_status(self.env.app, docname)
            if status is not None:
                # Rebuild the table when any page's markers change.
                self.env.note_dependency(str(status.page))
                statuses.append((docname, status))
        return [status_table(statuses, texts(self.config.language), self.env.docname)]


#: The id of a page's own section on how it is tested ("How this page is tested").
TESTED_SECTION = "how-this-page-is-tested"


def place_note(doctree: nodes.document, note: nodes.Element, heading: str) -> bool:
    """Put ``note`` at the end of the page, after the steps and the reference (a reader
    meets the task first): in the page's own section on how it is tested, its last top-level
    section, or else in a new last section titled ``heading``. False for a page without a
    section."""
    page = next(iter(doctree.findall(nodes.section)), None)
    if page is None:
        return False
    sections = [child for child in page.children if isinstance(child, nodes.section)]
    if sections and TESTED_SECTION in sections[-1]["ids"]:
        sections[-1].append(note)
        return True
    section = nodes.section(ids=[TESTED_SECTION], names=[heading.lower()])
    section += nodes.title(heading, heading)
    section += note
    page.append(section)
    return True


def _add_note(app: Sphinx, doctree: nodes.document) -> None:
    if app.builder.name == "gettext":
        return  # generated in the build's language, not translated through the catalogs
    docname = app.env.docname
    status = _page_status(app, docname)
    if status is not None:
        words = texts(app.config.language)
        place_note(doctree, page_note(status, words, docname), words["section"])


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("test-status-table", TestStatusTable)
    app.connect("doctree-read", _add_note)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
