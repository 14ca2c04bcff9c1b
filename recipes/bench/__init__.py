"""Benchmark sweeps for OpenAI-compatible LLM endpoints, built on ``vllm bench serve``.

``python -m bench.sweep`` (from ``recipes/``) runs one ``vllm bench serve`` per
point of a grid and writes JSON, a Markdown table and plots. ``nox -s bench``
(``ray_serve_npu_tooling.bench``) measures its points with it.
"""
