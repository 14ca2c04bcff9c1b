"""`ray-serve-npu check` judges a deployment of a listed model against that model's runs
at its release (#39 item 5): vLLM-Ascend's nightly CI configs and its tutorials' runs.
For each model, the recipe and the Compose service built from one of its runs pass, and
the same recipe or service with a planted value that the runs rule out is flagged,
naming the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ray_serve_npu.check import check_file, check_paths
from ray_serve_npu.check.findings import Finding
from ray_serve_npu.check.model_runs import model_key, runs_by_model
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.model_compose import compose_for
from ray_serve_npu.model_recipes import find_run, recipe_for
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.vllm_cli import engine_flag, engine_kwarg_argv

TAG = SERVE_LLM_RELEASE.tag
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
MODEL_RULES = ("model-run-too-few-npus", "model-run-setting-differs")

#: A model of each kind #39 names, by the CI run whose recipe the test starts from.
MODELS = {
    "DeepSeek-V4-Flash": "DeepSeek-V4-Flash-W8A8-A3",
    "Qwen3 dense": "Qwen3-32B-W8A8-single-a2",
    "Qwen3 MoE": "Qwen3-235B-A22B-W8A8-full_graph",
    "GLM-5.1": "GLM-5.1-W8A8-PrefillMC2",
    "GLM-5.2": "GLM-5.2-W8A8-DSpark",
    "Kimi-K2.6": "Kimi-K2.6",
    "Kimi-K2.5": "Kimi-K2.5-W4A8-Case",
    "MiniMax-M2.5": "MiniMax-M2.5-w8a8-A2",
    # From its tutorial: the pinned release's CI doesn't serve it.
    "DeepSeek-V4-Pro": "DeepSeek-V4-Pro-A3",
}
#: For each setting the rule compares, values vLLM's parser takes, to plant one that none
#: of a model's runs uses.
VALID_VALUES = {
    "tokenizer_mode": ["auto", "slow"],
    "quantization": ["fp8", "awq"],
    "reasoning_parser": ["qwen3", "deepseek_r1"],
    "tool_call_parser": ["hermes", "llama3_json"],
}


def _recipe(tmp_path: Path, llm_config: dict[str, Any]) -> Path:
    """A user's recipe that writes the config out, as serve_npu.py does."""
    path = tmp_path / "serve_mine.py"
    keywords = ",\n    ".join(f"{key}={value!r}" for key, value in llm_config.items())
    path.write_text(
        f"from ray.serve.llm import LLMConfig\n\nllm_config = LLMConfig(\n    {keywords},\n)\n"
    )
    return path


def _model_findings(path: Path) -> list[Finding]:
    return [f for f in check_file(path, release=TAG) if f.rule_id in MODEL_RULES]


def _config(run_name: str) -> dict[str, Any]:
    run = find_run(run_name, TAG)
    # Weights in a folder named as the model, as the recipes and the CI keep them.
    return recipe_for(run, f"/models/{run.weights_folder}").llm_config


#: Each model's run on both paths: a Ray Serve LLM recipe, and a Compose service where
#: the run is of one node (each node of a multi-node run runs a `vllm serve` of its own).
CASES = [
    pytest.param(run_name, path, id=f"{model}-{path}")
    for model, run_name in MODELS.items()
    for path in ("recipe", "compose")
    if path == "recipe" or find_run(run_name, TAG).nodes == 1
]


def _deployment(tmp_path: Path, run_name: str, path: str, **planted: Any) -> Path:
    """The run's deployment on ``path``, with the ``planted`` engine settings over its own."""
    if path == "recipe":
        config = _config(run_name)
        config["engine_kwargs"].update(planted)
        return _recipe(tmp_path, config)
    compose = compose_for(find_run(run_name, TAG))
    (service,) = compose.compose["services"].values()
    # vLLM's parser keeps a flag's last value.
    service["command"] += [w for k, v in planted.items() for w in engine_kwarg_argv(k, v)]
    file = tmp_path / compose.file_name
    file.write_text(compose.text())
    return file


def test_each_model_has_a_compose_case_but_the_multi_node_one() -> None:
    assert sum(1 for case in CASES if case.values[1] == "compose") == len(MODELS) - 1


@pytest.mark.parametrize(("run_name", "path"), CASES)
def test_the_models_own_run_passes(tmp_path: Path, run_name: str, path: str) -> None:
    assert _model_findings(_deployment(tmp_path, run_name, path)) == []


@pytest.mark.parametrize(("run_name", "path"), CASES)
def test_fewer_npus_than_any_run_of_the_model_is_flagged(
    tmp_path: Path, run_name: str, path: str
) -> None:
    runs = runs_by_model(TAG)[model_key(find_run(run_name, TAG).model)]
    fewest = min(run.npus for run in runs)
    assert fewest > 1, f"{run_name}: a run on one NPU leaves no fewer to plant"
    one = {"tensor_parallel_size": 1, "data_parallel_size": 1, "pipeline_parallel_size": 1}
    (found,) = _model_findings(_deployment(tmp_path, run_name, path, **one))
    assert found.rule_id == "model-run-too-few-npus"
    assert "1 NPUs for /models/" in found.message
    assert f"uses fewer than {fewest} (" in found.message
    # It names where the smallest run is written.
    assert any(run.source in found.message for run in runs if run.npus == fewest)


