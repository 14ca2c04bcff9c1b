#!/bin/sh
vllm serve /models/Qwen3-8B --config /etc/vllm/serve.yaml
