"""vLLM-Ascend's nightly CI runs as Ray Serve LLM recipes (#39): each setting the run's
words give, by its engine keyword, and what the recipe leaves out, with why."""

from __future__ import annotations

import pytest

from ray_serve_npu.model_recipes import (
    ENVS_LEFT_OUT,
    SERVE_DOES,
    UNSAFE_SETTINGS,
    find_run,
    not_built_because,
    recipe_for,
    run_key,
)
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.nightly import nightly_runs, read_run, set_aside_configs
from ray_serve_npu.vllm_flags import stored_flags

TAG = SERVE_LLM_RELEASE.tag
RUNS = nightly_runs(TAG)


def test_a_run_gives_only_the_settings_its_words_give() -> None:
    run = find_run("Qwen3-32B-W8A8-single-a2", TAG)
    assert run.settings == {
        "quantization": "ascend",
        "enable_prefix_caching": False,  # --no-enable-prefix-caching
        "tensor_parallel_size": 4,
        "port": 8000,
        "max_model_len": 40960,
        "max_num_batched_tokens": 40960,
        "block_size": 128,
        "trust_remote_code": True,
        "reasoning_parser": "qwen3",
        "gpu_memory_utilization": 0.9,
        "enforce_eager": True,  # server_cmd_extra
    }


def test_the_a3_deepseek_run_is_a_data_parallel_gang_of_the_tutorials_layout() -> None:
    recipe = recipe_for(find_run("DeepSeek-V4-Flash-W8A8-A3", TAG), "/models/dsv4")
    engine = recipe.llm_config["engine_kwargs"]
    assert recipe.data_parallel
    assert (engine["data_parallel_size"], engine["tensor_parallel_size"]) == (4, 4)
    assert engine["enable_expert_parallel"] is True
    assert engine["speculative_config"]["method"] == "mtp"
    assert recipe.llm_config["accelerator_config"] == {"kind": "npu"}
    assert recipe.llm_config["model_loading_config"] == {
        "model_id": "deepseek-v4-flash-w8a8-mtp",
        "model_source": "/models/dsv4",
    }
    assert "port" not in engine and "SERVER_PORT" not in recipe.llm_config["runtime_env"]


def test_what_serve_does_itself_is_left_out_with_why() -> None:
    counted = [
        run for run in RUNS if "api_server_count" in run.settings
    ]  # the CI's API-server processes: Ray Serve LLM's ingress is that server
    assert counted
    recipe = recipe_for(counted[0], "/w")
    dropped = {d.name: d.why for d in recipe.dropped}
    assert dropped["api_server_count"] == "Ray Serve LLM's OpenAI ingress is the API server"
    assert dropped["port"].startswith("Serve's proxy takes the requests")
    assert dropped["SERVER_PORT"].startswith("the CI's port")
    assert "api_server_count" not in recipe.llm_config["engine_kwargs"]


