"""The models page's comparison of a model's CI config with its tutorial at the pinned tag
(docs/_ext/model_source_diffs.py, #39 item 1: "a run whose config and tutorial disagree
shows both and cites both"): each row is a setting the two runs on one node kind set
differently, each side linked to its source, and nothing they set alike is a row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ray_serve_npu import compat
from ray_serve_npu.releases import RELEASES

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from model_source_diffs import OWN_TO_EACH_RECIPE, source_differences  # noqa: E402

TAG = compat.VLLM_ASCEND.tag
ROWS = source_differences(TAG)


def test_deepseek_v4_flash_on_a3_differs_where_the_ci_config_and_the_tutorial_do() -> None:
    a3 = {row.setting: row for row in ROWS if row.node_kind == "A3"}
    # The CI loads with the prefetch strategy, the tutorial with multi-threaded loading.
    assert (
        a3["--safetensors-load-strategy"].ci_value,
        a3["--safetensors-load-strategy"].tutorial_value,
    ) == ("prefetch", None)
    loader = a3["--model-loader-extra-config.enable_multithread_load"]
    assert (loader.ci_value, loader.tutorial_value) == (None, True)
    # A string where the tutorial writes a JSON Boolean is a difference.
    binding = a3["--additional-config.enable_cpu_binding"]
    assert (binding.ci_value, binding.tutorial_value) == ("true", True)
    assert a3["OMP_NUM_THREADS"].ci_value == "1" and a3["OMP_NUM_THREADS"].tutorial_value == "10"
    assert {row.ci_run for row in a3.values()} == {"DeepSeek-V4-Flash-W8A8-A3"}


def test_each_row_cites_both_sources_and_shows_two_values() -> None:
    assert ROWS
    tutorial = RELEASES[TAG].deepseek_v4_flash
    for row in ROWS:
        first = int(tutorial.runs[row.node_kind].lines.split("-")[0])
        assert json.dumps(row.ci_value) != json.dumps(row.tutorial_value), row
        assert row.ci_source[0].startswith("tests/e2e/nightly/"), row
        assert row.tutorial_source == (tutorial.file, first), row


def test_what_both_set_alike_and_what_each_recipe_sets_itself_are_not_rows() -> None:
    settings = {row.setting for row in ROWS}
    # Both run DP4 x TP4 with the same context on A3.
    assert not {"--tensor-parallel-size", "--data-parallel-size", "--max-model-len"} & settings
    assert not {s for s in settings if s.lstrip("-").replace("-", "_") in OWN_TO_EACH_RECIPE}
    assert "SERVER_PORT" not in settings
