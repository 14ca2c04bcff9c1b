"""The fake-NPU tier: Ray Serve LLM on a local Ray cluster whose nodes advertise fake
``NPU`` resources, with vLLM's CPU build serving a tiny random model. Real Ray, real
engine, real HTTP; fake devices and a fake model.

What ``ray-serve-npu dry-run`` runs (:mod:`.dry_run`), and what the repository's tests and
benchmark harness serve recipes with (:mod:`.fake_tier`). Importing it does nothing.
"""