def _plantable(run_name: str) -> tuple[str, str, list[str]]:
    """A setting the model's runs give, a valid value none of them uses, and theirs."""
    runs = runs_by_model(TAG)[model_key(find_run(run_name, TAG).model)]
    for key, values in VALID_VALUES.items():
        used = {str(run.engine[key]) for run in runs if key in run.engine}
        if used:
            return key, next(v for v in values if v not in used), sorted(used)
    raise AssertionError("no run of the model gives a setting the rule compares")


@pytest.mark.parametrize(("run_name", "path"), CASES)
def test_a_value_none_of_the_models_runs_use_is_flagged(
    tmp_path: Path, run_name: str, path: str
) -> None:
    key, planted, used = _plantable(run_name)
    deployment = _deployment(tmp_path, run_name, path, **{key: planted})
    (found,) = _model_findings(deployment)
    assert found.rule_id == "model-run-setting-differs"
    # Named as the deployment writes it: a keyword, or a flag.
    named = key if path == "recipe" else engine_flag(key)
    assert found.message.startswith(f"{named} {planted!r} for /models/")
    assert f"use {' or '.join(used)}:" in found.message
    # The line is the planted value's: in a Compose command, its flag's, the value next.
    lines = deployment.read_text().splitlines()
    assert planted in lines[found.line - 1] + lines[found.line]


def test_leaving_out_the_tokenizer_mode_every_run_sets_is_flagged(tmp_path: Path) -> None:
    config = _config(MODELS["DeepSeek-V4-Flash"])
    del config["engine_kwargs"]["tokenizer_mode"]
    (found,) = _model_findings(_recipe(tmp_path, config))
    assert "tokenizer_mode is not set for /models/DeepSeek-V4-Flash-w8a8-mtp" in found.message
    assert "sets it to deepseek_v4:" in found.message


def test_leaving_out_a_setting_some_runs_leave_out_passes(tmp_path: Path) -> None:
    # Qwen3-32B's A2 runs set reasoning_parser and its A3 runs don't: leaving it out is
    # what some of its runs do, so it passes.
    config = _config(MODELS["Qwen3 dense"])
    del config["engine_kwargs"]["reasoning_parser"]
    assert _model_findings(_recipe(tmp_path, config)) == []


def test_a_model_no_run_serves_is_not_judged(tmp_path: Path) -> None:
    config = _config(MODELS["Qwen3 dense"])
    config["model_loading_config"]["model_source"] = "/models/my-own-finetune"
    config["engine_kwargs"].update(tensor_parallel_size=1, quantization="fp8")
    assert _model_findings(_recipe(tmp_path, config)) == []


def test_a_compose_service_is_judged_by_the_flags_it_passes(tmp_path: Path) -> None:
    text = (RECIPES / "docker-compose.yaml").read_text()
    planted = text.replace(
        '--tensor-parallel-size\n      - "8"', '--tensor-parallel-size\n      - "4"'
    )
    assert planted != text
    compose = tmp_path / "docker-compose.yaml"
    compose.write_text(planted)
    (found,) = [f for f in check_file(compose) if f.rule_id in MODEL_RULES]
    assert found.message.startswith("4 NPUs for /models/DeepSeek-V4-Flash-w8a8-mtp;")
    assert (
        "the tutorial's A2 run, docs/source/tutorials/models/DeepSeek-V4-Flash.md:" in found.message
    )


def test_the_recipes_and_every_run_serve_model_builds_pass() -> None:
    files = [*RECIPES.glob("*.py"), *RECIPES.glob("*.yaml"), *RECIPES.glob("kuberay/*.yaml")]
    report = check_paths(files)
    assert report.checked >= 8
    assert [f for f in report.findings if f.rule_id in MODEL_RULES] == []


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_every_release_with_rules_reads_its_runs_by_model(tag: str) -> None:
    runs = runs_by_model.__wrapped__(tag)
    assert len(runs) >= 15, sorted(runs)
    # The tutorial's DeepSeek-V4-Flash runs join the CI's under the weights' folder name.
    flash = runs["deepseek-v4-flash-w8a8-mtp"]
    assert {"the tutorial's A2 run", "the tutorial's A3 run"} <= {run.name for run in flash}
    assert min(run.npus for run in flash) == 8


def test_a_deployment_with_values_the_checker_could_not_read_is_not_judged(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "serve_mine.py"
    recipe.write_text(
        "import os\n"
        "from ray.serve.llm import LLMConfig\n\n"
        "llm_config = LLMConfig(\n"
        "    model_loading_config={'model_id': 'q', 'model_source': '/models/Qwen3-32B-W8A8'},\n"
        "    accelerator_config={'kind': 'npu'},\n"
        "    engine_kwargs={'tensor_parallel_size': int(os.environ['TP'])},\n"
        ")\n"
    )
    findings = check_file(recipe, release=TAG)
    assert "recipe-value-unread" in {f.rule_id for f in findings}
    assert [f for f in findings if f.rule_id in MODEL_RULES] == []
