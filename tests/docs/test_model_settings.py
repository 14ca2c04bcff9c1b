"""The models page's table of settings a model needs (docs/_ext/model_settings.py): the
settings are the checker rule's, every value a run gives one of them has a row naming that
run, and the runs that leave it out are counted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ray_serve_npu import compat
from ray_serve_npu.check.rules import load_rules
from ray_serve_npu.model_recipes import run_key
from ray_serve_npu.releases.runs import serve_runs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from model_settings import RULE, SHOWN_ELSEWHERE, model_settings, settings_rows  # noqa: E402

TAG = compat.VLLM_ASCEND.tag
RUNS = list(serve_runs(TAG))


def test_the_settings_are_the_checkers_less_the_runs_tables_own() -> None:
    rule = load_rules(TAG).rule(RULE).params["same_as_a_run"]
    assert model_settings(TAG) == [key for key in rule if key not in SHOWN_ELSEWHERE]
    assert {"tokenizer_mode", "reasoning_parser", "tool_call_parser"} <= set(model_settings(TAG))


def test_every_value_a_run_gives_has_a_row_that_names_the_run() -> None:
    settings = model_settings(TAG)
    rows = settings_rows(RUNS, settings)
    named = {
        (run_key(run), setting, value) for _, setting, value, setters, *_ in rows for run in setters
    }
    given = {
        (run_key(run), setting, str(run.settings[setting]))
        for run in RUNS
        for setting in settings
        if run.settings.get(setting) is not None
    }
    assert given and named == given


@pytest.mark.parametrize(
    ("model", "setting", "value", "set_by", "left_out", "total"),
    [
        # The Kimi-K2.6 tutorial's command, the model's one run at the tag.
        ("Eco-Tech/Kimi-K2.6-W4A8", "tool_call_parser", "kimi_k2", ["Kimi-K2.6"], 0, 1),
        # The A3 config of MiniMax-M2.5 sets no parser; the A2 config does.
        (
            "Eco-Tech/MiniMax-M2.5-w8a8-QuaRot",
            "reasoning_parser",
            "minimax_m2_append_think",
            ["MiniMax-M2.5-w8a8-A2"],
            1,
            2,
        ),
    ],
)
def test_a_models_row_counts_the_runs_that_leave_its_setting_out(
    model: str, setting: str, value: str, set_by: list[str], left_out: int, total: int
) -> None:
    rows = settings_rows(RUNS, model_settings(TAG))
    (row,) = [r for r in rows if r[:3] == (model, setting, value)]
    assert [run_key(run) for run in row[3]] == set_by
    assert row[4:] == (left_out, total)
