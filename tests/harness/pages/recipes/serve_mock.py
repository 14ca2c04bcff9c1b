"""A recipe as the harness reads it: model_id and http_options (the mock tier never runs it)."""

from ray import serve
from ray.serve.llm import LLMConfig, build_openai_app

MODEL_ID = "mock-model"

# __serve_start__
llm_config = LLMConfig(
    model_loading_config=dict(model_id=MODEL_ID, model_source="/models/mock"),
    deployment_config=dict(autoscaling_config=dict(min_replicas=1, max_replicas=1)),
)
app = build_openai_app({"llm_configs": [llm_config]})
serve.start(http_options={"host": "127.0.0.1", "port": 8000})
serve.run(app, blocking=True)
# __serve_end__
