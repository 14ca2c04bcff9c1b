"""The ``node-kind-facts`` directive: one node kind's facts, as a table, from the data.

``{node-kind-facts} A3`` renders what the deploy page needs to know about an
Atlas 800 node kind: the NPUs Ray counts there and the SoC names it reports
(:data:`ray_serve_npu.hardware.NODE_KINDS`), the images of the Ray Serve LLM
recipes' release for it, and the single-node run of vLLM-Ascend's DeepSeek-V4-Flash tutorial for
it (both from the release data, :mod:`ray_serve_npu.releases`). No number is
typed on a page, so a change in the data is a change in the table.

As in ``release_matrix``, the fixed words are in the build's language and the
nodes carry no source, so the gettext builder extracts none of them.
"""

from __future__ import annotations

from docutils import nodes
from editions import code_cell, edition_texts
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu import hardware
from ray_serve_npu.hardware import NODE_KINDS, NodeKind
from ray_serve_npu.releases import DATA_DIR, OPERATING_SYSTEMS, SERVE_LLM_RELEASE, Release

#: Every fixed text of the table, per language; ``code`` in backticks.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "head_fact": "Atlas 800 {kind}",
        "head_value": "Value",
        "devices": "NPUs that Ray counts on the node",
        "memory": "Memory per NPU",
        "memory_value": "{gb} GB",
        "listing": "How vLLM-Ascend's tutorials list the node",
        "listing_value": "`{listing}`: {modules} modules of {per_module} NPU(s), "
        "{module_gb} GB each",
        "soc_names": "Accelerator types that Ray reports (the SoC name)",
        "images": "vLLM-Ascend `{tag}` images",
        "image": "`{reference}` ({os})",
        "run": "The tutorial's single-node run",
        "layout": "Data parallel {dp} × tensor parallel {tp}: {total} NPUs",
        "expert_parallel": "with expert parallelism",
        "limits": "`max_model_len` {max_model_len}, `max_num_seqs` {max_num_seqs}, "
        "`max_num_batched_tokens` {max_num_batched_tokens}",
        "ubuntu": "Ubuntu",
        "openeuler": "openEuler",
    },
    "zh_CN": {
        "head_fact": "Atlas 800 {kind}",
        "head_value": "值",
        "devices": "Ray 在该节点上统计的 NPU 数",
        "memory": "每个 NPU 的内存",
        "memory_value": "{gb} GB",
        "listing": "vLLM-Ascend 教程对该节点的写法",
        "listing_value": "`{listing}`：{modules} 个模组，"
        "每个模组 {per_module} 个 NPU、{module_gb} GB",
        "soc_names": "Ray 报告的加速器类型（SoC 名称）",
        "images": "vLLM-Ascend `{tag}` 镜像",
        "image": "`{reference}`（{os}）",
        "run": "教程的单节点运行",
        "layout": "数据并行 {dp} × 张量并行 {tp}：共 {total} 个 NPU",
        "expert_parallel": "启用专家并行",
        "limits": "`max_model_len` {max_model_len}，`max_num_seqs` {max_num_seqs}，"
        "`max_num_batched_tokens` {max_num_batched_tokens}",
        "ubuntu": "Ubuntu",
        "openeuler": "openEuler",
    },
}


def texts(language: str | None) -> dict[str, str]:
    """The texts of the build's language; English where the site has no translation."""
    return edition_texts(TEXTS, language)


def node_kind_facts(kind: NodeKind, data: Release, words: dict[str, str]) -> nodes.table:
    """The facts of one node kind at one release, as a two-column table."""
    run = data.deepseek_v4_flash.runs[kind.name]
    rows = [
        (words["devices"], [str(kind.devices_per_node)]),
        (words["memory"], [words["memory_value"].format(gb=kind.memory_per_device_gb)]),
        (
            words["listing"],
            [
                words["listing_value"].format(
                    listing=kind.tutorial_listing,
                    modules=kind.devices_per_node // kind.devices_per_module,
                    per_module=kind.devices_per_module,
                    module_gb=kind.memory_per_device_gb * kind.devices_per_module,
                )
            ],
        ),
        (words["soc_names"], [", ".join(f"`{name}`" for name in kind.soc_names)]),
        (
            words["images"].format(tag=data.tag),
            [
                words["image"].format(reference=data.image(kind.name, os), os=words[os])
                for os in OPERATING_SYSTEMS
            ],
        ),
        (
            words["run"],
            [
                words["layout"].format(
                    dp=run.data_parallel_size,
                    tp=run.tensor_parallel_size,
                    total=run.data_parallel_size * run.tensor_parallel_size,
                ),
                *([words["expert_parallel"]] if run.args.get("enable-expert-parallel") else []),
                words["limits"].format(
                    max_model_len=run.max_model_len,
                    max_num_seqs=run.max_num_seqs,
                    max_num_batched_tokens=run.max_num_batched_tokens,
                ),
            ],
        ),
    ]
    table = nodes.table(classes=["node-kind-facts"])
    group = nodes.tgroup(cols=2)
    table += group
    group += [nodes.colspec(colwidth=width) for width in (35, 65)]
    head = nodes.thead()
    head += nodes.row(
        "", code_cell(words["head_fact"].format(kind=kind.name)), code_cell(words["head_value"])
    )
    group += head
    body = nodes.tbody()
    group += body
    for fact, values in rows:
        body += nodes.row("", code_cell(fact), code_cell(*values))
    return table


class NodeKindFacts(SphinxDirective):
    """``{node-kind-facts} A3``: one node kind's facts at the Ray Serve LLM recipes' release."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0].strip()
        if name not in NODE_KINDS:
            raise self.error(
                f"node-kind-facts: {name!r} is not a node kind; write one of "
                f"{', '.join(NODE_KINDS)} (ray_serve_npu.hardware.NODE_KINDS)"
            )
        kind = NODE_KINDS[name]
        # Rebuild the page when the release's data changes.
        self.env.note_dependency(str(DATA_DIR / f"{SERVE_LLM_RELEASE.tag}.yaml"))
        self.env.note_dependency(hardware.__file__)
        return [node_kind_facts(kind, SERVE_LLM_RELEASE, texts(self.config.language))]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("node-kind-facts", NodeKindFacts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
