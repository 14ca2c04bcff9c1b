"""The names of ray-serve-npu's environment variables, and of the others it reads.

One module, standard library only, as ``vllm/envs.py`` and ``vllm_ascend/envs.py``
keep theirs: activation, the ingress and the fake-NPU tier import the names from
here, so none of them imports another for a name, and a test holds every
``RAY_SERVE_NPU_*`` name in ``src/`` (in code and in messages, not in docstrings) to
this module. The modules that read a variable say what its values mean. Ray's own
settings that the fake tier's cluster sets for its nodes stay beside it
(``ray_serve_npu.fake_npu.cluster``).
"""

from __future__ import annotations

# The plugin

#: Set to 1 to turn the plugin off (:mod:`ray_serve_npu.activation`).
DISABLE_ENV_VAR = "RAY_SERVE_NPU_DISABLE"
#: The OpenAI endpoint's API key, read where the app is built (:mod:`ray_serve_npu.ingress`).
API_KEY_ENV_VAR = "RAY_SERVE_NPU_API_KEY"

# Ray Core's Ascend support (``ray/_private/accelerators/npu.py``); written out here so
# that nothing needs Ray for a name, and a test checks them against Ray's.

#: The variable Ray sets to the NPU ids it assigns to a worker.
VISIBLE_DEVICES_ENV_VAR = "ASCEND_RT_VISIBLE_DEVICES"
#: Set to 1 to stop Ray from setting :data:`VISIBLE_DEVICES_ENV_VAR`.
NOSET_VISIBLE_DEVICES_ENV_VAR = "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"

# Ray's token authentication (``ray/_private/authentication/``), which both tiers run,
# as the pages tell readers to.

#: Ray's switch for token authentication.
RAY_AUTH_MODE_ENV_VAR = "RAY_AUTH_MODE"
#: Ray's first token source (``src/ray/rpc/authentication/authentication_token_loader.cc``).
AUTH_TOKEN_ENV_VAR = "RAY_AUTH_TOKEN"

# The pages' own variables, which the tiers set as a reader exports them.

#: Where the model weights are (the one setting of the Ascend tier).
MODEL_PATH_ENV_VAR = "MODEL_PATH"
#: The key the pages' clients send: the variable OpenAI's clients read.
CLIENT_API_KEY_ENV_VAR = "OPENAI_API_KEY"

# The fake-NPU tier (:mod:`ray_serve_npu.fake_npu`)

#: A tiny model's directory: each ``LLMConfig`` deployed in a process with it set is
#: served in its fake-tier variant (``ray_serve_npu.fake_npu.adapter.adapt_deployed_config``).
#: Set by ``ray-serve-npu dry-run`` and the fake-NPU tier.
DRY_RUN_MODEL_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_MODEL"
#: Set beside :data:`DRY_RUN_MODEL_ENV_VAR`: a JSON object of the tiny model directory
#: that stands in for each architecture class (``{"moe": DIR, "mla-moe": DIR}``), chosen
#: by the served model's family (``ray_serve_npu.releases.architectures``). Its ``moe``
#: model also serves data-parallel configs: vLLM refuses data parallel for a dense model.
DRY_RUN_STAND_INS_ENV_VAR = "RAY_SERVE_NPU_DRY_RUN_STAND_INS"
#: 1 selects the fake platform among vLLM's platform plugins.
FAKE_PLATFORM_ENV_VAR = "RAY_SERVE_NPU_FAKE_PLATFORM"
#: The Ray resource the fake platform asks for (default NPU).
FAKE_DEVICE_ENV_VAR = "RAY_SERVE_NPU_FAKE_DEVICE"
#: Where engine processes record the devices Ray gave them (one JSON file per process).
DEVICE_RECORD_DIR_ENV_VAR = "RAY_SERVE_NPU_DEVICE_RECORD_DIR"
#: A directory that outlives one run, where the fake tier keeps its tiny models.
CACHE_DIR_ENV_VAR = "RAY_SERVE_NPU_TMPDIR"
