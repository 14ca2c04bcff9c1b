"""The ``measured-figures`` directive: what a committed fake-tier run measured, as a table.

``{measured-figures} _data/measured/resilience.json`` with ``:tests: test_a test_b``
reads the run that ``pytest --figures-json`` wrote
(:class:`ray_serve_npu_tooling.figures.FiguresRun`) and shows the named tests' figures,
with the run's date, command and versions. No figure is typed on a page: a new run is a
new file. As in ``bench_readings``, the fixed words, and the names of the figures shown,
are in the build's language, and the gettext builder extracts none of them; a figure
without a name in an edition's language fails the build, naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from editions import code_cell, edition_texts, inline_code, table_frame
from ray_serve_npu_tooling.figures import Figure, FiguresRun
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: The fixed words, and each shown figure's name, per language; ``code`` in backticks.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "run": (
            "Measured on the fake NPU tier on {date} UTC, Ray {ray} and vLLM {vllm} "
            "(CPU build), {machine}: `{command}`."
        ),
        "test": "Test",
        "figure": "Figure",
        "value": "Value",
    },
    "zh_CN": {
        "run": (
            "{date} UTC 在模拟 NPU 层上测得，Ray {ray}、vLLM {vllm}（CPU 版），"
            "{machine}：`{command}`。"
        ),
        "test": "测试",
        "figure": "指标",
        "value": "测得值",
    },
}
#: The Chinese name of each figure the pages show (the tests name them in English).
FIGURE_NAMES_ZH: dict[str, str] = {
    "head away s": "头节点离开时长（s）",
    "head starts": "头节点启动次数",
    "completed while the head was away": "头节点离开期间完成的请求",
    "held across the restart": "被挡到头节点恢复的请求",
    "failed through the head's proxy": "经过头节点代理而失败的请求",
    "head back to app RUNNING s": "头节点恢复到应用 RUNNING（s）",
    "longest request s": "最长的请求（s）",
    "completed": "完成的请求",
    "cut: event or 503 / connection broken": "断开：错误事件或 503 / 连接中断",
    "loss to last cut stream's end s": "节点丢失到最后一个断开的流结束（s）",
    "recovery s": "恢复时长（s）",
}


def figure_name(figure: Figure, language: str | None) -> str:
    """``figure``'s name in ``language``; English where the tests name it."""
    if language in (None, "en"):
        return figure.name
    try:
        return FIGURE_NAMES_ZH[figure.name]
    except KeyError:
        raise LookupError(
            f"figure {figure.name!r} of {figure.test} has no {language} name: add it to "
            "FIGURE_NAMES_ZH in docs/_ext/measured_figures.py"
        ) from None


def shown_value(figure: Figure) -> str:
    value = figure.value
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def figures_table(run: FiguresRun, tests: list[str], language: str | None) -> list[nodes.Node]:
    """The run's line and one row per figure of ``tests``, in their order."""
    words = edition_texts(TEXTS, language)
    said = words["run"].format(
        date=run.measured_at.strftime("%Y-%m-%d %H:%M"),
        ray=run.versions["ray"],
        vllm=run.versions["vllm"],
        machine=run.machine,
        command=run.command,
    )
    table, body = table_frame(
        "measured-figures", [words["test"], words["figure"], words["value"]], (40, 40, 20)
    )
    for test in tests:
        found = run.of(test)
        if not found:
            raise LookupError(f"the run recorded no figure of {test}")
        for figure in found:
            body += nodes.row(
                "",
                code_cell(f"`{test}`"),
                code_cell(figure_name(figure, language)),
                code_cell(shown_value(figure)),
            )
    # Generated in the edition's language: not a message for the translators.
    line = nodes.paragraph("", "", *inline_code(said), translatable=False)
    return [line, table]


class MeasuredFigures(SphinxDirective):
    """``{measured-figures} PATH`` with ``:tests:``: PATH from docs/."""

    required_arguments = 1
    option_spec = {"tests": lambda arg: arg.split()}

    def run(self) -> list[nodes.Node]:
        path = Path(self.env.srcdir) / self.arguments[0]
        if not path.is_file():
            raise self.error(
                f"measured-figures: {self.arguments[0]} is not a file below docs/; write one "
                "with pytest --run-recipes --figures-json PATH"
            )
        tests = self.options.get("tests")
        if not tests:
            raise self.error("measured-figures: name the tests to show, in :tests:")
        self.env.note_dependency(str(path))
        run = FiguresRun.model_validate_json(path.read_text())
        try:
            return figures_table(run, tests, self.config.language)
        except LookupError as problem:
            raise self.error(f"measured-figures: {self.arguments[0]}: {problem}") from None


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("measured-figures", MeasuredFigures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
