"""Declared test status: what each marker declares, the notes and table the site shows from it,
and the suite failing a block whose outcome differs from what its page declares."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness import scenario
from ray_serve_npu_tooling.harness.blocks import read_page
from ray_serve_npu_tooling.harness.markers import MarkerKind
from ray_serve_npu_tooling.harness.status import Mode, Status, declared_outcomes, page_status
from ray_serve_npu_tooling.harness.status import calls_docker as status_calls_docker

from .test_pages import PAGE, SeededRepo, seeded  # noqa: F401 (the fixture)

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SEEDED_DOCS = Path(__file__).parent / "pages" / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
# docs/_ext/test_status.py, the Sphinx extension (imported by path: this module's name is close).
_SPEC = importlib.util.spec_from_file_location("test_status", DOCS / "_ext" / "test_status.py")
assert _SPEC is not None and _SPEC.loader is not None
extension = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(extension)

R, S, K, H = Status.RUN, Status.STATIC, Status.SKIPPED, Status.SHOWN
#: The seeded page's blocks by line, and what each mode declares for them.
SEEDED_DECLARED = {
    #       line: (fake tier, Ascend, static checks only)
    6: (K, R, S),  # % test: cluster
    13: (R, R, S),  # % test: server
    19: (S, S, S),  # literalinclude python
    28: (R, R, S),  # curl
    33: (R, R, S),  # % test: output (json)
    39: (R, R, S),
    46: (R, R, S),
    59: (R, R, S),
    67: (R, R, S),
    75: (R, R, S),
    80: (R, R, S),  # output of the client, after the bash block
    84: (S, S, S),
    92: (S, S, S),
    100: (S, S, S),
    106: (S, S, S),
    111: (S, S, S),
    118: (K, K, S),  # % test: skip
    123: (K, R, S),  # % test: skip-fake
    127: (H, H, H),  # text, shown only
}


def _seeded_status() -> tuple[Path, list]:
    page = SEEDED_DOCS / "page.md"
    return page, read_page(page.read_text(), page, SEEDED_DOCS)


@pytest.mark.parametrize("mode", list(Mode), ids=lambda mode: mode.name)
def test_each_marker_declares_its_outcome_in_each_mode(mode: Mode) -> None:
    _, items = _seeded_status()
    column = {Mode.FAKE: 0, Mode.ASCEND: 1, Mode.STATIC: 2}[mode]
    declared = {block.line: outcome.status for block, outcome in declared_outcomes(items, mode)}
    assert declared == {line: statuses[column] for line, statuses in SEEDED_DECLARED.items()}


def test_skipped_blocks_carry_the_markers_reasons() -> None:
    _, items = _seeded_status()
    reasons = {
        block.line: outcome.reason
        for block, outcome in declared_outcomes(items, Mode.FAKE)
        if outcome.status is Status.SKIPPED
    }
    assert reasons == {
        6: "replaced by the fake tier's own Ray cluster",
        118: "[skip] downloads the weights (hundreds of GB)",
        123: "[skip-fake] npu-smi needs Ascend devices",
    }


def test_the_note_at_a_pages_end_counts_its_blocks_in_both_languages() -> None:
    page, _ = _seeded_status()
    status = page_status(page.read_text(), page, SEEDED_DOCS)
    english = extension.page_note(status, extension.texts("en"), "page").astext()
    assert (
        "This page has 19 code blocks. Shown only, with no checker for their language: 1."
        in english
    )
    assert "real Ray, real vLLM CPU engine, fake devices" in english
    assert "9 run, 6 checked statically, 3 skipped." in english
    # Listed once: Ascend runners skip it for the same reason as the fake tier.
    assert english.count("downloads the weights (hundreds of GB)") == 1
    assert "11 would run, 6 checked statically, 1 skipped." in english
    assert "No Ascend run has been recorded yet." in english
    chinese = extension.page_note(status, extension.texts("zh_CN"), "page").astext()
    assert "本页有 19 个代码块。" in chinese
    assert "运行 9 个，静态检查 6 个，跳过 3 个。" in chinese
    assert "将运行 11 个，静态检查 6 个，跳过 1 个。" in chinese
    assert "目前还没有任何昇腾运行的记录。" in chinese


def test_every_text_of_the_extension_exists_in_every_language() -> None:
    english = extension.TEXTS["en"]
    for language, words in extension.TEXTS.items():
        assert words.keys() == english.keys(), language
        for key, text in words.items():
            fields = set(re.findall(r"\{(\w+)\}", text))
            assert fields == set(re.findall(r"\{(\w+)\}", english[key])), (language, key)


def test_the_table_has_a_row_per_block_and_says_where_docker_is_missing() -> None:
    status = page_status(
        "% test: skip-fake \"needs Docker\"\n```bash\ndocker compose up -d\n```\n",
        DOCS / "page.md", DOCS,
    )  # fmt: skip
    table = extension.status_table([("page", status)], extension.texts("en"), "testing")
    rows = [row.astext().split("\n\n") for row in table.findall(extension.nodes.row)]
    assert rows == [
        ["Page", "Block", "Fake-NPU tier", "Ascend runners (declared; no run recorded yet)"],
        ["page", "line 2, bash-skip-fake", "skipped: needs Docker", "would run, but calls docker"],
    ]


def test_a_host_block_is_skipped_on_both_tiers_with_its_reason() -> None:
    # The fake tier has no Docker engine, and Ascend runners run the suite in the container.
    status = page_status(
        '% test: host "needs Docker on the Ascend host"\n```bash\ndocker compose config\n```\n',
        DOCS / "page.md", DOCS,
    )  # fmt: skip
    for mode in (Mode.FAKE, Mode.ASCEND):
        ((_, outcome),) = status.outcomes(mode)
        assert (outcome.status, outcome.reason) == (
            Status.SKIPPED,
            "[host] needs Docker on the Ascend host",
        ), mode
    assert status.runs_docker(Mode.ASCEND) == 0


def test_a_continuation_line_naming_a_compose_file_is_no_docker_call() -> None:
    status = page_status(
        "```bash\nray-serve-npu check serve_npu.py \\\n  docker-compose.yaml\n```\n",
        DOCS / "page.md", DOCS,
    )  # fmt: skip
    assert status.runs_docker(Mode.ASCEND) == 0


def test_on_ascend_runners_only_the_compose_server_block_would_call_docker() -> None:
    # Every other block that calls docker is marked for the host (or skipped), so that
    # pytest --run-recipes inside the runners' container skips it with its reason. The
    # Compose page's server block is the one left: the fake tier runs its `vllm serve`.
    calling = [
        (page.name, block.kind)
        for page in sorted(DOCS.glob("*.md"))
        for block, outcome in page_status(page.read_text(), page, DOCS).outcomes(Mode.ASCEND)
        if outcome.status is Status.RUN and status_calls_docker(block)
    ]
    assert calling == [("vllm-ascend-compose.md", MarkerKind.SERVER)]


def _fake_run_pages() -> dict[str, int]:
    """Page name → blocks the fake tier runs, for every page of the site."""
    runs = {}
    for page in sorted(DOCS.glob("*.md")):
        status = page_status(page.read_text(), page, DOCS)
        runs[page.stem] = status.counts(Mode.FAKE)[Status.RUN]
    return runs


def _docs_between(text: str, start: str, end: str) -> set[str]:
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), " ".join(text.split()))
    assert found, f"docs/index.md no longer says {start!r}...{end!r}: update this test"
    return set(re.findall(r"\{doc\}`([\w-]+)`", found.group(1)))


def test_the_index_names_the_pages_the_fake_tier_runs_as_the_table_does() -> None:
    index = (DOCS / "index.md").read_text()
    runs = _fake_run_pages()
    claimed = _docs_between(index, "runs the commands of", "on the fake-NPU tier")
    nothing = _docs_between(index, "The tier runs nothing from the other pages", ":")
    assert claimed == {page for page, count in runs.items() if count}
    assert nothing and all(runs[page] == 0 for page in nothing)


def test_a_block_declared_to_run_that_is_skipped_fails_naming_page_line_and_both(
    seeded: SeededRepo,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planted mismatch: the harness skips the block that lists the models."""
    run = scenario.PageScenario.run

    def skip_the_models_request(self, block, server):  # type: ignore[no-untyped-def]
        if "/v1/models" in block.text:
            self._skip(block, "planted")
        return run(self, block, server)

    monkeypatch.setattr(scenario.PageScenario, "run", skip_the_models_request)
    result = seeded.run("--run-recipes")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The block, and its expected output (which now has nothing to compare with).
    result.assert_outcomes(passed=14, failed=2, skipped=3)
    result.stdout.fnmatch_lines([
        f"{PAGE}:28: the page declares this block run on the mock tier, "
        "but it was skipped (planted)",
        "  fix: fix the block's `% test:` marker, or the harness where it no longer does "
        "what the marker declares*",
    ])  # fmt: skip
    result.stdout.fnmatch_lines([
        "*2 block(s) differ from their declared status:",
        f"*{PAGE}:28: the page declares this block run on the mock tier, but it was skipped*",
        f"*{PAGE}:33: the page declares this block run on the mock tier, but it was skipped "
        "(expected output of the previous block, which did not run)",
    ])  # fmt: skip


