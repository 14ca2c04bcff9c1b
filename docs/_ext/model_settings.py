"""The ``model-settings`` directive: the settings a model's runs give it that are the
model's own, the ones ``ray-serve-npu check`` holds a deployment of that model to (rule
``model-run-setting-differs``, its ``same_as_a_run`` settings at the release): per model,
each value, the runs that set it (linked to their lines at the tag) and how many of the
model's runs leave the setting out.

Nothing is typed on a page: the settings come from the rule, the values from the runs
(:mod:`ray_serve_npu.releases.runs`). Quantization is a column of the runs' table, so
this one leaves it out.
"""

from __future__ import annotations

from collections import defaultdict

from docutils import nodes
from editions import code_cell, edition_texts, table_frame
from nightly_runs import source_link
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu import compat
from ray_serve_npu.check.model_runs import model_key
from ray_serve_npu.check.rules import RULES_DIR, load_rules
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.releases.runs import serve_runs

#: The rule whose settings these are, and the one of them the runs' table shows already.
RULE = "model-run-setting-differs"
SHOWN_ELSEWHERE = frozenset({"quantization"})

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "model": "Model",
        "setting": "Setting",
        "value": "Value",
        "set_by": "Set by",
        "left_out": "Left out by",
        "runs": "{count} of its {total} runs",
        "none": "none",
    },
    "zh_CN": {
        "model": "模型",
        "setting": "设置",
        "value": "取值",
        "set_by": "设置它的运行",
        "left_out": "未设置它的运行",
        "runs": "其 {total} 个运行中的 {count} 个",
        "none": "无",
    },
}


def model_settings(tag: str) -> list[str]:
    """The settings of a model's own at ``tag``, as the checker's rule names them."""
    params = load_rules(tag).rule(RULE).params
    return [key for key in params["same_as_a_run"] if key not in SHOWN_ELSEWHERE]


def settings_rows(
    runs: list[ServeRun], settings: list[str]
) -> list[tuple[str, str, str, list[ServeRun], int, int]]:
    """(model, setting, value, runs that set it, runs that leave it out, the model's runs)
    for each value a model's runs give a setting, by model and setting; a model none of
    whose runs sets one of ``settings`` has no row."""
    by_model: dict[str, list[ServeRun]] = defaultdict(list)
    for run in runs:
        by_model[model_key(run.model)].append(run)
    rows = []
    for key in sorted(by_model):
        model_runs = by_model[key]
        for setting in settings:
            by_value: dict[str, list[ServeRun]] = defaultdict(list)
            for run in model_runs:
                value = run.settings.get(setting)
                if value is not None:
                    by_value[str(value)].append(run)
            left_out = len(model_runs) - sum(len(setters) for setters in by_value.values())
            for value in sorted(by_value):
                model = model_runs[0].model
                rows.append((model, setting, value, by_value[value], left_out, len(model_runs)))
    return rows


class ModelSettings(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        tag = compat.VLLM_ASCEND.tag
        self.env.note_dependency(str(RULES_DIR / "base.yaml"))
        self.env.note_dependency(str(RULES_DIR / f"{tag}.yaml"))
        words = edition_texts(TEXTS, self.config.language)
        columns = ["model", "setting", "value", "set_by", "left_out"]
        table, body = table_frame(
            "model-settings", [words[c] for c in columns], (24, 14, 18, 30, 14)
        )
        for model, setting, value, setters, left_out, total in settings_rows(
            list(serve_runs(tag)), model_settings(tag)
        ):
            set_by = nodes.entry()
            for run in setters:
                link = source_link(run.release, run.path, run.line)
                link.insert(0, nodes.literal(run_key(run), run_key(run)))
                link.insert(1, nodes.Text(": "))
                set_by += link
            left = words["runs"].format(count=left_out, total=total) if left_out else words["none"]
            body += nodes.row(
                "",
                code_cell(f"`{model}`"),
                code_cell(f"`--{setting.replace('_', '-')}`"),
                code_cell(f"`{value}`"),
                set_by,
                code_cell(left),
            )
        return [table]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("model-settings", ModelSettings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
