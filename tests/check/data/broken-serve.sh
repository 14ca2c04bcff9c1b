#!/bin/bash
# vllm serve command line with a misspelled flag and a bad value (test data).
export VLLM_ASCEND_ENABLE_FLASHCOMM1=1
vllm serve /models/Qwen3-8B \
  --tensor-parallel-size 8 \
  --enable-prefix-cache \
  --max-model-len lots
