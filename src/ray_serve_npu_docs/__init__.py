"""Tooling for the ray-serve-npu site: the style checker and the translation checks.

A package of its own, apart from ``ray_serve_npu``, so that ``nox -s lint`` runs it
without installing Ray.
"""
