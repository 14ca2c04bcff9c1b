"""The figures table the pages show (docs/_ext/measured_figures.py): the committed run's
values as it recorded them, each figure named in both editions."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ray_serve_npu_tooling.figures import Figure, FiguresRun

DOCS = Path(__file__).parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from measured_figures import FIGURE_NAMES_ZH, figures_table  # noqa: E402

#: ``{measured-figures} PATH`` and its ``:tests:`` on a page.
DIRECTIVE = re.compile(r"```\{measured-figures\} (\S+)\n\s*:tests: ([^\n]+)")


def _run(*figures: Figure) -> FiguresRun:
    return FiguresRun(
        measured_at=datetime(2026, 12, 6, 6, 30, tzinfo=UTC),
        command="pytest --run-recipes tests/resilience --figures-json out.json",
        versions={"ray": "2.60.0", "vllm": "0.29.0"},
        machine="x86_64, Python 3.11.7",
        figures=list(figures),
    )


def _rows(shown: list) -> list[list[str]]:
    _, table = shown
    return [
        [entry.astext() for entry in row] for row in table.findall(lambda n: n.tagname == "row")
    ]


def test_the_table_shows_the_named_tests_figures_as_recorded() -> None:
    run = _run(
        Figure(test="test_a", name="recovery s", value=12.5),
        Figure(test="test_b", name="completed", value=30),
        Figure(test="test_c", name="recovery s", value=99),
    )

    shown = figures_table(run, ["test_a", "test_b"], "en")

    assert "2026-12-06 06:30" in shown[0].astext()
    assert "pytest --run-recipes tests/resilience" in shown[0].astext()
    assert _rows(shown)[1:] == [["test_a", "recovery s", "12.5"], ["test_b", "completed", "30"]]
    assert _rows(figures_table(run, ["test_a"], "zh_CN"))[1][1] == FIGURE_NAMES_ZH["recovery s"]


@pytest.mark.parametrize(
    ("figure", "tests", "message"),
    [
        (Figure(test="test_a", name="new figure", value=1), ["test_a"], "FIGURE_NAMES_ZH"),
        (Figure(test="test_a", name="recovery s", value=1), ["test_z"], "no figure of test_z"),
    ],
    ids=["figure-without-chinese-name", "test-without-figures"],
)
def test_what_the_table_cannot_show_is_an_error_that_names_it(
    figure: Figure, tests: list[str], message: str
) -> None:
    with pytest.raises(LookupError, match=message):
        figures_table(_run(figure), tests, "zh_CN")


def test_every_table_on_the_pages_reads_a_run_that_measured_its_tests() -> None:
    tables = [
        m.groups() for page in DOCS.glob("*.md") for m in DIRECTIVE.finditer(page.read_text())
    ]
    assert tables, "no page shows a measured-figures table"
    for path, tests in tables:
        run = FiguresRun.model_validate(json.loads((DOCS / path).read_text()))
        for language in ("en", "zh_CN"):
            figures_table(run, tests.split(), language)
