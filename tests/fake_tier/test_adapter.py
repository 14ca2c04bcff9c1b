"""The fake tier's recipe adapter: what it keeps, what it changes, and that it says so."""

from __future__ import annotations

import json
import logging
import re
import runpy
from pathlib import Path

import pytest
from ray.serve.llm import LLMConfig

import ray_serve_npu  # noqa: F401
from ray_serve_npu.envs import DRY_RUN_STAND_INS_ENV_VAR
from ray_serve_npu.fake_npu.adapter import (
    DROPPED,
    DROPPED_ENGINE_KWARGS,
    STAND_IN_WORDS,
    UNKNOWN_TO_TIER_WHY,
    UNREVIEWED_WHY,
    adapt_env,
    adapt_llm_config,
    adapt_vllm_serve,
    log_changes,
    stand_ins_from_env,
)
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.vllm_cli import VLLMServe, vllm_serve_service

RECIPES = Path(__file__).parents[2] / "recipes"

TINY = Path("/tmp/tiny-model")

PRODUCTION = LLMConfig(
    model_loading_config={"model_id": "deepseek-v4-flash", "model_source": "/models/dsv4"},
    accelerator_config={"kind": "npu"},
    placement_group_config={"bundles": [{"NPU": 1, "CPU": 2}] * 8},
    deployment_config={"autoscaling_config": {"min_replicas": 1, "max_replicas": 2}},
    engine_kwargs={
        "tensor_parallel_size": 8,
        "enable_expert_parallel": True,
        "quantization": "ascend",
        "max_model_len": 133120,
        "max_num_seqs": 32,
        "additional_config": {"enable_dsa_cp": True},
    },
    runtime_env={"env_vars": {"HCCL_BUFFSIZE": "1024", "LD_PRELOAD": "/x.so", "MY_TOKEN": "t"}},
)


def test_fake_tier_keeps_what_it_tests() -> None:
    fields, _ = adapt_llm_config(PRODUCTION, TINY)
    config = LLMConfig(**fields)
    assert config.model_id == "deepseek-v4-flash"
    assert config.accelerator_config.kind == "npu"
    assert config.deployment_config == PRODUCTION.deployment_config
    assert config.engine_kwargs["max_num_seqs"] == 32
    # One worker, one NPU bundle: still an NPU placement.
    assert config.get_engine_config().placement_bundles == [{"NPU": 1, "CPU": 2}]


def test_fake_tier_swaps_model_and_ascend_settings() -> None:
    fields, changes = adapt_llm_config(PRODUCTION, TINY)
    assert fields["model_loading_config"]["model_source"] == str(TINY)
    assert fields["engine_kwargs"]["tensor_parallel_size"] == 1
    for key in ("quantization", "enable_expert_parallel", "additional_config"):
        assert key not in fields["engine_kwargs"]
    env = fields["runtime_env"]["env_vars"]
    assert "HCCL_BUFFSIZE" not in env and "LD_PRELOAD" not in env
    assert env["MY_TOKEN"] == "t"  # not an Ascend setting: kept
    dropped = {change.key for change in changes if change.after == DROPPED}
    assert dropped >= {
        "engine_kwargs.quantization",
        "engine_kwargs.enable_expert_parallel",
        "engine_kwargs.additional_config",
        "env HCCL_BUFFSIZE",
        "env LD_PRELOAD",
    }


def test_fake_tier_logs_every_change(caplog: pytest.LogCaptureFixture) -> None:
    _, changes = adapt_llm_config(PRODUCTION, TINY)
    with caplog.at_level(logging.WARNING, logger="ray_serve_npu.fake_tier"):
        log_changes(changes)
    assert len(caplog.records) == len(changes)
    assert "fake-npu tier: engine_kwargs.tensor_parallel_size: 8 -> 1" in caplog.text


