"""Tooling for the ray-serve-npu site: the style checker, the translation checks, the release notes.

Imports no Ray: ``nox -s lint`` runs the style checker from source, with the project's MyST
reader (``ray_serve_npu.myst``) and no project installed.
"""
