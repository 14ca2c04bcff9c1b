"""``ray-serve-npu dry-run``: the user-facing way into the fake-NPU tier.

Its run on the fake tier (serve the recipe, answer, say what changed, stop on
Ctrl+C) is test_fake_npu_end_to_end.py, whose requests share that one run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.cli import main
from ray_serve_npu.testing.dry_run import command_for, fake_tier_changes


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
