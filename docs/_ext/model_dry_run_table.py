"""The ``model-dry-runs`` directive: the last dry-run of every model of the models page on
the fake-NPU tier (``docs/_static/model-dry-runs.json``, which ``python -m
ray_serve_npu_tooling.model_dry_runs`` writes): a sentence that reads the record (when,
with what, how many answered on each path) and a row per model with its run, what stood
in for its weights and why, and its result with Ray Serve LLM and with its Compose file.
Nothing is typed on the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from editions import code_cell, edition_texts, inline_code, table_frame
from ray_serve_npu_tooling.model_dry_runs import (
    MODEL_DRY_RUNS_FILE,
    committed_dry_runs,
    dry_run_days,
    stand_in_reason,
)
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "on": "On {date}",
        "between": "Between {first} and {last}",
        "summary": "{when}, `{command}` dry-ran one run of each of the {models} models "
        "of vLLM-Ascend {release} above, one after another, with `serve_model.py` on the "
        "fake-NPU tier (Ray {ray}, vLLM {vllm}'s CPU build, fake NPUs, a tiny random model "
        "in place of the weights): {answered} answered a chat request. It also dry-ran "
        "the Compose file that `serve_model.py --compose` writes, for each of the "
        "{single} runs it writes one for, with vLLM's own server in place of the "
        "container: {compose_answered} answered.",
        "model": "Model",
        "run": "Run dry-run",
        "stand_in": "What stood in for the weights, in the tier's words",
        "result": "With Ray Serve LLM",
        "compose": "With its Compose file",
        "answered": "served `{served}`, answered a chat request ({seconds} s)",
        "failed": "failed: {error}",
        "not_built": "no Compose file: {why}",
    },
    "zh_CN": {
        "on": "{date}",
        "between": "{first} 至 {last} 期间",
        "summary": "{when}，`{command}` 在模拟 NPU 层上用 `serve_model.py` 依次试运行了上表中 "
        "vLLM-Ascend {release} 的 {models} 个模型各一个运行（Ray {ray}，vLLM {vllm} 的 CPU "
        "版本，模拟 NPU，以微型随机模型代替权重）：{answered} 个回答了聊天请求。它还试运行了 "
        "`serve_model.py --compose` 写出的 Compose 文件（共有 {single} 个运行有这样的文件），"
        "以 vLLM 自己的服务器代替容器：{compose_answered} 个回答了聊天请求。",
        "model": "模型",
        "run": "试运行的运行",
        "stand_in": "代替权重的模型及原因（模拟层的原话）",
        "result": "使用 Ray Serve LLM",
        "compose": "使用其 Compose 文件",
        "answered": "以 `{served}` 提供服务，回答了聊天请求（{seconds} 秒）",
        "failed": "失败：{error}",
        "not_built": "没有 Compose 文件：{why}",
    },
}


def summary(record: dict[str, Any], words: dict[str, str]) -> str:
    answered = sum(dry_run["answered"] for dry_run in record["dry_runs"])
    composed = [d["compose"] for d in record["dry_runs"] if "not_built" not in d["compose"]]
    # `--run` and `--path` may have dry-run some models again on a later day.
    days = dry_run_days(record["dry_runs"])
    when = (
        words["on"].format(date=days[0])
        if len(days) == 1
        else words["between"].format(first=days[0], last=days[-1])
    )
    return words["summary"].format(
        when=when,
        command=record["command"],
        models=len(record["dry_runs"]),
        release=record["release"],
        ray=record["ray"],
        vllm=record["vllm"],
        answered=answered,
        single=len(composed),
        compose_answered=sum(compose["answered"] for compose in composed),
    )


def result(dry_run: dict[str, Any], words: dict[str, str]) -> str:
    """A dry-run's verdict: the record's row for the Ray Serve LLM path, or its ``compose``."""
    if "not_built" in dry_run:
        return words["not_built"].format(why=dry_run["not_built"].replace("`", "'"))
    if dry_run["answered"]:
        return words["answered"].format(
            served=", ".join(dry_run["served_as"]), seconds=round(dry_run["seconds"])
        )
    # The dry-run's own words may hold backticks of their own: keep them out of code.
    return words["failed"].format(error=dry_run["error"].replace("`", "'"))


class ModelDryRuns(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        docs_dir = Path(self.env.srcdir)
        self.env.note_dependency(str(docs_dir / MODEL_DRY_RUNS_FILE))
        record = committed_dry_runs(docs_dir)
        words = edition_texts(TEXTS, self.config.language)
        columns = [words[c] for c in ("model", "run", "stand_in", "result", "compose")]
        table, body = table_frame("model-dry-runs", columns, (18, 18, 28, 18, 18))
        for dry_run in record["dry_runs"]:
            stand_in = dry_run.get("stand_in")
            body += nodes.row(
                "",
                code_cell(f"`{dry_run['model']}`"),
                code_cell(f"`{dry_run['run']}`"),
                code_cell(stand_in_reason(stand_in) if stand_in else "-"),
                code_cell(result(dry_run, words)),
                code_cell(result(dry_run["compose"], words)),
            )
        # Generated in each edition's words: no catalogue message of its own.
        said = nodes.paragraph("", "", *inline_code(summary(record, words)), translatable=False)
        return [said, table]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("model-dry-runs", ModelDryRuns)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
