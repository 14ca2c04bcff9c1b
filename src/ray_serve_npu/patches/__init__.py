"""The ledger: every change ray-serve-npu makes to Ray Serve LLM and Serve, why, and when it goes.

Read this first. One module of this package patches each Ray module
(its *target*), named after it, and opens with why, the upstream change it stands
in for, and when it goes. ``PATCHES`` lists every patch in the
order they are applied: each target is patched after the targets it imports.

The import hook (``ray_serve_npu_autoload``, a finder and nothing else) watches
the targets; :mod:`ray_serve_npu.activation` applies what this ledger lists. The
ledger itself is data, standard library only, so that the hook's test reads it
without Ray.
"""

from __future__ import annotations

from dataclasses import dataclass

from ray_serve_npu.envs import API_KEY_ENV_VAR, DRY_RUN_MODEL_ENV_VAR

#: The upstream change that gives Ray Serve LLM an npu kind of its own.
NPU_KIND_PR = "ray-project/ray#63617"

ACCELERATORS = "ray.llm._internal.serve.core.configs.accelerators"
LLM_CONFIG = "ray.llm._internal.serve.core.configs.llm_config"
VLLM_MODELS = "ray.llm._internal.serve.engines.vllm.vllm_models"
LLM_SERVER = "ray.llm._internal.serve.core.server.llm_server"
INGRESS = "ray.llm._internal.serve.core.ingress.ingress"
INGRESS_BUILDER = "ray.llm._internal.serve.core.ingress.builder"
HAPROXY_TEMPLATES = "ray.serve._private.haproxy_templates"
HAPROXY = "ray.serve._private.haproxy"


@dataclass(frozen=True)
class Patch:
    """One change the plugin makes to a Ray module, and when it can go."""

    #: The Ray module it changes.
    target: str
    #: ``module:function`` of the plugin that applies it to that module.
    patcher: str
    what: str
    why: str
    #: The upstream pull request it stands in for, or None where there is none yet.
    upstream: str | None
    #: The first Ray release that carries the upstream change, or None while no
    #: release does. The patch goes once :data:`ray_serve_npu.compat.SUPPORTED_RAY`
    #: starts at that release, that is after the last supported Ray without it.
    fixed_in_ray: str | None = None
    #: Part of the npu kind: steps aside where Ray Serve LLM has an npu kind of its own.
    npu_kind: bool = False
    #: Applied only in a process of the fake-NPU tier: one where
    #: :data:`~ray_serve_npu.envs.DRY_RUN_MODEL_ENV_VAR` is set when the plugin activates.
    fake_tier: bool = False
    #: Its target is Ray Serve's own, which every Serve controller loads, LLM or not:
    #: applied without the Ray version guard, whose range is Ray Serve LLM's (the
    #: patch checks the lines it changes itself).
    serve_wide: bool = False

    @property
    def module(self) -> str:
        """The plugin's module that applies it."""
        return self.patcher.partition(":")[0]

    @property
    def function(self) -> str:
        return self.patcher.partition(":")[2]