def test_the_ci_s_multiprocessing_method_is_left_out_for_the_ray_address_vllm_passes_on() -> None:
    # Set to spawn, vLLM's engine core started without the replica's Ray address: on the
    # fake tier it started a Ray of its own and failed with KeyError: 'bundles_to_node_id'.
    (run,) = [r for r in nightly_runs(SERVE_LLM_RELEASE.tag) if r.name == "Qwen3-32B-QuaRot"]
    assert run.envs["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    recipe = recipe_for(run, "/w")
    assert "VLLM_WORKER_MULTIPROC_METHOD" not in recipe.llm_config["runtime_env"]["env_vars"]
    dropped = {d.name: d.why for d in recipe.dropped}
    assert "Ray address" in dropped["VLLM_WORKER_MULTIPROC_METHOD"]


def test_a_variable_no_process_can_read_is_left_out() -> None:
    # An upstream config spells `VLLM-ASCEND_ENABLE_NZ`: no program reads such a name.
    (run,) = [run for run in RUNS if "VLLM-ASCEND_ENABLE_NZ" in run.envs][:1]
    recipe = recipe_for(run, "/w")
    assert "VLLM-ASCEND_ENABLE_NZ" not in recipe.llm_config["runtime_env"]["env_vars"]
    assert "VLLM-ASCEND_ENABLE_NZ" in {d.name for d in recipe.dropped}


@pytest.mark.parametrize("run", RUNS, ids=run_key)
def test_every_run_becomes_engine_keywords_ray_serve_llm_takes(run) -> None:
    recipe = recipe_for(run, "/w")
    # Nothing left out for not being an engine keyword: every flag the CI gives is one
    # Ray Serve LLM takes, one whose job Serve does, or one that opens the endpoint.
    left_out = SERVE_DOES | UNSAFE_SETTINGS | ENVS_LEFT_OUT
    assert [d for d in recipe.dropped if d.name not in left_out] == [
        d for d in recipe.dropped if "-" in d.name
    ]
    takes = set(stored_flags(SERVE_LLM_RELEASE.vllm).engine_kwargs)
    assert set(recipe.llm_config["engine_kwargs"]) <= takes
    engine = recipe.llm_config["engine_kwargs"]
    assert engine.get("tensor_parallel_size", 1) == run.tensor_parallel
    assert engine.get("data_parallel_size", 1) == run.data_parallel
    assert recipe.data_parallel == (run.data_parallel > 1)


def test_a_repeated_flag_keeps_every_value_as_vllm_does() -> None:
    run = find_run("Qwen3-32B-W8A8-single-a2", TAG)
    argv = [*run.argv, "--middleware", "a.b", "--middleware", "c.d"]
    twice = read_run(TAG, run.path, run.line, run.name, run.model, run.envs, argv, node_kind=None)
    assert twice.settings["middleware"] == ["a.b", "c.d"]


def test_runs_are_found_by_name_in_any_case_and_by_node_kind_where_names_repeat() -> None:
    assert find_run("qwen3-32b-w8a8-single-a2", TAG).name == "Qwen3-32B-W8A8-single-a2"
    a2, a3 = find_run("MiniMax-M2.5-w8a8-A2", TAG), find_run("MiniMax-M2.5-w8a8-a3", TAG)
    assert (a2.node_kind, a3.node_kind) == ("A2", "A3")
    assert len({run_key(run) for run in RUNS}) == len(RUNS)


def test_an_unknown_run_names_the_close_ones_and_how_to_list_them() -> None:
    with pytest.raises(LookupError) as error:
        find_run("MiniMax-M2.5-w8a8", TAG)
    assert "did you mean MiniMax-M2.5-w8a8-A2, MiniMax-M2.5-w8a8-A3?" in str(error.value)
    assert "python serve_model.py --list" in str(error.value)


def test_every_name_the_models_table_shows_finds_its_run() -> None:
    # docs/_ext/nightly_runs.py shows run_key(run); serve_model.py takes that name.
    assert all(find_run(run_key(run), TAG) is run for run in RUNS) and len(RUNS) > 30


def test_a_multi_node_run_is_one_data_parallel_gang_with_each_nodes_own_words_left_out() -> None:
    run = find_run("Kimi-K2_5-W4A8-A2-dual-nodes", TAG)
    assert (run.nodes, run.node_kinds, run.npus) == (2, ("A2",), 16)
    assert len(run.other_nodes_argv) == 1 and "--headless" in run.other_nodes_argv[0]
    recipe = recipe_for(run, "/models/Kimi-K2.5-W4A8")
    engine = recipe.llm_config["engine_kwargs"]
    assert recipe.data_parallel
    assert (engine["data_parallel_size"], engine["tensor_parallel_size"]) == (2, 8)
    dropped = {d.name: d.why for d in recipe.dropped}
    for key in ("data_parallel_size_local", "data_parallel_address", "data_parallel_rpc_port"):
        assert key not in engine and dropped[key] == SERVE_DOES[key]


@pytest.mark.parametrize(
    ("tag", "name", "why"),
    [
        (TAG, "Qwen3-235B-disagg-pd", "separates prefill and decode engines, joined by "),
        (TAG, "GLM5_1-W8A8-EP-external", "each data-parallel rank a `vllm serve` of its own"),
        (
            "v0.26.0rc1",
            "GLM-5.1-W8A8C8-A3_128k_90_50",
            "its nodes set gpu_memory_utilization each their own way",
        ),
    ],
)
def test_a_multi_node_config_of_no_one_engine_names_why_it_has_no_recipe(
    tag: str, name: str, why: str
) -> None:
    with pytest.raises(LookupError) as error:
        find_run(name, tag)
    assert f"{name} (tests/e2e/nightly/multi_node/" in str(error.value)
    assert "has no Ray Serve LLM recipe: " in str(error.value) and why in str(error.value)
    (config,) = [c for c in set_aside_configs(tag) if c.name == name]
    assert why in not_built_because(config)


def test_a_local_media_path_is_left_out_with_why() -> None:
    # Kimi-K2.5's two-node CI config lets API requests read local files under `/`.
    run = find_run("Kimi-K2_5-W4A8-A2-dual-nodes", TAG)
    assert run.settings["allowed_local_media_path"] == "/"
    recipe = recipe_for(run, "/models/Kimi-K2.5-W4A8")
    assert "allowed_local_media_path" not in recipe.llm_config["engine_kwargs"]
    why = {d.name: d.why for d in recipe.dropped}["allowed_local_media_path"]
    assert why == UNSAFE_SETTINGS["allowed_local_media_path"] and "security risk" in why
