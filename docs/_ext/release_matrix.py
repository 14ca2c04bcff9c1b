"""The ``release-matrix`` directive: every supported vLLM-Ascend release and its paths.

One row per release data file (:mod:`ray_serve_npu.releases`): the vLLM, CANN and
torch_npu its images carry, its images per node kind, and for each path whether it
runs on the release. For Ray Serve LLM the release's pairing decides: the Ray the
data pairs with it, or ``no Ray pairs`` with the data's reason and what was
measured. Nothing in the table is typed on a page, so a new data file is a new row.

The fixed words are in the build's language (English, or Chinese for
``-D language=zh_CN``), as ``test_status`` does; the data's own sentences (the
pairing's reason, the measured steps) are quoted as the data files write them. The
table's nodes carry no source, so the gettext builder extracts none of them: the
catalogues keep no version.
"""

from __future__ import annotations

from collections.abc import Iterable

from docutils import nodes
from editions import code_cell, edition_texts
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu.releases import DATA_DIR, DEFAULT_RELEASE, OPERATING_SYSTEMS, RELEASES, Release

#: Every fixed text of the table, per language; ``code`` in backticks.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "head_release": "vLLM-Ascend",
        "head_stack": "vLLM, CANN, torch_npu",
        "head_images": "Images per node kind",
        "head_serve_llm": "Ray Serve LLM",
        "head_compose": "`vllm serve` under Compose",
        "default": "the recipes' release",
        "stack": "vLLM {vllm}, CANN {cann}, torch_npu {torch_npu}",
        "not_published": "{kind}: none published ({why})",
        "exact": "Supported with Ray {ray}: its Serve LLM pins this very vLLM.",
        "series": "Supported with Ray {ray}: its Serve LLM pins the same vLLM series.",
        "no_ray": "Not supported: no Ray pairs: {reason}",
        "measured": "Measured on {date}: ray {ray} beside vLLM {vllm}.",
        "shown": "Shown: {items}.",
        "not_shown": "Not shown: {items}.",
        "compose": "Supported: `vllm serve` in the release's image, no Ray.",
        "rules": "`ray-serve-npu check` rules: `{rules}`.",
        "no_rules": "`ray-serve-npu check` has no rules for this release yet.",
        "sep": "; ",
    },
    "zh_CN": {
        "head_release": "vLLM-Ascend",
        "head_stack": "vLLM、CANN、torch_npu",
        "head_images": "各节点类型的镜像",
        "head_serve_llm": "Ray Serve LLM",
        "head_compose": "Compose 下的 `vllm serve`",
        "default": "配方所用的版本",
        "stack": "vLLM {vllm}，CANN {cann}，torch_npu {torch_npu}",
        "not_published": "{kind}：未发布镜像（{why}）",
        "exact": "支持，搭配 Ray {ray}：其 Serve LLM 锁定的正是这个 vLLM。",
        "series": "支持，搭配 Ray {ray}：其 Serve LLM 锁定同一系列的 vLLM。",
        "no_ray": "不支持：没有可搭配的 Ray：{reason}",
        "measured": "{date} 实测：ray {ray} 搭配 vLLM {vllm}。",
        "shown": "已验证：{items}。",
        "not_shown": "未验证：{items}。",
        "compose": "支持：在该版本的镜像中运行 `vllm serve`，不需要 Ray。",
        "rules": "`ray-serve-npu check` 的规则：`{rules}`。",
        "no_rules": "`ray-serve-npu check` 还没有该版本的规则。",
        "sep": "；",
    },
}


def texts(language: str | None) -> dict[str, str]:
    """The texts of the build's language; English where the site has no translation."""
    return edition_texts(TEXTS, language)


def _images(data: Release, words: dict[str, str]) -> list[str]:
    lines = []
    for kind in data.node_kinds:
        references = ", ".join(f"`{data.image(kind, os)}`" for os in OPERATING_SYSTEMS)
        lines.append(f"{kind}: {references}")
    for kind, why in data.images.not_published.items():
        lines.append(words["not_published"].format(kind=kind, why=" ".join(why.split())))
    return lines


def _serve_llm(data: Release, words: dict[str, str]) -> list[str]:
    pairing = data.pairing
    if pairing.ray is not None and pairing.match is not None:
        return [words[pairing.match].format(ray=pairing.ray), " ".join(pairing.reason.split())]
    lines = [words["no_ray"].format(reason=" ".join(pairing.reason.split()))]
    for run in pairing.measured:
        lines.append(words["measured"].format(date=run.date, ray=run.ray, vllm=run.vllm))
        if run.shown:
            lines.append(words["shown"].format(items=words["sep"].join(run.shown)))
        if run.not_shown:
            lines.append(words["not_shown"].format(items=words["sep"].join(run.not_shown)))
    return lines


def _compose(data: Release, words: dict[str, str]) -> list[str]:
    rules = words["rules"].format(rules=data.rules) if data.rules else words["no_rules"]
    return [words["compose"], rules]


def release_matrix(releases: Iterable[Release], words: dict[str, str], default: str) -> nodes.table:
    """One row per release, in the reverse of the given order (the data's: oldest first)."""
    headers = ["head_release", "head_stack", "head_images", "head_serve_llm", "head_compose"]
    table = nodes.table(classes=["release-matrix"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    group += [nodes.colspec(colwidth=width) for width in (12, 16, 24, 28, 20)]
    head = nodes.thead()
    head += nodes.row("", *(code_cell(words[header]) for header in headers))
    group += head
    body = nodes.tbody()
    group += body
    for data in reversed(list(releases)):
        tag = [f"`{data.tag}`"] + ([words["default"]] if data.tag == default else [])
        stack = words["stack"].format(vllm=data.vllm, cann=data.cann, torch_npu=data.torch_npu)
        body += nodes.row(
            "",
            code_cell(*tag),
            code_cell(stack),
            code_cell(*_images(data, words)),
            code_cell(*_serve_llm(data, words)),
            code_cell(*_compose(data, words)),
        )
    return table


class ReleaseMatrix(SphinxDirective):
    """``{release-matrix}``: every supported release, its stack, images and paths."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        releases = list(RELEASES.values())
        for data in releases:
            # Rebuild the page when a release's data changes.
            self.env.note_dependency(str(DATA_DIR / f"{data.tag}.yaml"))
        return [release_matrix(releases, texts(self.config.language), DEFAULT_RELEASE.tag)]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("release-matrix", ReleaseMatrix)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
