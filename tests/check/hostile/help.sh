#!/bin/sh
vllm serve /models/Qwen3-8B --host 127.0.0.1 \
  --help
