"""``nox -s bench``: direct vLLM against Ray Serve LLM on the fake-NPU tier.

The harness behind the benchmarks page, not a reader's tool: it measures each load
point with the reader's sweep tool (``recipes/bench``, imported as ``bench``, so it
runs from ``recipes/``, as ``nox -s bench`` runs it).
"""
