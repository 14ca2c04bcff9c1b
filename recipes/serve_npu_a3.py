"""Serve DeepSeek-V4-Flash-w8a8-mtp on one Atlas 800 A3 node (sixteen NPUs) with Ray Serve LLM.

Run it inside the vLLM-Ascend A3 container (the ``-a3`` image), on a node where
``ray start --head`` has run: ``python serve_npu_a3.py``. The app answers
OpenAI-compatible requests on http://127.0.0.1:8000/v1 as the model
``deepseek-v4-flash``.

Every engine setting follows the single-node A3 example of vLLM-Ascend's
DeepSeek-V4-Flash tutorial (docs/source/tutorials/models/DeepSeek-V4-Flash.md at
v0.25.1rc1): four data-parallel ranks of four NPUs each, experts spread across all
sixteen. vLLM-Ascend's nightly A3 case
(tests/e2e/nightly/single_node/models/configs/DeepSeek-V4-Flash-W8A8-A3.yaml at the
tag) runs the same layout with prefix caching on, which this recipe follows, and
with a few settings the tutorial doesn't have, which it doesn't. As in
serve_npu.py, FlashComm1 is switched on through ``additional_config`` rather than
its deprecated environment variable, and the served name is ours, not the
tutorial's ``dsv4``. The tutorial's ``--api-server-count 1`` has no counterpart:
Ray Serve LLM's OpenAI ingress is the API server.

Ray Serve LLM's data-parallel pattern runs each rank as one replica of a gang:
Serve reserves one placement group for the four ranks' sixteen ``{"NPU": 1}``
bundles, packed on the node, and Ray gives each rank's engine workers their own
four NPUs; each worker binds the one at its local rank. If one rank fails, Serve
restarts all four.
"""

import os

from ray import serve
from ray.serve.llm import LLMConfig

from ray_serve_npu import build_dp_openai_app

# __serve_start__
# Where the weights are: a directory every Ray node can read.
MODEL_PATH = os.environ.get("MODEL_PATH", "/models/DeepSeek-V4-Flash-w8a8-mtp")

llm_config = LLMConfig(
    model_loading_config={
        # The name clients send as "model".
        "model_id": "deepseek-v4-flash",
        "model_source": MODEL_PATH,
    },
    # One placement-group bundle of {"NPU": 1} per engine worker.
    accelerator_config={"kind": "npu"},
    # One data-parallel group: Serve starts data_parallel_size replicas for it.
    deployment_config={"num_replicas": 1},
    engine_kwargs={
        # Parallelism: four data-parallel ranks, each an engine over four NPUs;
        # the experts are spread across all sixteen.
        "data_parallel_size": 4,
        "tensor_parallel_size": 4,
        "enable_expert_parallel": True,
        # W8A8 weights need vLLM-Ascend's quantization method.
        "quantization": "ascend",
        # Context and batch: the tutorial's A3 values.
        "max_model_len": 1048576,
        "max_num_batched_tokens": 10240,
        "max_num_seqs": 64,
        "gpu_memory_utilization": 0.9,
        "block_size": 128,
        # The tutorial's A3 example leaves prefix caching at vLLM's default, on
        # for this model; the nightly A3 case turns it on explicitly.
        "enable_prefix_caching": True,
        # DeepSeek-V4 tokenizer, reasoning and tool-call parsers.
        "tokenizer_mode": "deepseek_v4",
        "reasoning_parser": "deepseek_v4",
        "tool_call_parser": "deepseek_v4",
        "enable_auto_tool_choice": True,
        # Weight loading with many loader threads. No safetensors_load_strategy:
        # the multi-thread loader ignores it, and vLLM 0.25 refuses the pair.
        "model_loader_extra_config": {"enable_multithread_load": True, "num_threads": 128},
        # Multi-token prediction: one speculative token from the MTP layer.
        "speculative_config": {"method": "mtp", "num_speculative_tokens": 1, "enforce_eager": True},
        # Full ACL graphs for decode batches only.
        "compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY"},
        "async_scheduling": True,
        # vLLM-Ascend's own settings (vllm_ascend/ascend_config.py). It ignores
        # keys it does not know without a word, so spell them exactly. No DSA
        # context parallel here: the tutorial's A3 example does not use it.
        "additional_config": {
            "ascend_compilation_config": {
                "enable_npugraph_ex": True,
                "enable_static_kernel": False,
            },
            "enable_cpu_binding": True,
            "enable_flashcomm1": True,
            "multistream_overlap_shared_expert": True,
        },
    },
    # The tutorial's A3 environment, set in every replica and engine worker.
    runtime_env={
        "env_vars": {
            "OMP_PROC_BIND": "false",
            "OMP_NUM_THREADS": "10",
            "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
            "LD_PRELOAD": "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
            "HCCL_BUFFSIZE": "1024",
            "HCCL_OP_EXPANSION_MODE": "AIV",
            "TASK_QUEUE_ENABLE": "1",
        }
    },
)

# __serve_end__

if __name__ == "__main__":
    # __run_start__
    # Built here, not at import, so that other scripts can import llm_config
    # without connecting to Ray.
    app = build_dp_openai_app({"llm_config": llm_config})
    serve.run(app, blocking=True)
    # __run_end__
