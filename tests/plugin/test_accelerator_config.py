"""The npu kind inside LLMConfig: construction, bundles, inference and mismatches."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import pytest
from npu_configs import make_llm_config
from pydantic import ValidationError
from ray.llm._internal.serve.core.configs.accelerators import (
    CPUConfig,
    GPUConfig,
    TPUConfig,
)
from ray.serve.llm import LLMConfig
from ray.serve.llm.deployment import LLMServer

from ray_serve_npu import (
    NPU_ACCELERATOR_VALUES,
    HardwareMismatchError,
    NPUAccelerator,
    NPUConfig,
)
from ray_serve_npu.hardware import A2, A3

KINDS = ("cpu", "gpu", "tpu", "npu")
#: One bundle resource and one accelerator type per kind (cpu has no type).
BUNDLE_OF = {"cpu": {"CPU": 1}, "gpu": {"GPU": 1}, "tpu": {"TPU": 1}, "npu": {"NPU": 1}}
TYPE_OF = {"gpu": "A100", "tpu": "TPU-V4", "npu": "Ascend910B"}
CONFIG_OF = {"cpu": CPUConfig, "gpu": GPUConfig, "tpu": TPUConfig, "npu": NPUConfig}


@pytest.mark.parametrize(
    "accelerator_config", [{"kind": "npu"}, NPUConfig()], ids=["dict", "object"]
)
def test_npu_config_builds_npu_backend(accelerator_config: Any) -> None:
    config = make_llm_config(accelerator_config=accelerator_config)
    assert isinstance(config.accelerator_config, NPUConfig)
    engine_config = config.get_engine_config()
    assert isinstance(engine_config.accelerator, NPUAccelerator)
    # Any kind but cpu runs vLLM's Ray executor, which asks Ray for NPUs per worker.
    assert engine_config.get_initialization_kwargs()["distributed_executor_backend"] == "ray"


def test_default_bundles_one_npu_per_device() -> None:
    config = make_llm_config(
        accelerator_config={"kind": "npu"},
        engine_kwargs={"tensor_parallel_size": 4, "pipeline_parallel_size": 2},
    )
    assert config.get_engine_config().placement_bundles == [{"NPU": 1}] * 8


def test_default_bundles_carry_accelerator_type_hint() -> None:
    config = make_llm_config(
        accelerator_type="Ascend910B", engine_kwargs={"tensor_parallel_size": 2}
    )
    assert isinstance(config.accelerator_config, NPUConfig)
    assert (
        config.get_engine_config().placement_bundles
        == [{"NPU": 1, "accelerator_type:Ascend910B": 0.001}] * 2
    )


def test_bundle_per_worker_infers_npu() -> None:
    config = make_llm_config(
        placement_group_config={"bundle_per_worker": {"NPU": 1, "CPU": 2}},
        engine_kwargs={"tensor_parallel_size": 2},
    )
    assert isinstance(config.accelerator_config, NPUConfig)
    assert config.get_engine_config().placement_bundles == [{"NPU": 1, "CPU": 2}] * 2


def test_explicit_bundles_infer_npu_and_stay_as_written() -> None:
    bundles = [{"NPU": 2, "CPU": 4}, {"NPU": 2}]
    config = make_llm_config(placement_group_config={"bundles": bundles})
    assert isinstance(config.accelerator_config, NPUConfig)
    assert config.get_engine_config().placement_bundles == bundles


@pytest.mark.parametrize("soc", sorted(A2.soc_names + A3.soc_names))
def test_every_a2_and_a3_soc_name_is_an_npu_type(soc: str) -> None:
    assert soc in NPU_ACCELERATOR_VALUES
    config = make_llm_config(accelerator_type=soc)
    assert isinstance(config.accelerator_config, NPUConfig)
    # The engine config keeps the type (an enum field in Ray that lacks the A3 names).
    assert config.get_engine_config().accelerator_type == soc


def test_gpu_and_tpu_inference_unchanged() -> None:
    assert isinstance(make_llm_config(accelerator_type="A100").accelerator_config, GPUConfig)
    assert isinstance(make_llm_config(accelerator_type="TPU-V4").accelerator_config, TPUConfig)
    assert isinstance(make_llm_config().accelerator_config, GPUConfig)
    cpu_only = make_llm_config(placement_group_config={"bundles": [{"CPU": 1}]})
    assert isinstance(cpu_only.accelerator_config, CPUConfig)


def _outcome(**fields: Any) -> str:
    """The resolved kind, or ``error: <message>`` of the validator that refused the fields."""
    try:
        return make_llm_config(**fields).accelerator_config.kind
    except ValidationError as error:
        return f"error: {error.errors()[0]['ctx']['error']}"


def _ray_outcome(**fields: Any) -> str:
    """What Ray's own resolution and check make of these fields, without the plugin."""
    config = LLMConfig.model_construct(model_loading_config={"model_id": "tiny"}, **fields)
    try:
        LLMConfig._resolve_accelerator_config.__wrapped__(config)
        LLMConfig._check_accelerator_type_matches_hardware.__wrapped__(config)
    except ValueError as error:
        return f"error: {error}"
    return config.accelerator_config.kind


