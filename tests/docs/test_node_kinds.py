"""The deploy page's per-kind tables hold what the node kinds and the release data hold.

docs/_ext/node_kinds.py renders one node kind's facts (ray_serve_npu.hardware and
the release data); these tests render it from the real data and from changed data,
and see the table follow.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
from docutils import nodes
from ruamel.yaml import YAML

from ray_serve_npu.hardware import NODE_KINDS
from ray_serve_npu.releases import DATA_DIR, OPERATING_SYSTEMS, SERVE_LLM_RELEASE
from ray_serve_npu.releases.loader import load_release_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from node_kinds import TEXTS, node_kind_facts, texts  # noqa: E402


def _text(table: nodes.table) -> str:
    return " ".join(table.astext().split())


@pytest.mark.parametrize("language", list(TEXTS))
@pytest.mark.parametrize("name", list(NODE_KINDS))
def test_each_kind_shows_its_data(name: str, language: str) -> None:
    kind = NODE_KINDS[name]
    run = SERVE_LLM_RELEASE.deepseek_v4_flash.runs[name]
    text = _text(node_kind_facts(kind, SERVE_LLM_RELEASE, texts(language)))
    assert f"Atlas 800 {name}" in text
    assert all(soc in text for soc in kind.soc_names)
    for os in OPERATING_SYSTEMS:
        assert SERVE_LLM_RELEASE.image(name, os) in text
    numbers = re.findall(r"\d+", text)
    assert kind.tutorial_listing in text
    for value in (
        kind.devices_per_node,
        kind.memory_per_device_gb,
        run.data_parallel_size,
        run.tensor_parallel_size,
        run.max_model_len,
        run.max_num_seqs,
        run.max_num_batched_tokens,
    ):
        assert str(value) in numbers


def test_the_table_follows_a_change_in_the_data(tmp_path: Path) -> None:
    yaml = YAML(typ="safe", pure=True)
    data = yaml.load((DATA_DIR / f"{SERVE_LLM_RELEASE.tag}.yaml").read_text())
    data["deepseek_v4_flash"]["runs"]["A3"]["args"]["max-model-len"] = 777777
    data["deepseek_v4_flash"]["runs"]["A3"]["args"]["data-parallel-size"] = 3
    changed = tmp_path / f"{SERVE_LLM_RELEASE.tag}.yaml"
    with changed.open("w") as stream:
        yaml.dump(data, stream)
    kind = dataclasses.replace(NODE_KINDS["A3"], devices_per_node=99)
    words = texts("en")

    before = _text(node_kind_facts(NODE_KINDS["A3"], SERVE_LLM_RELEASE, words))
    after = _text(node_kind_facts(kind, load_release_file(changed), words))
    assert "777777" in after and "777777" not in before
    assert "Data parallel 3 × tensor parallel 4: 12 NPUs" in after
    assert re.search(r"\b99\b", after) and not re.search(r"\b99\b", before)


def test_both_editions_have_every_text() -> None:
    assert TEXTS["en"].keys() == TEXTS["zh_CN"].keys()
    assert TEXTS["zh_CN"]["devices"] != TEXTS["en"]["devices"]


def test_no_cell_reaches_the_catalogues() -> None:
    table = node_kind_facts(NODE_KINDS["A3"], SERVE_LLM_RELEASE, texts("en"))
    assert all(not node.source for node in table.findall(nodes.TextElement))


def test_the_deploy_page_shows_a_table_per_kind() -> None:
    page = (DOCS / "npu-ascend.md").read_text()
    for name in NODE_KINDS:
        assert f"```{{node-kind-facts}} {name}\n```" in page
    assert '"node_kinds"' in (DOCS / "conf.py").read_text()