def test_fake_tier_vllm_serve_keeps_name_and_port() -> None:
    command = VLLMServe.parse(
        [
            "vllm", "serve", "/models/dsv4",
            "--served-model-name", "deepseek-v4-flash",
            "--port", "8000",
            "--tensor-parallel-size", "8",
            "--enable-expert-parallel",
            "--additional-config", '{"enable_dsa_cp": true}',
        ]
    )  # fmt: skip
    argv, changes = adapt_vllm_serve(command, TINY)
    assert argv[:2] == ["--model", str(TINY)]
    assert argv[2:6] == ["--served-model-name", "deepseek-v4-flash", "--port", "8000"]
    assert "--additional-config" not in argv and "--enable-expert-parallel" not in argv
    assert "--enforce-eager" in argv
    assert {"vllm serve --additional-config", "vllm serve --enable-expert-parallel"} <= {
        change.key for change in changes
    }


def test_fake_tier_env_turns_on_the_fake_platform() -> None:
    env, _ = adapt_env({"ASCEND_RT_VISIBLE_DEVICES": "0"})
    assert env["RAY_SERVE_NPU_FAKE_PLATFORM"] == "1"
    assert "ASCEND_RT_VISIBLE_DEVICES" not in env


def test_fake_tier_drops_the_ci_s_download_source_and_keeps_other_variables() -> None:
    # The Gemma 4 configs set it; vLLM then imports modelscope, which the tier lacks.
    env, changes = adapt_env({"VLLM_USE_MODELSCOPE": "true", "VLLM_LOGGING_LEVEL": "DEBUG"})
    assert "VLLM_USE_MODELSCOPE" not in env and env["VLLM_LOGGING_LEVEL"] == "DEBUG"
    (dropped,) = [c for c in changes if c.key == "env VLLM_USE_MODELSCOPE"]
    assert dropped.after == DROPPED and "modelscope" in dropped.why


def test_fake_tier_keeps_data_parallel_on_the_moe_model() -> None:
    import runpy

    recipe = runpy.run_path(str(Path(__file__).parents[2] / "recipes" / "serve_npu_a3.py"))
    moe = Path("/tmp/tiny-moe-model")
    fields, changes = adapt_llm_config(recipe["llm_config"], TINY, stand_ins={"moe": moe})
    config = LLMConfig(**fields)
    assert config.model_loading_config.model_source == str(moe)
    assert config.engine_kwargs["data_parallel_size"] == 4
    assert config.engine_kwargs["tensor_parallel_size"] == 1
    assert "enable_expert_parallel" not in config.engine_kwargs
    why = {change.key: change.why for change in changes}
    assert "CPU MoE kernel" in why["engine_kwargs.enable_expert_parallel"]
    assert "two cores" in why["engine_kwargs.tensor_parallel_size"]
    assert "engine_kwargs.data_parallel_size" not in why


def test_fake_tier_refuses_data_parallel_without_a_moe_model() -> None:
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "data_parallel_size": 2}}
    )
    with pytest.raises(ValueError, match="data_parallel_size > 1 needs a mixture-of-experts"):
        adapt_llm_config(config, TINY)


def test_fake_tier_vllm_serve_keeps_data_parallel_on_the_moe_model() -> None:
    service = vllm_serve_service(Path(__file__).parents[2] / "recipes" / "docker-compose-a3.yaml")
    moe = Path("/tmp/tiny-moe-model")
    argv, changes = adapt_vllm_serve(service.command, TINY, stand_ins={"moe": moe})
    assert argv[:2] == ["--model", str(moe)]
    assert argv[argv.index("--data-parallel-size") + 1] == "4"
    assert argv[argv.index("--api-server-count") + 1] == "1"
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert "--enable-expert-parallel" not in argv
    why = {change.key: change.why for change in changes}
    assert "CPU MoE kernel" in why["vllm serve --enable-expert-parallel"]
    assert "two cores" in why["vllm serve --tensor-parallel-size"]
    assert "mixture-of-experts" in why["vllm serve MODEL"]
    # Set, not dropped and set again: one change per flag.
    assert [change.key for change in changes].count("vllm serve --tensor-parallel-size") == 1


