"""The ``model-source-diffs`` directive: where a model's CI config and its tutorial, both
at the pinned tag, run it differently on one node kind.

The tutorial's runs are the release data's (``releases/<tag>.yaml``, transcribed from the
tutorial's shell blocks); the CI's are its configs at the tag
(:mod:`ray_serve_npu.releases.runs`). Each engine setting is compared as the release's
vLLM parses it, a JSON object's keys one by one (``--additional-config.KEY``, vLLM's own
way of writing one key), and each variable by name. What every recipe sets its own way,
the server's port, address and served name, and the variables both paths' recipes leave
out, are left out of the comparison.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from docutils import nodes
from editions import code_cell, edition_texts, table_frame
from nightly_runs import source_link
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu import compat, model_compose, model_recipes
from ray_serve_npu.check.model_runs import model_key
from ray_serve_npu.model_compose import SERVICE_SETS
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases import DATA_DIR, RELEASES
from ray_serve_npu.releases.runs import serve_runs
from ray_serve_npu.vllm_cli import engine_flag
from ray_serve_npu.vllm_flags import stored_flags

#: The settings each recipe gives its own value, and the variables both paths' recipes
#: leave out (the CI's variable for its port).
OWN_TO_EACH_RECIPE = frozenset(SERVICE_SETS) | (
    model_compose.ENVS_LEFT_OUT.keys() & model_recipes.ENVS_LEFT_OUT.keys()
)

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "model": "Model",
        "kind": "Node kind",
        "setting": "Setting",
        "ci": "CI config",
        "tutorial": "Tutorial",
        "unset": "not set",
    },
    "zh_CN": {
        "model": "模型",
        "kind": "节点类型",
        "setting": "设置",
        "ci": "CI 配置",
        "tutorial": "教程",
        "unset": "未设置",
    },
}


@dataclass(frozen=True)
class SourceDifference:
    """One setting that a model's CI run and its tutorial's run on one node kind set
    differently; a value is None where that source leaves the setting out."""

    #: The model's weights folder (``DeepSeek-V4-Flash-w8a8-mtp``).
    model: str
    node_kind: str
    #: ``--flag``, ``--flag.key`` for one key of a JSON flag, or a variable's name.
    setting: str
    ci_run: str
    ci_value: Any
    ci_source: tuple[str, int]
    tutorial_value: Any
    tutorial_source: tuple[str, int]


def _flat(settings: dict[str, Any], envs: dict[str, str]) -> dict[str, Any]:
    """Engine settings by flag (a JSON object's keys one by one) and variables by name."""
    flat: dict[str, Any] = dict(envs)

    def add(name: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                add(f"{name}.{key}", inner)
        else:
            flat[name] = value

    for key, value in settings.items():
        if key not in OWN_TO_EACH_RECIPE:
            add(engine_flag(key), value)
    return {name: value for name, value in flat.items() if name not in OWN_TO_EACH_RECIPE}


def _same(a: Any, b: Any) -> bool:
    # JSON text: `"true"` and `true` differ, as vLLM-Ascend reads them.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def source_differences(tag: str) -> list[SourceDifference]:
    """Every setting a model's CI run and its tutorial's run on the same node kind set
    differently at ``tag``, by model, node kind, CI run and setting."""
    data = RELEASES[tag]
    flags = stored_flags(data.vllm)
    tutorial = data.deepseek_v4_flash
    differences = []
    for kind, tutorial_run in sorted(tutorial.runs.items()):
        start = int(str(tutorial_run.lines).split("-")[0])
        theirs = _flat(flags.given(tutorial_run.serve_words()), tutorial_run.env)
        for ci_run in serve_runs(tag):
            if model_key(ci_run.model) != model_key(tutorial_run.model):
                continue
            if kind not in ci_run.node_kinds or ci_run.path == tutorial.file:
                continue
            ours = _flat(ci_run.settings, ci_run.envs)
            for setting in sorted(set(ours) | set(theirs)):
                ci_value, tutorial_value = ours.get(setting), theirs.get(setting)
                if _same(ci_value, tutorial_value):
                    continue
                differences.append(
                    SourceDifference(
                        model=ci_run.weights_folder,
                        node_kind=kind,
                        setting=setting,
                        ci_run=run_key(ci_run),
                        ci_value=ci_value,
                        ci_source=(ci_run.path, ci_run.line),
                        tutorial_value=tutorial_value,
                        tutorial_source=(tutorial.file, start),
                    )
                )
    return differences


class ModelSourceDiffs(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        tag = compat.VLLM_ASCEND.tag
        self.env.note_dependency(str(DATA_DIR / f"{tag}.yaml"))
        words = edition_texts(TEXTS, self.config.language)
        columns = ["model", "kind", "setting", "ci", "tutorial"]
        table, body = table_frame(
            "model-source-diffs", [words[c] for c in columns], (22, 10, 30, 19, 19)
        )

        def value_cell(value: Any, source: tuple[str, int], name: str | None) -> nodes.entry:
            shown = words["unset"] if value is None else f"`{json.dumps(value)}`"
            entry = code_cell(f"`{name}`: {shown}" if name else shown)
            entry += source_link(tag, *source)
            return entry

        for row in source_differences(tag):
            body += nodes.row(
                "",
                code_cell(f"`{row.model}`"),
                code_cell(row.node_kind),
                code_cell(f"`{row.setting}`"),
                value_cell(row.ci_value, row.ci_source, row.ci_run),
                value_cell(row.tutorial_value, row.tutorial_source, None),
            )
        return [table]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("model-source-diffs", ModelSourceDiffs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
