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
    unadapted_app,
)
from ray_serve_npu.hardware import VISIBLE_DEVICES_ENV_VAR

ROOT = Path(__file__).parents[2]


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


RAY_DOCS_RECIPES = {
    # As Ray's own docs write a recipe: the builder from ray.serve.llm.
    "ray_builder.py": (
        "from ray import serve\nfrom ray.serve.llm import LLMConfig, build_openai_app\n\n"
        "app = build_openai_app({'llm_configs': [LLMConfig(model_loading_config={'model_id': "
        "'m'})]})\nserve.run(app)\n",
        "ray_builder.py:2",
        "from ray_serve_npu import build_openai_app",
    ),
    "module_alias.py": (
        "import ray.serve.llm as llm\n\napp = llm.build_dp_openai_app({})\n",
        "module_alias.py:3",
        "from ray_serve_npu import build_dp_openai_app",
    ),
    "own_server.py": (
        "from ray import serve\nfrom ray.serve.llm import LLMServer\n\n"
        "app = serve.deployment(LLMServer).bind(None)\n",
        "own_server.py:2",
        "ray_serve_npu.build_openai_app",
    ),
    "serve_config.yaml": (
        "applications:\n  - name: llm\n    import_path: ray.serve.llm:build_openai_app\n",
        "serve_config.yaml:3",
        "from ray_serve_npu import build_openai_app",
    ),
}


@pytest.mark.parametrize("name", sorted(RAY_DOCS_RECIPES))
def test_dry_run_refuses_a_recipe_built_with_rays_own_builder_before_starting_anything(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray_serve_npu.fake_npu import fake_tier

    def no_cluster(*args: object, **kwargs: object) -> None:
        raise AssertionError("dry-run started the fake tier for a recipe it cannot serve")

    monkeypatch.setattr(fake_tier, "fake_npu_tier", no_cluster)
    text, where, fix = RAY_DOCS_RECIPES[name]
    recipe = tmp_path / name
    recipe.write_text(text)
    assert main(["dry-run", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ray-serve-npu dry-run: {where} builds its app with Ray Serve LLM")
    assert fix in err and "Traceback" not in err


def test_dry_run_passes_the_recipes_that_build_with_the_plugin() -> None:
    for recipe in (ROOT / "recipes").glob("*.py"):
        assert unadapted_app(recipe) is None, recipe
    assert unadapted_app(ROOT / "recipes" / "kuberay" / "rayservice.yaml") is None


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