def test_fake_tier_vllm_serve_refuses_data_parallel_without_a_moe_model() -> None:
    command = VLLMServe.parse(["vllm", "serve", "/m", "--data-parallel-size", "2"])
    with pytest.raises(ValueError, match="--data-parallel-size > 1 needs a mixture-of-experts"):
        adapt_vllm_serve(command, TINY)


def _recipe_config(name: str) -> LLMConfig:
    namespace = runpy.run_path(str(RECIPES / name))
    return namespace["llm_config"]


@pytest.mark.parametrize("recipe", ["serve_npu.py", "serve_npu_a3.py"])
def test_fake_tier_keeps_the_recipes_settings_the_cpu_engine_honours(recipe: str) -> None:
    config = _recipe_config(recipe)
    fields, changes = adapt_llm_config(config, TINY, stand_ins={"moe": TINY})
    kept = fields["engine_kwargs"]
    for key in (
        "max_num_batched_tokens",
        "block_size",
        "max_num_seqs",
        "tool_call_parser",
        "enable_auto_tool_choice",
        "model_loader_extra_config",
    ):
        assert kept[key] == config.engine_kwargs[key], key
    # Every setting the tier drops from a recipe has a reason of its own.
    assert [c.key for c in changes if c.why == UNREVIEWED_WHY] == []


def test_fake_tier_drops_a_tool_parser_that_refuses_the_tiny_tokenizer_on_both_paths() -> None:
    # Hy3's parser refuses a tokenizer without its tool-call tokens: its dry-run got HTTP 500.
    tools = {"tool_call_parser": "hy_v3", "enable_auto_tool_choice": True}
    config = PRODUCTION.model_copy(update={"engine_kwargs": {**PRODUCTION.engine_kwargs, **tools}})
    fields, changes = adapt_llm_config(config, TINY)
    assert not set(tools) & set(fields["engine_kwargs"])
    why = {change.key: change.why for change in changes}
    assert "hy_v3 tool-call parser refuses" in why["engine_kwargs.tool_call_parser"]
    assert why["engine_kwargs.enable_auto_tool_choice"] == why["engine_kwargs.tool_call_parser"]
    command = VLLMServe.parse(
        ["vllm", "serve", "/m", "--tool-call-parser", "hy_v3", "--enable-auto-tool-choice"]
    )
    argv, _ = adapt_vllm_serve(command, TINY)
    assert "--tool-call-parser" not in argv and "--enable-auto-tool-choice" not in argv
    # A parser that answered on the tiny model stays, and auto tool choice with it.
    answered = {**tools, "tool_call_parser": "deepseek_v4"}
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, **answered}}
    )
    kept, _ = adapt_llm_config(config, TINY)
    assert {key: kept["engine_kwargs"][key] for key in answered} == answered


@pytest.mark.parametrize("compose_file", ["docker-compose.yaml", "docker-compose-a3.yaml"])
def test_fake_tier_keeps_the_compose_flags_the_cpu_engine_honours(compose_file: str) -> None:
    service = vllm_serve_service(RECIPES / compose_file)
    argv, changes = adapt_vllm_serve(service.command, TINY, stand_ins={"moe": TINY})
    for flag in ("--max-num-batched-tokens", "--block-size", "--tool-call-parser"):
        assert argv[argv.index(flag) + 1] == service.command.get(flag), flag
    assert "--enable-auto-tool-choice" in argv
    assert [c.key for c in changes if c.why == UNREVIEWED_WHY] == []


def test_fake_tier_says_when_it_drops_a_setting_nobody_reviewed() -> None:
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "kv_cache_dtype": "fp8"}}
    )
    fields, changes = adapt_llm_config(config, TINY)
    assert "kv_cache_dtype" not in fields["engine_kwargs"]
    why = {change.key: change.why for change in changes}
    assert why["engine_kwargs.kv_cache_dtype"] == UNREVIEWED_WHY
    assert why["engine_kwargs.quantization"] != UNREVIEWED_WHY


