"""Every run vLLM-Ascend gives at a release: its nightly CI's test cases and multi-node
configs (:mod:`ray_serve_npu.releases.nightly`) and its tutorials' commands
(:mod:`ray_serve_npu.releases.tutorials`), and those of either that are not one engine."""

from __future__ import annotations

from ray_serve_npu.releases.nightly import ServeRun, SetAside, nightly_runs, set_aside_configs
from ray_serve_npu.releases.tutorials import tutorial_runs, tutorial_set_aside


def serve_runs(tag: str) -> tuple[ServeRun, ...]:
    """The CI's runs of release ``tag``, then its stored tutorials'."""
    return (*nightly_runs(tag), *tutorial_runs(tag))


def set_aside(tag: str) -> tuple[SetAside, ...]:
    """The CI's configs and the tutorials' deployments at ``tag`` that are not one engine."""
    return (*set_aside_configs(tag), *tutorial_set_aside(tag))