def test_a_block_declared_skipped_that_runs_fails(
    seeded: SeededRepo,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planted mismatch: the harness starts the page's own cluster on a fake tier."""
    monkeypatch.setattr(scenario.PageScenario, "_start_cluster", _record_run)
    result = seeded.run("--run-recipes")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        f"{PAGE}:6: the page declares this block skipped (replaced by the fake tier's own "
        "Ray cluster) on the mock tier, but it was run",
    ])  # fmt: skip


def _record_run(self: scenario.PageScenario, block: scenario.Block) -> None:
    self.tally.record(block.where, scenario.RUN)


def test_a_good_run_says_every_block_matched(seeded: SeededRepo) -> None:  # noqa: F811
    result = seeded.run("--run-recipes")
    result.assert_outcomes(passed=16, skipped=3)
    result.stdout.fnmatch_lines(["*all 19 finished blocks match their declared status"])


def test_the_note_goes_at_the_pages_end_not_before_its_steps() -> None:
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    def page(text: str) -> nodes.document:
        document = new_document("page", get_default_settings(Parser))
        Parser().parse(text, document)
        return document

    def note() -> nodes.admonition:
        return nodes.admonition("", nodes.paragraph("", "status"))

    steps = "Title\n=====\n\nIntro.\n\nSteps\n-----\n\nDo it.\n\nReference\n---------\n\nFacts.\n"
    # A page without its own section on testing gets one, last, holding the note.
    document = page(steps)
    assert extension.place_note(document, note(), "How this page is tested")
    top = next(iter(document.findall(nodes.section)))
    assert top[1].astext() == "Intro." and top[2]["names"] == ["steps"]
    assert top[3]["names"] == ["reference"] and not list(top[3].findall(nodes.admonition))
    assert top[-1]["ids"] == [extension.TESTED_SECTION]
    assert isinstance(top[-1][-1], nodes.admonition)
    # A page that has one: the note ends it, and no second one appears.
    tested = page(steps + "\nHow this page is tested\n-----------------------\n\nThe tier.\n")
    assert extension.place_note(tested, note(), "How this page is tested")
    top = next(iter(tested.findall(nodes.section)))
    assert [s["ids"] for s in top.children if isinstance(s, nodes.section)][-1] == [
        extension.TESTED_SECTION
    ]
    assert len([s for s in top.children if isinstance(s, nodes.section)]) == 3
    assert top[-1][1].astext() == "The tier." and isinstance(top[-1][-1], nodes.admonition)
