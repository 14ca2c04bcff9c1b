"""Serve one DeepSeek-V4-Flash-w8a8-mtp engine across two Atlas 800 A2 nodes (16 NPUs).

Run it on the head node of a Ray cluster of two A2 nodes started as the multi-node
page shows: ``python serve_span_nodes.py``. One replica's sixteen engine workers,
one per NPU, fill both nodes; tensor parallelism crosses the network between them.

vLLM-Ascend v0.25.1rc1 documents tensor parallelism across nodes over Ray
(``docs/source/tutorials/features/ray.md``, with Qwen3-235B-A22B), but its
DeepSeek-V4-Flash tutorial deploys the model on one node, or over several with
prefill/decode separation (Mooncake), not with one engine across nodes. Treat this
recipe as the Ray side of such a deployment, not as a configuration vLLM-Ascend
has validated for this model.
"""

import os

from ray import serve
from ray.serve.llm import LLMConfig
from serve_npu import llm_config as single_node_config

from ray_serve_npu import build_openai_app

# __span_start__
MODEL_PATH = os.environ.get("MODEL_PATH", "/models/DeepSeek-V4-Flash-w8a8-mtp")

single_node = single_node_config.model_dump(exclude_unset=True)
llm_config = LLMConfig(
    **{
        **single_node,
        "model_loading_config": {"model_id": "deepseek-v4-flash", "model_source": MODEL_PATH},
        # Sixteen engine workers: eight on each A2 node.
        "engine_kwargs": {**single_node["engine_kwargs"], "tensor_parallel_size": 16},
        # PACK fills one node, then puts the rest of the bundles on the next one.
        "placement_group_config": {"bundle_per_worker": {"NPU": 1}, "strategy": "PACK"},
        "deployment_config": {"num_replicas": 1},
    }
)
# __span_end__

if __name__ == "__main__":
    serve.run(build_openai_app({"llm_configs": [llm_config]}), blocking=True)