#: Every patch, in the order the targets must be patched (each imports the ones before).
PATCHES: tuple[Patch, ...] = (
    Patch(
        target=ACCELERATORS,
        patcher="ray_serve_npu.patches.accelerators:add_npu_kind",
        what="Adds NPUConfig and NPUAccelerator, and rebinds the module's union of "
        "accelerator configs, its AcceleratorType (plus the Ascend SoC names) and its "
        "bundle inference (NPU bundles infer npu) to the plugin's.",
        why="Ray Serve LLM knows the gpu, tpu and cpu kinds only: "
        'accelerator_config={"kind": "npu"} fails validation.',
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        target=LLM_CONFIG,
        patcher="ray_serve_npu.patches.llm_config:resolve_and_check_npu",
        what="LLMConfig's fields accept NPUConfig and the Ascend SoC names; an unset "
        "accelerator_config resolves to npu from an Ascend accelerator_type or NPU "
        "bundles; configs whose parts name different hardware fail with "
        "HardwareMismatchError.",
        why="Ray resolves a config it can't place to the gpu kind and checks GPU and "
        "TPU types only.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        target=VLLM_MODELS,
        patcher="ray_serve_npu.patches.vllm_models:npu_accelerator_backend",
        what="VLLMEngineConfig's accelerator is NPUAccelerator for an npu config.",
        why="Ray's _build_accelerator falls back to the GPU backend for a kind it does not know.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        target=LLM_SERVER,
        patcher="ray_serve_npu.patches.llm_server:drop_zero_gpu",
        what="Drops the GPU key from the replica bundles of an npu deployment, and "
        "refuses num_gpus with the npu kind.",
        why='LLMServer.get_deployment_options merges "GPU": 0 into the first bundle of '
        f"every deployment; the review of {NPU_KIND_PR} flags the same merge for its npu "
        "kind.",
        upstream=NPU_KIND_PR,
        npu_kind=True,
    ),
    Patch(
        target=LLM_SERVER,
        patcher="ray_serve_npu.patches.llm_server:adapt_for_fake_tier",
        what=f"On the fake-NPU tier only ({DRY_RUN_MODEL_ENV_VAR} set, as "
        "ray-serve-npu dry-run and the docs tests set it): each LLMConfig becomes its "
        "fake-tier variant, in place, before Ray computes its deployment options; "
        "every change is logged (ray_serve_npu.fake_npu.adapter).",
        why="Every way of building an app passes its configs through "
        "LLMServer.get_deployment_options (Ray's builders, the plugin's, an LLMServer "
        "deployment of its own), and binds that same object to the deployment; "
        "adapted anywhere else, a recipe built another way would load its real model "
        "with its real parallelism on CPUs.",
        upstream=None,
        fake_tier=True,
    ),
    Patch(
        target=INGRESS,
        patcher="ray_serve_npu.patches.ingress:name_served_models_in_404",
        what="The 404 for an unknown model also names the served models and the fix.",
        why="Ray's 404 (OpenAiIngress._get_model_id) names only the model asked for, and "
        "a client model that differs from the served model_id is the commonest mistake.",
        upstream=None,
    ),
    Patch(
        target=INGRESS,
        patcher="ray_serve_npu.patches.ingress:require_api_key",
        what=f"With {API_KEY_ENV_VAR} set where the app is built, every request must "
        "carry Authorization: Bearer <key> (ray_serve_npu.ingress).",
        why="Ray Serve LLM's OpenAI ingress has no API key; ray-project/ray#59578 and "
        "#55369 ask for one, with no pull request.",
        upstream=None,
    ),
    Patch(
        target=INGRESS,
        patcher="ray_serve_npu.patches.ingress:answer_failures_before_streaming",
        what="A request that fails before its answer begins gets a stable 503 (replica "
        "lost) or 500 (engine failed) with its request id (ray_serve_npu.streams).",
        why="Ray's ingress answers 500 with the exception's text, which names nodes, "
        "processes and actors.",
        upstream=None,
    ),
    Patch(
        target=INGRESS,
        patcher="ray_serve_npu.patches.ingress:end_streams_in_errors",
        what="A stream whose replica or engine fails ends in an error event "
        "(ray_serve_npu.streams).",
        why="Ray's ingress ends such a stream with neither data: [DONE] nor a "
        "finish_reason, which OpenAI clients take for a complete answer.",
        upstream=None,
    ),
    Patch(
        target=INGRESS_BUILDER,
        patcher="ray_serve_npu.patches.builder:protect_direct_streaming",
        what="With RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING=1, a stream of the vLLM app the "
        "engine's replica serves in place of the OpenAI ingress ends in the plugin's "
        f"error event when the engine fails (ray_serve_npu.streams), and with "
        f"{API_KEY_ENV_VAR} set where the app is built, the app requires the key "
        "(ray_serve_npu.ingress).",
        why="Direct streaming removes the ingress that carries the key and the stable "
        "error events, so the endpoint would answer without the key and end a failed "
        "stream with vLLM's own error or none.",
        upstream=None,
    ),
    Patch(
        target=INGRESS_BUILDER,
        patcher="ray_serve_npu.patches.builder:require_api_key_on_the_request_router",
        what=f"With {API_KEY_ENV_VAR} set where the app is built and direct streaming "
        "on, the ingress request router's replica requires the key on its own port "
        "(/internal/route and /health) (ray_serve_npu.ingress).",
        why="HAProxy asks that router which engine replica takes each request; it "
        "listens on Serve's HTTP host, every interface with HAProxy, and answers "
        "anyone.",
        upstream=None,
    ),
    Patch(
        target=HAPROXY_TEMPLATES,
        patcher="ray_serve_npu.patches.haproxy_templates:keep_haproxy_side_ports_local",
        what="HAProxy's statistics page and Prometheus exporter listen on 127.0.0.1, not "
        "on every interface, and its admin socket is its owner's (mode 600, not 666).",
        why="With RAY_SERVE_ENABLE_HA_PROXY=1, which direct streaming needs, anyone who "
        "reaches a node reads HAProxy's statistics and metrics without a password, and "
        "any user of the node can reconfigure HAProxy through its admin socket.",
        upstream=None,
        serve_wide=True,
    ),
    Patch(
        target=HAPROXY,
        patcher="ray_serve_npu.patches.haproxy:forward_the_key_to_the_request_router",
        what="HAProxy's Lua action passes the client's Authorization header on to the "
        "ingress request router, and leaves a request whose key the plugin's middleware "
        "refused there to the engine replicas, whose keyed app answers the plugin's 401; "
        "any other refusal of a router stays Ray's 503.",
        why="Ray's Lua forwards no client header but a session and a request id, and "
        "turns any refusal of the router into a 503 that names the router.",
        upstream=None,
        serve_wide=True,
    ),
)

#: The modules the import hook watches, in the order they are patched.
TARGET_MODULES: tuple[str, ...] = tuple(dict.fromkeys(patch.target for patch in PATCHES))
#: The targets of Ray Serve's own, patched without the Ray version guard.
SERVE_WIDE_TARGETS: frozenset[str] = frozenset(p.target for p in PATCHES if p.serve_wide)
#: The plugin's modules that apply the patches.
PATCH_MODULES: tuple[str, ...] = tuple(dict.fromkeys(patch.module for patch in PATCHES))
