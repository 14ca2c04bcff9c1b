"""The ``nightly-runs`` directive: every run of one engine in vLLM-Ascend's nightly CI at
a release (:mod:`ray_serve_npu.releases.nightly`), single-node and multi-node, one row
each, by model and node kind (from the run's name, else from the CI's schedule), with a
link to its config at the tag and how the suite tests the recipe that ``serve_model.py``
builds from it (:mod:`ray_serve_npu_tooling.served_runs`). With ``:set-aside:``, the
release's multi-node configs that are not one engine instead, each with why no recipe
is built from it.

``:release:`` names the release; without it, the release the Ray Serve LLM recipes pin.
Nothing in the table is typed on a page: a new config file is a new row. The headings
are in the build's language, as ``release_matrix`` does; models, flags and versions
stay as the files write them.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from editions import code_cell, edition_texts, table_frame
from ray_serve_npu_tooling.model_dry_runs import (
    MODEL_DRY_RUNS_FILE,
    answered_runs,
    committed_dry_runs,
)
from ray_serve_npu_tooling.served_runs import fake_tier_served
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from upstream_links import UPSTREAMS, resolve

from ray_serve_npu import compat
from ray_serve_npu.check import Severity, check_serve_run
from ray_serve_npu.check.rules import RULES_DIR
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.nightly import NIGHTLY_DIR, ServeRun, SetAside
from ray_serve_npu.releases.runs import serve_runs, set_aside
from ray_serve_npu.releases.tutorials import TUTORIALS_DIR

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "model": "Model (run)",
        "node_kind": "Node kind",
        "npus": "NPUs (TP × DP)",
        "expert_parallel": "Expert parallel",
        "max_model_len": "Max context",
        "quantization": "Quantization",
        "speculative": "Speculative decoding",
        "source": "Source",
        "tested": "How tested",
        "served": "served on the fake-NPU tier",
        "served_compose": "served on the fake-NPU tier through its Compose file",
        "dry_run": "checked; dry-run on the fake-NPU tier on {date}",
        "checked": "checked, no engine",
        "refused": "checked: the checker refuses it as written ({rules})",
        "not_named": "not named or scheduled",
        "yes": "yes",
        "no": "no",
        "none": "not set",
        "on_nodes": "on {nodes} nodes",
        "nodes": "Nodes",
        "not_stated": "not stated",
        "config_model": "Model",
        "why": "Why no recipe",
        "prefill_decode": "Prefill and decode engines of their own, joined by `{connector}`.",
        "external": "Each data-parallel rank is a `vllm serve` of its own, behind the CI's proxy.",
        "nodes_differ": "Its nodes set {settings} each their own way; one `LLMConfig` sets "
        "every rank alike.",
        "not_served": "vLLM-Ascend's CI runs it only on hardware this project does not "
        "serve (schedule section `{sections}`).",
    },
    "zh_CN": {
        "model": "模型（运行）",
        "node_kind": "节点类型",
        "npus": "NPU 数（TP × DP）",
        "expert_parallel": "专家并行",
        "max_model_len": "最大上下文",
        "quantization": "量化",
        "speculative": "推测解码",
        "source": "来源",
        "tested": "测试方式",
        "served": "在模拟 NPU 层上运行服务",
        "served_compose": "通过其 Compose 文件在模拟 NPU 层上运行服务",
        "dry_run": "已检查；{date} 在模拟 NPU 层上试运行",
        "checked": "已检查，未启动引擎",
        "refused": "已检查：检查器拒绝其原样设置（{rules}）",
        "not_named": "未注明，也未排入计划",
        "yes": "是",
        "no": "否",
        "none": "未设置",
        "on_nodes": "分布在 {nodes} 个节点",
        "nodes": "节点数",
        "not_stated": "未注明",
        "config_model": "模型",
        "why": "为何没有配方",
        "prefill_decode": "预填充与解码各为独立引擎，由 `{connector}` 连接。",
        "external": "每个数据并行 rank 各为一个 `vllm serve`，位于 CI 的代理之后。",
        "nodes_differ": "各节点对 {settings} 的设置各不相同；一个 `LLMConfig` 对每个 rank "
        "的设置都相同。",
        "not_served": "vLLM-Ascend 的 CI 只在本项目不支持的硬件上运行它（计划中的 "
        "`{sections}` 部分）。",
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


def source_link(release: str, path: str, line: int) -> nodes.paragraph:
    """``file:line`` as code, linked to that line of vLLM-Ascend's repository at the tag."""
    upstream = UPSTREAMS["vllm-ascend"]
    link = resolve(upstream.role, f"{path}@{upstream.version(release)}#L{line}")
    text = f"{path.rsplit('/', 1)[1]}:{line}"
    return nodes.paragraph(
        "", "", nodes.reference("", "", nodes.literal(text, text), refuri=link.url)
    )


def _source(run: ServeRun | SetAside) -> nodes.entry:
    entry = nodes.entry()
    entry += source_link(run.release, run.path, run.line)
    return entry


