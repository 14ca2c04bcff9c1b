"""The repository's own tooling: what tests and builds ray-serve-npu, never shipped in its wheel.

- :mod:`.harness`: the docs harness, the pytest plugin that checks every code block of every
  page and, with ``--run-recipes``, runs each page on the fake-NPU tier or on Ascend NPUs;
- :mod:`.mock_engine`: an engine for Ray Serve LLM that answers without a model, for the
  plugin's placement tests;
- :mod:`.docs`: the site's style checker, translation checks and release notes.

Installed beside the product by ``nox`` (``pip install ./tooling``); importing it does nothing.
"""
