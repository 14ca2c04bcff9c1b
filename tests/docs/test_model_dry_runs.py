"""The committed dry-run of every model (``python -m ray_serve_npu_tooling.model_dry_runs``,
docs/_static/model-dry-runs.json) and the models page's table of it
(docs/_ext/model_dry_run_table.py): the record holds a dry-run of each model of the pinned
release, by the run and command the tool picks today, and the page's sentence and rows are
read from it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ray_serve_npu_tooling.model_dry_runs import (
    command_for,
    committed_dry_runs,
    compose_command_for,
    first_run_of_each_model,
    read_output,
    stand_in_reason,
)

from ray_serve_npu import compat
from ray_serve_npu.fake_npu.dry_run import CHAT_LINE_END, STOPPED_LINE
from ray_serve_npu.model_recipes import run_key

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from model_dry_run_table import TEXTS, result, summary  # noqa: E402

RECORD = committed_dry_runs(DOCS)


def test_the_record_dry_runs_each_model_of_the_pinned_release_as_the_tool_would_today() -> None:
    # A model, a run or a command changed since the record was made: run the tool again.
    assert RECORD["release"] == compat.VLLM_ASCEND.tag
    expected = [
        (run.model, run_key(run), " ".join(command_for(run)))
        for run in first_run_of_each_model(RECORD["release"])
    ]
    recorded = [(d["model"], d["run"], d["command"]) for d in RECORD["dry_runs"]]
    assert recorded == expected and len(recorded) >= 7


def test_the_record_dry_runs_each_single_node_runs_compose_file_as_the_tool_would_today() -> None:
    runs = first_run_of_each_model(RECORD["release"])
    for dry_run, run in zip(RECORD["dry_runs"], runs, strict=True):
        command = compose_command_for(run)
        if isinstance(command, str):
            assert dry_run["compose"] == {"not_built": command}
        else:
            assert dry_run["compose"]["command"] == command.command
    built = [d for d in RECORD["dry_runs"] if "not_built" not in d["compose"]]
    assert len(built) >= 7


def test_a_dry_runs_output_is_read_into_its_stand_in_its_name_and_its_verdict() -> None:
    stand_in = (
        "fake-npu tier: model_loading_config.model_source: '/models/M' -> "
        "'/tmp/t/tiny-llama-1a2b' (a tiny random dense model stands in for the weights; the "
        "fake tier has no tiny model of its architecture class `x` (docs/models.md says why))"
    )
    stdout = f"{stand_in}\nfake-npu tier: http://127.0.0.1:8000/v1 serves 'm'; {CHAT_LINE_END}\n"
    answered = read_output(stdout + STOPPED_LINE + "\n", "", 0)
    assert answered == {
        "answered": True,
        "stand_in": stand_in.split(": ", 2)[2],
        "served_as": ["m"],
    }
    assert stand_in_reason(answered["stand_in"]).startswith("a tiny random dense model")
    assert stand_in_reason(answered["stand_in"]).endswith("(docs/models.md says why)")
    # Stopped before the end: the dry-run's own error line is the verdict.
    failed = read_output(stdout, "x\nray-serve-npu dry-run: serve_model.py did not come up\n", 1)
    assert failed["answered"] is False
    assert failed["error"] == "serve_model.py did not come up"
    # vLLM's own server, which a Compose file runs, prints its stand-in line on stderr.
    compose_stand_in = "fake-npu tier: vllm serve MODEL: '/models/M' -> '/tmp/t/tiny' (why)"
    served = stdout.splitlines()[1] + "\n" + STOPPED_LINE + "\n"
    compose = read_output(
        served, compose_stand_in + "\n", 0, stand_in_field="fake-npu tier: vllm serve MODEL: "
    )
    assert compose["stand_in"] == "'/models/M' -> '/tmp/t/tiny' (why)" and compose["answered"]


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_the_pages_sentence_and_results_are_read_from_the_record(language: str) -> None:
    words = TEXTS[language]
    answered = [d for d in RECORD["dry_runs"] if d["answered"]]
    sentence = summary(RECORD, words)
    for field in ("date", "command", "ray", "vllm", "release"):
        assert str(RECORD[field]) in sentence
    assert str(len(RECORD["dry_runs"])) in sentence and str(len(answered)) in sentence
    for dry_run in RECORD["dry_runs"]:
        cell = result(dry_run, words)
        if dry_run["answered"]:
            assert ", ".join(dry_run["served_as"]) in cell
        else:
            assert dry_run["error"].replace("`", "'") in cell


def test_a_made_up_record_reads_with_its_counts_days_and_errors() -> None:
    answered = {"answered": True, "served_as": ["a"], "seconds": 61}
    rows = [
        {"run": "A", "date": "2026-12-01", **answered, "compose": answered},
        {
            "run": "B",
            "date": "2026-12-03",
            "answered": False,
            "error": "it said `boom`",
            "compose": {"not_built": "B spans 2 nodes"},
        },
        {
            "run": "C",
            "date": "2026-12-03",
            "answered": False,
            "error": "no end within 900 s",
            "compose": {"date": "2026-12-05", "answered": False, "error": "no end"},
        },
    ]
    record = {**RECORD, "dry_runs": rows}
    words = TEXTS["en"]
    sentence = summary(record, words)
    # The days of either path count: a Compose dry-run ran on the 5th.
    assert sentence.startswith("Between 2026-12-01 and 2026-12-05, ")
    assert "one run of each of the 3 models" in sentence and ": 1 answered" in sentence
    assert "for each of the 2 runs it writes one for" in sentence
    assert sentence.endswith("container: 1 answered.")
    assert result(rows[1]["compose"], words) == "no Compose file: B spans 2 nodes"
    assert result(rows[0], words) == "served `a`, answered a chat request (61 s)"
    assert result(rows[1], words) == "failed: it said 'boom'"
