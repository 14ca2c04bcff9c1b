"""The ``nightly-runs`` directive: every single-node run of vLLM-Ascend's nightly CI at
a release (:mod:`ray_serve_npu.releases.nightly`), one row each, by model and node
kind (from the run's name, else from the CI's schedule), with a link to its test case
at the tag and how the suite tests the recipe that ``serve_model.py`` builds from it
(:mod:`ray_serve_npu_tooling.served_runs`).

``:release:`` names the release; without it, the release the Ray Serve LLM recipes pin.
Nothing in the table is typed on a page: a new config file is a new row. The headings
are in the build's language, as ``release_matrix`` does; models, flags and versions
stay as the files write them.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from editions import code_cell, edition_texts, table_frame
from ray_serve_npu_tooling.served_runs import FAKE_TIER_SERVED_RUNS
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from upstream_links import UPSTREAMS, resolve

from ray_serve_npu import compat
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.nightly import NIGHTLY_DIR, SCHEDULE_FILE, NightlyRun, nightly_runs

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "model": "Model (run)",
        "node_kind": "Node kind",
        "npus": "NPUs (TP × DP)",
        "expert_parallel": "Expert parallel",
        "max_model_len": "Max context",
        "quantization": "Quantization",
        "speculative": "Speculative decoding",
        "source": "Config",
        "tested": "How tested",
        "served": "served on the fake-NPU tier",
        "checked": "checked, no engine",
        "not_named": "not named or scheduled",
        "yes": "yes",
        "no": "no",
        "none": "not set",
    },
    "zh_CN": {
        "model": "模型（运行）",
        "node_kind": "节点类型",
        "npus": "NPU 数（TP × DP）",
        "expert_parallel": "专家并行",
        "max_model_len": "最大上下文",
        "quantization": "量化",
        "speculative": "推测解码",
        "source": "配置",
        "tested": "测试方式",
        "served": "在模拟 NPU 层上运行服务",
        "checked": "已检查，未启动引擎",
        "not_named": "未注明，也未排入计划",
        "yes": "是",
        "no": "否",
        "none": "未设置",
    },
}

_COLUMNS = (
    "model",
    "node_kind",
    "npus",
    "expert_parallel",
    "max_model_len",
    "quantization",
    "speculative",
    "source",
    "tested",
)


def _source(run: NightlyRun) -> nodes.entry:
    upstream = UPSTREAMS["vllm-ascend"]
    link = resolve(upstream.role, f"{run.path}@{upstream.version(run.release)}#L{run.line}")
    name = run.path.rsplit("/", 1)[1]
    text = f"{name}:{run.line}"
    entry = nodes.entry()
    entry += nodes.paragraph(
        "", "", nodes.reference("", "", nodes.literal(text, text), refuri=link.url)
    )
    return entry


def _speculative(run: NightlyRun) -> str | None:
    if run.speculative_method is None:
        return None
    return f"`{run.speculative_method}` × {run.speculative_tokens}"


def nightly_table(
    runs: list[NightlyRun], words: dict[str, str], served: frozenset[str]
) -> nodes.table:
    """One row per run; "How tested" says served for the runs named in ``served``."""
    table, body = table_frame(
        "nightly-runs", [words[c] for c in _COLUMNS], (24, 7, 9, 7, 8, 8, 11, 16, 10)
    )
    for run in runs:
        parallel = f"{run.npus} ({run.tensor_parallel} × {run.data_parallel})"
        if run.pipeline_parallel > 1:
            parallel += f" × PP {run.pipeline_parallel}"
        body += nodes.row(
            "",
            code_cell(f"`{run.model}`", f"(`{run_key(run)}`)"),
            code_cell(", ".join(run.node_kinds) or words["not_named"]),
            code_cell(parallel),
            code_cell(words["yes"] if run.expert_parallel else words["no"]),
            code_cell(str(run.max_model_len) if run.max_model_len else words["none"]),
            code_cell(f"`{run.quantization}`" if run.quantization else words["none"]),
            code_cell(_speculative(run) or words["none"]),
            _source(run),
            code_cell(words["served" if run_key(run) in served else "checked"]),
        )
    return table


class NightlyRuns(SphinxDirective):
    option_spec = {"release": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        tag = self.options.get("release") or compat.VLLM_ASCEND.tag
        try:
            runs = sorted(
                nightly_runs(tag), key=lambda run: (run.model, run.node_kind or "", run.name)
            )
        except LookupError as error:
            raise self.error(str(error)) from None
        for path in sorted((NIGHTLY_DIR / tag).glob("*.yaml")):
            self.env.note_dependency(str(path))
        if (NIGHTLY_DIR / tag / SCHEDULE_FILE).is_file():
            self.env.note_dependency(str(NIGHTLY_DIR / tag / SCHEDULE_FILE))
        words = edition_texts(TEXTS, self.config.language)
        # serve_model.py, and so the fake tier, serves the pinned release's runs only.
        served = frozenset(FAKE_TIER_SERVED_RUNS if tag == compat.VLLM_ASCEND.tag else ())
        return [nightly_table(runs, words, served)]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("nightly-runs", NightlyRuns)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
