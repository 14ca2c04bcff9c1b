"""A recipe with a misspelled additional_config key and a broken interlock (test data)."""

from ray import serve
from ray.serve.llm import LLMConfig, build_openai_app

llm_config = LLMConfig(
    model_loading_config={"model_id": "qwen", "model_source": "/models/Qwen3-8B"},
    accelerator_type="Ascend910B4",
    engine_kwargs={
        "tensor_parallel_size": 4,
        "max_num_seqs": 8,
        "additional_config": {
            "enable_dsa_cp": True,
            "enable_cpu_bindng": True,
        },
    },
    runtime_env={"env_vars": {"VLLM_ASCEND_BALANCE_SCHEDULING": "1"}},
)

if __name__ == "__main__":
    serve.run(build_openai_app({"llm_configs": [llm_config]}))
