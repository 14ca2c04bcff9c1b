"""`local-media-path-open`: a deployment that lets every client of its endpoint have the
engine read local files (`--allowed-local-media-path`), which vLLM calls a security risk.
vLLM-Ascend's Kimi-K2.5 CI config and Kimi-K2.6 tutorial set it to `/`; the recipes that
serve_model.py builds leave it out."""

from __future__ import annotations

from pathlib import Path

from ray_serve_npu.check import check_file

RELEASE = "v0.25.1rc1"
RULE = "local-media-path-open"


def _found(path: Path) -> list[tuple[str, int]]:
    return [(f.rule_id, f.line) for f in check_file(path, release=RELEASE) if f.rule_id == RULE]


def test_a_command_line_that_opens_local_files_is_flagged(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(
        "vllm serve /models/m --host 127.0.0.1 \\\n  --allowed-local-media-path / \\\n"
        "  --max-num-seqs 8\n"
        "vllm serve /models/m --host 127.0.0.1 --allowed-local-media-path ''\n"
    )
    assert _found(script) == [(RULE, 2)]


def test_a_recipe_that_opens_local_files_is_flagged(tmp_path: Path) -> None:
    recipe = tmp_path / "serve_mine.py"
    recipe.write_text(
        "from ray.serve.llm import LLMConfig\n\n"
        "llm_config = LLMConfig(\n"
        "    model_loading_config={'model_id': 'k', 'model_source': '/models/Kimi-K2.6-W4A8'},\n"
        "    accelerator_config={'kind': 'npu'},\n"
        "    engine_kwargs={'allowed_local_media_path': '/'},\n"
        ")\n"
    )
    assert _found(recipe) == [(RULE, 6)]


def test_the_runs_serve_model_builds_leave_it_out() -> None:
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "serve_model.py"
    assert _found(recipe) == []