def test_fake_tier_says_a_prefill_decode_app_does_not_serve_on_it() -> None:
    kv_transfer = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "kv_transfer_config": kv_transfer}}
    )
    fields, changes = adapt_llm_config(config, TINY)
    assert "kv_transfer_config" not in fields["engine_kwargs"]
    why = {change.key: change.why for change in changes}
    assert why["engine_kwargs.kv_transfer_config"] == DROPPED_ENGINE_KWARGS["kv_transfer_config"]
    assert "does not serve on the fake tier" in why["engine_kwargs.kv_transfer_config"]


def test_fake_tier_keeps_a_key_vllm_does_not_know_so_the_engine_refuses_it() -> None:
    # A typo must fail on the tier as on NPUs ("Unknown engine argument"), not vanish.
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "max_num_seq": 4}}
    )
    fields, changes = adapt_llm_config(config, TINY)
    assert fields["engine_kwargs"]["max_num_seq"] == 4
    assert "engine_kwargs.max_num_seq" not in {change.key for change in changes}
    command = VLLMServe.parse(["vllm", "serve", "/m", "--max-num-seq", "4"])
    argv, _ = adapt_vllm_serve(command, TINY)
    assert argv[argv.index("--max-num-seq") + 1] == "4"


def test_fake_tier_drops_what_its_vllm_does_not_know_and_no_name_is_close_to() -> None:
    # calculate_kv_scales is an engine argument of vLLM 0.22 and 0.25.1, not of 0.29.
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "calculate_kv_scales": True}}
    )
    fields, changes = adapt_llm_config(config, TINY)
    assert "calculate_kv_scales" not in fields["engine_kwargs"]
    why = {change.key: change.why for change in changes}
    assert why["engine_kwargs.calculate_kv_scales"] == UNKNOWN_TO_TIER_WHY
    # A flag of vllm serve's own that starts no API server is not passed on unreviewed.
    argv, changes = adapt_vllm_serve(VLLMServe.parse(["vllm", "serve", "/m", "--headless"]), TINY)
    assert "--headless" not in argv
    assert {c.key: c.why for c in changes}["vllm serve --headless"] == UNREVIEWED_WHY


def test_fake_tier_leaves_a_malformed_loader_config_to_vllm() -> None:
    command = VLLMServe.parse(
        ["vllm", "serve", "/m", "--model-loader-extra-config", '{"enable_multithread_load": "true"']
    )
    argv, _ = adapt_vllm_serve(command, TINY)
    assert argv[argv.index("--model-loader-extra-config") + 1].endswith('"true"')


def test_fake_tier_reads_the_no_form_of_every_switch() -> None:
    command = VLLMServe.parse(
        ["vllm", "serve", "/m", "--no-async-scheduling", "--no-enforce-eager"]
    )
    argv, changes = adapt_vllm_serve(command, TINY)
    why = {change.key: change for change in changes}
    assert why["vllm serve --no-async-scheduling"].why == DROPPED_ENGINE_KWARGS["async_scheduling"]
    # The tier runs eager whatever the command says, and says what the command said.
    assert "--no-enforce-eager" not in argv and "--enforce-eager" in argv
    assert why["vllm serve --enforce-eager"].before is False


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"enable_multithread_load": "true", "num_threads": 8}, True),
        # vLLM 0.22.1 tests the string's truth: "false" turns multi-thread loading on.
        ('{"enable_multithread_load": "false"}', True),
    ],
)
def test_fake_tier_gives_vllm_029_the_boolean_its_loader_demands(
    given: dict[str, object] | str, expected: bool
) -> None:
    # The v0.22.1rc1 tutorial writes the string "true"; vLLM 0.29 refuses anything but a bool.
    config = PRODUCTION.model_copy(
        update={"engine_kwargs": {**PRODUCTION.engine_kwargs, "model_loader_extra_config": given}}
    )
    fields, changes = adapt_llm_config(config, TINY)
    loader = fields["engine_kwargs"]["model_loader_extra_config"]
    loader = json.loads(loader) if isinstance(loader, str) else loader
    assert loader["enable_multithread_load"] is expected
    (change,) = [c for c in changes if c.key == "engine_kwargs.model_loader_extra_config"]
    assert "JSON Boolean" in change.why


