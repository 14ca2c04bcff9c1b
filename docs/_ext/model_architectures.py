"""The ``model-architectures`` directive: each model family's architecture class, as
vLLM-Ascend's pages at the pinned release say it (:mod:`ray_serve_npu.releases.architectures`),
with the lines that say it, and what the fake-NPU tier does with the class: serves the
family's run on the tiny model of its class, or, for a class vLLM's CPU build doesn't
serve, prints what that build gave for a tiny model of it (``docs/_static/cpu-architectures.json``,
which ``python -m ray_serve_npu_tooling.cpu_architectures`` writes).

Nothing in the table is typed on a page: a family added to the data is a new row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from editions import code_cell, edition_texts, table_frame
from nightly_runs import source_link
from ray_serve_npu_tooling.cpu_architectures import CPU_ARCHITECTURES_FILE
from ray_serve_npu_tooling.model_dry_runs import MODEL_DRY_RUNS_FILE, committed_dry_runs
from ray_serve_npu_tooling.served_runs import FAKE_TIER_COMPOSE_RUN, FAKE_TIER_SERVED_RUNS
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.model_recipes import find_run
from ray_serve_npu.releases.architectures import (
    ARCHITECTURES_FILE,
    ModelFamily,
    model_families,
)
from ray_serve_npu.releases.tutorials import TUTORIALS_DIR

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "family": "Family",
        "architecture": "Architecture class",
        "sources": "Said by",
        "fake_tier": "On the fake-NPU tier",
        "stand_in": "a tiny random `{family}` model stands in; `{run}` is served on it",
        "stand_in_unserved": "a tiny random `{family}` model stands in, which vLLM {vllm}'s "
        "CPU build served in the probe; the suite serves no run of this family on it",
        "stand_in_dry_run": "a tiny random `{family}` model stands in; the suite serves no "
        "run of this family on it, but `{run}` answered on it in the dry-run of {date} below",
        "build": "no tiny model: transformers {transformers} did not build a tiny "
        "`{architecture}`: `{error}`",
        "config": "no tiny model: vLLM {vllm} did not read the config of a tiny "
        "`{architecture}` that transformers {transformers} wrote: `{error}`",
        "engine": "no tiny model: for a tiny `{architecture}`, vLLM {vllm}'s CPU engine gave "
        "`{error}`",
    },
    "zh_CN": {
        "family": "模型系列",
        "architecture": "架构类别",
        "sources": "出处",
        "fake_tier": "在模拟 NPU 层上",
        "stand_in": "由一个微型随机 `{family}` 模型代替；`{run}` 在其上运行服务",
        "stand_in_unserved": "由一个微型随机 `{family}` 模型代替，vLLM {vllm} 的 CPU 版本"
        "在探测中部署过它；测试套件不在其上部署本系列的任何运行",
        "stand_in_dry_run": "由一个微型随机 `{family}` 模型代替；测试套件不在其上部署本系列的"
        "任何运行，但在下文 {date} 的试运行中，`{run}` 在其上回答了请求",
        "build": "没有微型模型：transformers {transformers} 未能构建微型 `{architecture}`："
        "`{error}`",
        "config": "没有微型模型：vLLM {vllm} 未能读取 transformers {transformers} "
        "为微型 `{architecture}` 写出的配置：`{error}`",
        "engine": "没有微型模型：对于一个微型 `{architecture}`，vLLM {vllm} 的 CPU 引擎给出 "
        "`{error}`",
    },
}


def cpu_probe(docs_dir: Path) -> dict[str, Any]:
    """The last probe of vLLM's CPU build, as its command wrote it under ``docs_dir``."""
    return json.loads((docs_dir / CPU_ARCHITECTURES_FILE).read_text(encoding="utf-8"))


def fake_tier_cell(
    architecture: str,
    served_run: str | None,
    words: dict[str, str],
    probe: dict[str, Any],
    dry_run: tuple[str, str] | None = None,
) -> str:
    """What the fake-NPU tier does with a family of ``architecture``; ``probe`` is the CPU
    build's (:func:`cpu_probe`), ``dry_run`` a run of the family that answered in the
    dry-run of every model, and its date."""
    if architecture in STAND_IN_SPECS:
        family = STAND_IN_SPECS[architecture].family
        if served_run:
            return words["stand_in"].format(family=family, run=served_run)
        if dry_run:
            return words["stand_in_dry_run"].format(family=family, run=dry_run[0], date=dry_run[1])
        probed = [r for r in probe["stand_ins"] if r["class"] == architecture and r["served"]]
        if not probed:
            raise ValueError(
                f"{CPU_ARCHITECTURES_FILE.name} has no served probe of the `{architecture}` "
                "tiny model, and the suite serves no run on it: run python -m "
                "ray_serve_npu_tooling.cpu_architectures"
            )
        return words["stand_in_unserved"].format(family=family, vllm=probe["vllm"])
    failed = [r for r in probe["results"] if r["class"] == architecture and not r["served"]]
    if not failed:
        raise ValueError(
            f"{CPU_ARCHITECTURES_FILE.name} has no failed probe of class {architecture!r}, "
            "which has no tiny model on the tier: run python -m "
            "ray_serve_npu_tooling.cpu_architectures, or give the class a stand-in in "
            "ray_serve_npu/fake_npu/tiny_model.py"
        )
    first = failed[0]
    return words[first["stage"]].format(
        architecture=first["architecture"],
        vllm=probe["vllm"],
        transformers=probe["transformers"],
        error=first["error"],
    )


def answered_on_stand_in(family: ModelFamily, record: dict[str, Any]) -> tuple[str, str] | None:
    """A run of ``family`` that answered in the dry-run of every model on its class's own
    tiny model (not a fallback), and its day; None where none did."""
    spec = STAND_IN_SPECS.get(family.architecture)
    if spec is None:
        return None
    return next(
        (
            (d["run"], d["date"])
            for d in record["dry_runs"]
            if d["answered"]
            and family.matches(d["model"])
            and f"/tiny-{spec.family}-" in (d["stand_in"] or "")
        ),
        None,
    )


class ModelArchitectures(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        tag = compat.VLLM_ASCEND.tag
        self.env.note_dependency(str(TUTORIALS_DIR / tag / ARCHITECTURES_FILE))
        docs_dir = Path(self.env.srcdir)
        self.env.note_dependency(str(docs_dir / CPU_ARCHITECTURES_FILE))
        probe = cpu_probe(docs_dir)
        self.env.note_dependency(str(docs_dir / MODEL_DRY_RUNS_FILE))
        dry_runs = committed_dry_runs(docs_dir)
        words = edition_texts(TEXTS, self.config.language)
        columns = [words[c] for c in ("family", "architecture", "sources", "fake_tier")]
        table, body = table_frame("model-architectures", columns, (18, 14, 28, 40))
        for family in model_families(tag):
            # The run the tier serves for the family's class, where it is of this family.
            run = dict([FAKE_TIER_COMPOSE_RUN], **FAKE_TIER_SERVED_RUNS).get(family.architecture)
            served_run = run if run and family.matches(find_run(run, tag).model) else None
            sources = nodes.entry()
            for source in family.sources:
                sources += source_link(tag, source.path, source.line)
            dry_run = answered_on_stand_in(family, dry_runs)
            try:
                cell = fake_tier_cell(family.architecture, served_run, words, probe, dry_run)
            except ValueError as error:
                raise self.error(str(error)) from None
            body += nodes.row(
                "",
                code_cell(family.family),
                code_cell(f"`{family.architecture}`"),
                sources,
                code_cell(cell),
            )
        return [table]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("model-architectures", ModelArchitectures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
