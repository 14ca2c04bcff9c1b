"""``ray-serve-npu dry-run``: the user-facing way into the fake-NPU tier.

Its run on the fake tier (serve the recipe, answer, say what changed, stop on
Ctrl+C) is test_fake_npu_end_to_end.py, whose requests share that one run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ray_serve_npu.cli import main
from ray_serve_npu.fake_npu.dry_run import (
    CHAT_LINE_END,
    DryRunProcess,
    command_for,
    engine_devices,
    fake_tier_changes,
)
from ray_serve_npu.hardware import VISIBLE_DEVICES_ENV_VAR


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("serve_npu.py", "python serve_npu.py"),
        ("serve_config.yaml", "serve run serve_config.yaml"),
        ("docker-compose.yaml", "docker compose -f docker-compose.yaml up -d"),
        ("docker-compose-a3.yaml", "docker compose -f docker-compose-a3.yaml up -d"),
        ("compose.override.yml", "docker compose -f compose.override.yml up -d"),
    ],
)
def test_dry_run_runs_a_recipe_as_its_page_does(name: str, command: str) -> None:
    assert command_for(Path(name)) == command


def test_dry_run_refuses_what_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dry-run", str(tmp_path / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert main(["dry-run", str(notes)]) == 2
    assert "not a recipe dry-run knows" in capsys.readouterr().err


def test_dry_run_reads_the_adapter_lines_from_plain_and_json_logs() -> None:
    log = "\n".join(
        [
            "INFO something else",
            '{"message": "fake-npu tier: dropped engine_kwargs.quantization=\'ascend\' (x)"}',
            "(APIServer) WARNING fake-npu tier: dropped vllm serve --port=1 (y)",
        ]
    )
    assert fake_tier_changes(log) == [
        "fake-npu tier: dropped engine_kwargs.quantization='ascend' (x)",
        "fake-npu tier: dropped vllm serve --port=1 (y)",
    ]


def test_dry_run_engine_lines_name_engine_workers_only(tmp_path: Path) -> None:
    # Ray Serve LLM's engine-config task holds a token share of an NPU and no actor:
    # it is no engine worker (four ranks printed eight lines before this was read).
    records = [
        {"pid": 11, "ray_npu_ids": ["0"], "actor_id": None, VISIBLE_DEVICES_ENV_VAR: "0"},
        {"pid": 12, "ray_npu_ids": ["3"], "actor_id": "a1", VISIBLE_DEVICES_ENV_VAR: "3"},
        {"pid": 13, "ray_npu_ids": [], "actor_id": "a2", VISIBLE_DEVICES_ENV_VAR: None},
    ]
    for record in records:
        (tmp_path / f"{record['pid']}.json").write_text(json.dumps(record))
    assert engine_devices(tmp_path) == [
        f"fake-npu tier: engine worker 12 holds NPU 3; {VISIBLE_DEVICES_ENV_VAR}=3"
    ]


def test_dry_run_chat_reply_is_read_from_its_output(tmp_path: Path) -> None:
    log = tmp_path / "dry-run.log"
    reply = {"model": "deepseek-v4-flash", "choices": [{"message": {"role": "assistant"}}]}
    log.write_text(
        f"fake-npu tier: http://127.0.0.1:8000/v1 serves 'deepseek-v4-flash'; {CHAT_LINE_END}\n"
        f"{json.dumps(reply, indent=2)}\n"
        f"fake-npu tier: engine worker 12 holds NPU 3; {VISIBLE_DEVICES_ENV_VAR}=3\n"
    )
    assert DryRunProcess(process=None, log_file=log).chat_reply() == reply  # type: ignore[arg-type]