MISMATCH_CASES = [
    pytest.param(
        {
            "accelerator_config": CONFIG_OF[kind](),
            "placement_group_config": {"bundles": [BUNDLE_OF[other]]},
        },
        kind,
        other,
        id=f"kind-{kind}-bundles-{other}",
    )
    for kind, other in itertools.permutations(KINDS, 2)
] + [
    pytest.param(
        {"accelerator_config": CONFIG_OF[kind](), "accelerator_type": TYPE_OF[other]},
        kind,
        other,
        id=f"kind-{kind}-type-{other}",
    )
    for kind, other in itertools.permutations(KINDS, 2)
    if other in TYPE_OF
]


@pytest.mark.parametrize(("fields", "kind", "other"), MISMATCH_CASES)
def test_hardware_mismatch_between_every_pair_of_kinds(
    fields: dict[str, Any], kind: str, other: str
) -> None:
    outcome = _outcome(**fields)
    if "npu" not in (kind, other):
        # Pairs without NPUs keep Ray's behaviour exactly, error or not.
        assert outcome == _ray_outcome(**fields)
        return
    assert outcome.startswith("error: Hardware mismatch:")
    assert f"'{kind}'" in outcome  # the resolved kind
    assert other.upper() in outcome  # the other side: bundles or accelerator type
    assert "Fix:" in outcome


def test_bundles_that_mix_npu_and_gpu_are_a_mismatch() -> None:
    with pytest.raises(ValueError, match="Hardware mismatch: .*GPU and NPU"):
        make_llm_config(placement_group_config={"bundles": [{"NPU": 1}, {"GPU": 1}]})


def _replica_bundles(config: LLMConfig) -> list[dict[str, float]]:
    return LLMServer.get_deployment_options(config)["placement_group_bundles"]


def _ray_replica_bundles(config: LLMConfig) -> list[dict[str, float]]:
    # Ray's own, under every wrapper the plugin puts around it.
    ray_get_options = inspect.unwrap(LLMServer.get_deployment_options.__func__)
    return ray_get_options(LLMServer, config)["placement_group_bundles"]


def test_npu_replica_bundle_has_no_gpu_key(ray_with_fake_npus: None) -> None:
    config = make_llm_config(
        accelerator_config={"kind": "npu"}, engine_kwargs={"tensor_parallel_size": 8}
    )
    bundles = _replica_bundles(config)
    assert all("GPU" not in bundle for bundle in bundles)
    # The replica actor's CPU joins the first engine bundle, as Ray does it.
    assert bundles[0] == {"CPU": 1, "NPU": 1}
    assert bundles[1:] == [{"NPU": 1}] * 7
    # Ray alone writes a GPU key into it: the upstream pull request's open bug.
    assert _ray_replica_bundles(config)[0] == {"CPU": 1, "GPU": 0, "NPU": 1}


def test_npu_replica_asking_for_gpus_is_a_mismatch(ray_with_fake_npus: None) -> None:
    config = make_llm_config(
        accelerator_config={"kind": "npu"},
        deployment_config={"ray_actor_options": {"num_gpus": 1}},
    )
    with pytest.raises(HardwareMismatchError, match="num_gpus"):
        _replica_bundles(config)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param(
            {"accelerator_type": "A100", "engine_kwargs": {"tensor_parallel_size": 2}},
            id="gpu-typed",
        ),
        pytest.param(
            {"placement_group_config": {"bundles": [{"GPU": 0.5, "custom_resource": 2}]}},
            id="gpu-fractional-custom",
        ),
        pytest.param(
            {
                "accelerator_config": {"kind": "gpu"},
                "deployment_config": {
                    "ray_actor_options": {"num_gpus": 0.25, "resources": {"x": 1}}
                },
            },
            id="gpu-replica-resources",
        ),
        pytest.param(
            {"accelerator_type": "TPU-V4", "engine_kwargs": {"tensor_parallel_size": 4}}, id="tpu"
        ),
        pytest.param({"placement_group_config": {"bundles": [{"CPU": 2}]}}, id="cpu"),
    ],
)
def test_gpu_tpu_cpu_replica_bundles_unchanged(
    ray_with_fake_npus: None, fields: dict[str, Any]
) -> None:
    config = make_llm_config(**fields)
    assert _replica_bundles(config) == _ray_replica_bundles(config)


def test_ascend_type_with_gpu_bundles_is_a_mismatch() -> None:
    with pytest.raises(ValueError, match="accelerator_type='Ascend910B' is a NPU type"):
        make_llm_config(
            accelerator_type="Ascend910B", placement_group_config={"bundles": [{"GPU": 1}]}
        )