STAND_INS = {
    "dense": TINY,
    "moe": Path("/tmp/tiny-moe"),
    "mla-moe": Path("/tmp/tiny-mla-moe"),
}


def _served_by(
    model_id: str, data_parallel_size: int = 1, source: str | None = None
) -> tuple[str, str]:
    """The tiny model a config of ``model_id`` (weights in ``source``, else in a folder of
    the id's name) is served by, and why."""
    config = PRODUCTION.model_copy(
        update={
            "model_loading_config": {
                "model_id": model_id,
                "model_source": source or f"/models/{model_id}",
            },
            "engine_kwargs": {**PRODUCTION.engine_kwargs, "data_parallel_size": data_parallel_size},
        }
    )
    fields, changes = adapt_llm_config(config, TINY, stand_ins=STAND_INS)
    why = {change.key: change.why for change in changes}["model_loading_config.model_source"]
    return fields["model_loading_config"]["model_source"], why


@pytest.mark.parametrize(
    ("model_id", "stand_in", "says"),
    [
        ("qwen3-32b-w8a8", "dense", "Qwen3 dense's weights, of its architecture class `dense`"),
        ("qwen3-30b-a3b-w8a8", "moe", "Qwen3-30B-A3B.md:5"),
        ("deepseek-r1-0528-w8a8", "mla-moe", "context_parallel.md:57"),
    ],
)
def test_fake_tier_serves_a_model_with_the_tiny_model_of_its_architecture_class(
    model_id: str, stand_in: str, says: str
) -> None:
    source, why = _served_by(model_id)
    assert source == str(STAND_INS[stand_in])
    assert says in why


@pytest.mark.parametrize(
    ("model_id", "architecture"),
    [("deepseek-v4-flash", "hybrid-attention-moe"), ("glm-5.1-w8a8", "sparse-attention")],
)
def test_fake_tier_says_when_no_tiny_model_of_the_class_runs_on_the_cpu_build(
    model_id: str, architecture: str
) -> None:
    source, why = _served_by(model_id)
    assert source == str(TINY)
    assert why == (
        "a tiny random dense model stands in for the weights; the fake tier has no tiny model "
        f"of its architecture class `{architecture}` (docs/models.md says why)"
    )


def test_fake_tier_serves_a_model_no_page_classes_with_the_dense_model_and_says_nothing_more() -> (
    None
):
    source, why = _served_by("kimi-k2.6-w4a8")
    assert (source, why) == (str(TINY), "a tiny random dense model stands in for the weights")


def test_fake_tier_serves_data_parallel_of_a_dense_class_on_the_moe_model() -> None:
    source, why = _served_by("qwen3-32b-w8a8", data_parallel_size=2)
    assert source == str(STAND_INS["moe"])
    assert why == (
        "a tiny random mixture-of-experts model stands in for the weights, as vLLM refuses data "
        "parallel for a dense model"
    )


def test_fake_tier_knows_a_model_by_its_weights_directory_whatever_its_served_name() -> None:
    source, why = _served_by("my-llm", source="/models/DeepSeek-R1-0528-W8A8/")
    assert source == str(STAND_INS["mla-moe"])
    assert "DeepSeek-R1's weights" in why


def test_every_stand_in_has_words_for_its_change_line() -> None:
    assert set(STAND_IN_WORDS) == set(STAND_IN_SPECS)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{", "is not JSON"),
        ('["moe"]', "is not a JSON object"),
        ('{"MoE": "/tmp/m"}', "'MoE' is not a class with a tiny model"),
        ('{"moe": ""}', "the directory of 'moe' is empty"),
    ],
)
def test_a_bad_stand_ins_variable_names_itself_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv(DRY_RUN_STAND_INS_ENV_VAR, value)
    with pytest.raises(ValueError, match=re.escape(says)) as raised:
        stand_ins_from_env()
    assert DRY_RUN_STAND_INS_ENV_VAR in str(raised.value)
    assert '{"moe": "/path/to/tiny-moe"}' in str(raised.value)
