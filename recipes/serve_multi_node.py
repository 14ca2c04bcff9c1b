"""Serve DeepSeek-V4-Flash-w8a8-mtp on a Ray cluster of Atlas 800 A2 nodes: one replica per node.

Run it on the head node of a Ray cluster whose nodes each advertise eight NPUs:
``python serve_multi_node.py``. Serve starts one replica and adds one more, up to
one per node, while requests queue up; every replica holds all eight NPUs of one
node. The app answers OpenAI-compatible requests on http://127.0.0.1:8000/v1 as the
model ``deepseek-v4-flash``.

The engine settings are those of ``serve_npu.py`` (the single-node recipe), which
this file imports; only the replica count and the placement strategy differ.
"""

import os

from ray import serve
from ray.serve.llm import LLMConfig
from serve_npu import llm_config as single_node_config

from ray_serve_npu import build_openai_app

# __multi_node_start__
MODEL_PATH = os.environ.get("MODEL_PATH", "/models/DeepSeek-V4-Flash-w8a8-mtp")
#: The Ray cluster's NPU nodes: at most one replica per node.
NUM_NODES = 2

llm_config = LLMConfig(
    **{
        **single_node_config.model_dump(exclude_unset=True),
        "model_loading_config": {"model_id": "deepseek-v4-flash", "model_source": MODEL_PATH},
        # STRICT_PACK: all eight {"NPU": 1} bundles of a replica on one node, or
        # none; tensor parallelism never crosses the network between nodes.
        "placement_group_config": {"bundle_per_worker": {"NPU": 1}, "strategy": "STRICT_PACK"},
        "deployment_config": {
            "autoscaling_config": {
                "min_replicas": 1,
                "max_replicas": NUM_NODES,
                # Requests in flight per replica that Serve aims for; the replica's
                # engine batches up to max_num_seqs (32) of them.
                "target_ongoing_requests": 16,
            },
        },
    }
)
# __multi_node_end__

if __name__ == "__main__":
    # __run_start__
    serve.run(build_openai_app({"llm_configs": [llm_config]}), blocking=True)
    # __run_end__