def _tested(
    key: str,
    words: dict[str, str],
    served: dict[str, str],
    refused: dict[str, tuple[str, ...]],
    dry_run: dict[str, str],
) -> str:
    if key in refused:
        return words["refused"].format(rules=", ".join(f"`{rule}`" for rule in refused[key]))
    if key in served:
        return words["served_compose" if served[key] == "compose" else "served"]
    if key in dry_run:
        return words["dry_run"].format(date=dry_run[key])
    return words["checked"]


def refused_runs(runs: list[ServeRun]) -> dict[str, tuple[str, ...]]:
    """The error rules ``ray-serve-npu check`` finds in each run's recipe, by run name;
    runs without an error are left out."""
    refused = {}
    for run in runs:
        errors = sorted({f.rule_id for f in check_serve_run(run) if f.severity is Severity.ERROR})
        if errors:
            refused[run_key(run)] = tuple(errors)
    return refused


def _speculative(run: ServeRun) -> str | None:
    if run.speculative_method is None:
        return None
    return f"`{run.speculative_method}` × {run.speculative_tokens}"


def nightly_table(
    runs: list[ServeRun],
    words: dict[str, str],
    served: dict[str, str],
    refused: dict[str, tuple[str, ...]],
    dry_run: dict[str, str],
) -> nodes.table:
    """One row per run; "How tested" says served, and on which path, for the runs named in
    ``served`` (run -> ``ray-serve-llm`` or ``compose``), dry-run
    on its date for the runs ``dry_run`` names, and names the error rules of the runs
    ``refused`` names."""
    table, body = table_frame(
        "nightly-runs", [words[c] for c in _COLUMNS], (24, 7, 9, 7, 8, 8, 11, 16, 10)
    )
    for run in runs:
        parallel = f"{run.npus} ({run.tensor_parallel} × {run.data_parallel})"
        if run.pipeline_parallel > 1:
            parallel += f" × PP {run.pipeline_parallel}"
        spread = [words["on_nodes"].format(nodes=run.nodes)] if run.nodes > 1 else []
        body += nodes.row(
            "",
            code_cell(f"`{run.model}`", f"(`{run_key(run)}`)"),
            code_cell(", ".join(run.node_kinds) or words["not_named"]),
            code_cell(parallel, *spread),
            code_cell(words["yes"] if run.expert_parallel else words["no"]),
            code_cell(str(run.max_model_len) if run.max_model_len else words["none"]),
            code_cell(f"`{run.quantization}`" if run.quantization else words["none"]),
            code_cell(_speculative(run) or words["none"]),
            _source(run),
            code_cell(_tested(run_key(run), words, served, refused, dry_run)),
        )
    return table


def _why(config: SetAside, words: dict[str, str]) -> str:
    if config.layout == "not_served":
        return words["not_served"].format(sections="`, `".join(config.not_served_on))
    if config.layout == "nodes_differ":
        return words["nodes_differ"].format(settings=", ".join(f"`{k}`" for k in config.differ))
    why = words["prefill_decode"].format(connector=config.connector)
    return f"{why} {words['external']}" if config.external else why


def set_aside_table(configs: list[SetAside], words: dict[str, str]) -> nodes.table:
    """One row per multi-node config that is not one engine, with why."""
    columns = [words["source"], words["config_model"], words["nodes"], words["why"]]
    table, body = table_frame("nightly-set-aside", columns, (28, 24, 8, 40))
    for config in configs:
        body += nodes.row(
            "",
            _source(config),
            code_cell(f"`{config.model}`", f"(`{config.name}`)"),
            code_cell(str(config.nodes) if config.nodes else words["not_stated"]),
            code_cell(_why(config, words)),
        )
    return table


class NightlyRuns(SphinxDirective):
    option_spec = {"release": directives.unchanged, "set-aside": directives.flag}

    def run(self) -> list[nodes.Node]:
        tag = self.options.get("release") or compat.VLLM_ASCEND.tag
        try:
            runs = sorted(
                serve_runs(tag), key=lambda run: (run.model, run.node_kind or "", run.name)
            )
        except LookupError as error:
            raise self.error(str(error)) from None
        # The runs file is what the tables read; the rules judge the runs.
        for path in [
            *(NIGHTLY_DIR / tag).rglob("*.yaml"),
            *(TUTORIALS_DIR / tag).glob("*"),
            *RULES_DIR.glob("*.yaml"),
        ]:
            self.env.note_dependency(str(path))
        words = edition_texts(TEXTS, self.config.language)
        if "set-aside" in self.options:
            configs = sorted(set_aside(tag), key=lambda c: (c.model, c.name))
            return [set_aside_table(configs, words)]
        # serve_model.py, and so the fake tier, serves the pinned release's runs only.
        pinned = tag == compat.VLLM_ASCEND.tag
        served = fake_tier_served() if pinned else {}
        docs_dir = Path(self.env.srcdir)
        self.env.note_dependency(str(docs_dir / MODEL_DRY_RUNS_FILE))
        dry_run = answered_runs(committed_dry_runs(docs_dir)) if pinned else {}
        return [nightly_table(runs, words, served, refused_runs(runs), dry_run)]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("nightly-runs", NightlyRuns)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
