"""Benchmark sweeps for OpenAI-compatible LLM endpoints, built on ``vllm bench serve``.

``python -m bench.sweep`` (from ``recipes/``) runs one ``vllm bench serve`` per
point of a grid and writes JSON, a Markdown table and plots;
``python -m bench.fake_tier`` (``nox -s bench``) compares direct vLLM with Ray
Serve LLM on the fake-NPU tier.
"""
