"""A run of vLLM-Ascend's nightly CI or tutorials as a Docker Compose service.

The Compose path's counterpart of :mod:`ray_serve_npu.model_recipes`: the run's own
``vllm serve`` words and environment, in the release's image for the node kind, in the
container that ``recipes/docker-compose.yaml`` sets up (its NPU device nodes, the
host's driver files read-only, the API key from ``OPENAI_API_KEY``, loopback only).
The container's parts are owned here; a test holds the readable Compose recipes to them.
Nothing here imports Ray or vLLM.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from ray_serve_npu.envs import API_KEY_ENV_VAR
from ray_serve_npu.hardware import NODE_KINDS
from ray_serve_npu.model_recipes import UNSAFE_SETTINGS, Dropped, run_environment, run_key
from ray_serve_npu.releases.loader import release
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.vllm_flags import read_flags, stored_flags

#: Where the service's model is in the container, by the weights' folder name.
MODELS_IN_CONTAINER = "/models"
#: The port and address vLLM listens on: every recipe's port, on loopback only.
PORT = 8000
HOST = "127.0.0.1"
#: The device nodes every NPU container needs besides ``/dev/davinciN``.
CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
#: The host's driver files the container reads, each mounted read-only.
DRIVER_MOUNTS = (
    "/usr/local/dcmi",
    "/usr/local/Ascend/driver/tools/hccn_tool",
    "/usr/local/bin/npu-smi",
    "/usr/local/Ascend/driver/lib64/",
    "/usr/local/Ascend/driver/version.info",
    "/etc/ascend_install.info",
    "/etc/hccn.conf",
)
#: vLLM writes its caches here, so it stays writable.
CACHE_MOUNT = "/root/.cache:/root/.cache"
#: The container's settings that don't depend on the run.
CONTAINER: dict[str, Any] = {
    "restart": "unless-stopped",
    "network_mode": "host",
    "shm_size": "512g",
}
#: vLLM answers 401 to any /v1 request without this key; Compose refuses to start while
#: ``OPENAI_API_KEY`` is unset.
API_KEY_ENV = {
    "VLLM_API_KEY": "${OPENAI_API_KEY:?set OPENAI_API_KEY to the API key clients must send}"
}
#: Settings of a run that the service sets its own way, with why.
SERVICE_SETS: dict[str, str] = {
    "port": f"the service listens on port {PORT}, as every recipe here does",
    "host": f"the service listens on {HOST} only; keep the API key and put a TLS proxy in "
    "front before you serve other machines",
    "served_model_name": "the name clients send is the model's name in lower case, as on "
    "the Ray Serve LLM path",
}
#: vLLM's API key guards only paths under /v1, /v2 and /inference
#: (vllm/entrypoints/serve/utils/server_utils.py:42, GUARDED_PREFIX, vLLM 0.25.1).
_UNGUARDED = "which vLLM's API key does not guard (it guards /v1, /v2 and /inference only)"
#: Settings of a run that open vLLM's own server wider than serving needs, with why;
#: besides those that open any engine wider (``model_recipes.UNSAFE_SETTINGS``).
SERVER_UNSAFE_SETTINGS: dict[str, str] = {
    # vllm/entrypoints/serve/profile/api_router.py:37-45 (vLLM 0.25.1): "This should ONLY
    # be used for local development!"
    "profiler_config": "with a profiler set, vLLM's server adds /start_profile and "
    f"/stop_profile, {_UNGUARDED}, and calls them for local development only",
}
#: The run's variables that the service leaves out, with why.
ENVS_LEFT_OUT: dict[str, str] = {
    "SERVER_PORT": f"the CI's port for `vllm serve`; the service's is {PORT}",
    # vllm/entrypoints/openai/api_server.py:198-201 (vLLM 0.25.1) registers them, and
    # vllm/entrypoints/serve/__init__.py:35-39 logs "SECURITY WARNING: Development
    # endpoints are enabled! This should NOT be used in production!"
    "VLLM_SERVER_DEV_MODE": "it adds vLLM's development endpoints (such as /sleep and "
    f"/collective_rpc), {_UNGUARDED}, and vLLM warns against it in production",
}


class ComposeError(ValueError):
    """A run that one Compose service can't serve, or a node kind it can't serve on."""


class ModelCompose(BaseModel):
    """A Compose file of one service that runs ``run`` with ``vllm serve``."""

    run: ServeRun
    node_kind: str
    service_name: str
    compose: dict[str, Any]
    dropped: list[Dropped]

    @property
    def file_name(self) -> str:
        """A name Compose and ``ray-serve-npu dry-run`` take for the file."""
        return f"docker-compose-{self.service_name}.yaml"

    def text(self) -> str:
        """The file: a header that says what it serves and how to start it, then the YAML."""
        run = self.run
        header = [
            f"{run_key(run)}: {run.model} with `vllm serve` in vLLM-Ascend {run.release}'s "
            f"image, on one Atlas 800 {self.node_kind} node ({run.npus} NPUs).",
            f"Source: {run.path}:{run.line} at {run.release}.",
            f"Start:  MODEL_PATH=/models/{run.weights_folder} docker compose -f {self.file_name} "
            "up -d",
            "        with the API key clients must send in OPENAI_API_KEY",
            f'Serves: http://{HOST}:{PORT}/v1, model "{run.served_name}"',
            *(f"Left out: {d.name}: {d.why}" for d in self.dropped),
        ]
        body = yaml.safe_dump(self.compose, sort_keys=False, width=2**16)
        return "".join(f"# {line}".rstrip() + "\n" for line in header) + "\n" + body


def _escaped(word: str) -> str:
    # Compose fills `$NAME` from the shell that runs it, and refuses a `$` form it doesn't
    # know (`price$`); `$$` is a literal `$`.
    return word.replace("$", "$$")


def _node_kind(run: ServeRun, node_kind: str | None) -> str:
    """The node kind asked for, else the run's: the one its source names, or where it
    names none, the one kind whose node holds its NPUs. Where no kind the source names
    holds the run, only ``--node-kind`` may choose one that does."""
    named = run.node_kinds
    holding = [k for k, kind in NODE_KINDS.items() if run.npus <= kind.devices_per_node]
    if not holding:
        raise ComposeError(
            f"{run_key(run)} uses {run.npus} NPUs, more than one node of any kind holds "
            f"({', '.join(f'{k}: {kind.devices_per_node}' for k, kind in NODE_KINDS.items())})"
        )
    # The kinds the source names that hold the run; where none does, any kind that holds it.
    fitting = [k for k in named if k in holding] or holding
    if node_kind is None:
        if len(fitting) == 1 and (not named or fitting[0] in named):
            return fitting[0]
        said = f"its source names {' and '.join(named)}" if named else "its source names none"
        if named and not set(named) & set(holding):
            said += f", whose node holds fewer than its {run.npus} NPUs"
        raise ComposeError(
            f"{run_key(run)}: {said}; pass " + " or ".join(f"--node-kind {k}" for k in fitting)
        )
    chosen = node_kind.upper()
    if chosen not in NODE_KINDS:
        raise ComposeError(
            f"--node-kind {node_kind}: not a node kind; pass "
            + " or ".join(f"--node-kind {k}" for k in NODE_KINDS)
        )
    if chosen not in fitting:
        holds = (
            f"{run_key(run)} runs on {' and '.join(named)}, not {chosen}"
            if chosen in holding
            else f"{run_key(run)} uses {run.npus} NPUs and an {chosen} node has "
            f"{NODE_KINDS[chosen].devices_per_node}"
        )
        raise ComposeError(
            f"{holds}: pass "
            + " or ".join(f"--node-kind {k}" for k in fitting)
            + (", or leave the option out" if len(fitting) == 1 and fitting[0] in named else "")
        )
    return chosen


def compose_for(run: ServeRun, node_kind: str | None = None) -> ModelCompose:
    """The Compose file that serves ``run`` on one node of ``node_kind`` (the run's own
    where it names one). Raises :class:`ComposeError` for a run of several nodes, whose
    nodes each run a `vllm serve` of their own, and for a node kind that can't serve it."""
    if run.nodes > 1:
        raise ComposeError(
            f"{run_key(run)} spans {run.nodes} nodes, each running a `vllm serve` of its "
            "own, and a Compose file starts one node's; serve it with Ray Serve LLM: "
            f'{API_KEY_ENV_VAR}="$OPENAI_API_KEY" python serve_model.py {run_key(run)}'
        )
    kind = _node_kind(run, node_kind)
    flags = stored_flags(release(run.release).vllm)
    dropped: list[Dropped] = []
    words: list[str] = []
    for flag in read_flags(run.argv):
        given = flags.given(flag.argv())
        why = next(
            (
                reasons[key]
                for key in given
                for reasons in (SERVICE_SETS, UNSAFE_SETTINGS, SERVER_UNSAFE_SETTINGS)
                if key in reasons
            ),
            None,
        )
        if why is None:
            words += flag.argv()
        else:
            dropped += [Dropped(name=key, why=why) for key in given]
    environment, left_out = run_environment(
        run,
        ENVS_LEFT_OUT,
        set_it="Compose would fill it from the shell that runs `docker compose` instead: "
        "set {name} in the service's environment to its value on the node",
    )
    in_container = f"{MODELS_IN_CONTAINER}/{run.weights_folder}"
    service_name = run_key(run).lower()
    command = [
        *("vllm", "serve", in_container),
        *("--served-model-name", run.served_name, "--host", HOST, "--port", str(PORT)),
        *(_escaped(word) for word in words),
    ]
    try:
        image = release(run.release).image(kind)
    except LookupError as error:
        raise ComposeError(str(error)) from None
    service = {
        "image": image,
        "container_name": service_name,
        **CONTAINER,
        "devices": [f"/dev/davinci{index}" for index in range(run.npus)] + list(CONTROL_DEVICES),
        "environment": {**{k: _escaped(v) for k, v in environment.items()}, **API_KEY_ENV},
        "volumes": [
            f"${{MODEL_PATH:?set MODEL_PATH to the directory of {run.model}'s weights}}"
            f":{in_container}:ro",
            *(f"{path}:{path}:ro" for path in DRIVER_MOUNTS),
            CACHE_MOUNT,
        ],
        "command": command,
    }
    return ModelCompose(
        run=run,
        node_kind=kind,
        service_name=service_name,
        compose={"services": {service_name: service}},
        dropped=dropped + left_out,
    )
