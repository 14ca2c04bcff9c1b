"""Tooling for the ray-serve-npu site: the style checker, the translation checks, the release notes.

Imports no Ray: ``nox -s lint`` runs the style checker with only this directory on the path.
"""
