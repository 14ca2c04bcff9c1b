"""`ray-serve-npu check` on recipes/serve_model.py (#39): the recipe serves whichever run
of vLLM-Ascend's CI its command line names, so the checker judges every run of the
release it reads, each finding naming the run and its line in the CI's config."""

from __future__ import annotations

import re
from pathlib import Path

from ray_serve_npu.check import check_paths, parse_file
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.runs import serve_runs

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "serve_model.py"
#: ``RUN (tests/e2e/nightly/single_node/models/configs/FILE.yaml:LINE at TAG): ...``, a
#: multi-node run's ``multi_node/internal_dp/config/FILE.yaml``, or a tutorial's page.
LABELLED = re.compile(
    r"^\S+ \((tests/e2e/nightly/(single_node/models/configs|multi_node/internal_dp/config)/"
    r"\S+\.yaml|docs/source/tutorials/models/\S+\.md):\d+ at v\S+\): "
)


def test_every_run_the_recipe_serves_is_judged() -> None:
    parsed = parse_file(RECIPE)
    runs = serve_runs(SERVE_LLM_RELEASE.tag)
    assert len(parsed.deployments) == len(runs)
    assert {d.model.value for d in parsed.deployments if d.model} == {r.model for r in runs}


def test_only_the_runs_the_models_page_names_as_refused_hold_errors_and_findings_name_the_run() -> (
    None
):
    report = check_paths([RECIPE], release=SERVE_LLM_RELEASE.tag)
    assert report.checked == 1 and report.unreadable == []
    # The CI's runs hold none; the DeepSeek-V4-Pro tutorial's A2 command holds two,
    # which the models page names (tests/docs/test_models_table.py).
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert {(f.rule_id, f.message.split(" ")[0]) for f in errors} == {
        ("load-strategy-with-multithread-load", "DeepSeek-V4-Pro-A2"),
        ("multithread-load-not-boolean", "DeepSeek-V4-Pro-A2"),
    }
    assert report.findings, "the CI's configs have warnings the checker knows (the models page)"
    assert all(LABELLED.match(f.message) for f in report.findings), report.findings[:3]


def test_a_recipe_that_names_one_run_is_judged_as_that_run(tmp_path: Path) -> None:
    recipe = tmp_path / "serve_qwen.py"
    recipe.write_text(
        "from ray.serve.llm import LLMConfig\n"
        "from ray_serve_npu.model_recipes import find_run, recipe_for\n"
        f"run = find_run('Qwen3-32B-W8A8-single-a2', '{SERVE_LLM_RELEASE.tag}')\n"
        "llm_config = LLMConfig(**recipe_for(run, '/w').llm_config)\n"
    )
    (deployment,) = parse_file(recipe).deployments
    assert deployment.label is not None and deployment.label.startswith("Qwen3-32B-W8A8-single-a2 ")
    assert deployment.engine["tensor_parallel_size"].value == 4


def test_a_recipe_that_writes_its_own_config_is_read_as_written(tmp_path: Path) -> None:
    # It imports the builder, but its LLMConfig is a literal: that is what it serves.
    recipe = tmp_path / "serve_own.py"
    recipe.write_text(
        "from ray.serve.llm import LLMConfig\n"
        "from ray_serve_npu.model_recipes import recipe_for\n"
        "llm_config = LLMConfig(model_loading_config={'model_id': 'q', 'model_source': '/w'},\n"
        "    accelerator_config={'kind': 'npu'}, engine_kwargs={'tensor_parallel_size': 2})\n"
    )
    (deployment,) = parse_file(recipe).deployments
    assert deployment.label is None
    assert deployment.engine["tensor_parallel_size"].value == 2
