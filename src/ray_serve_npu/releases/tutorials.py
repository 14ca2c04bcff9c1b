"""The ``vllm serve`` runs of vLLM-Ascend's model tutorials at a release, as data.

``tutorials/<tag>/*.md`` are vLLM-Ascend's own ``docs/source/tutorials/models/*.md`` at
that release, copied unchanged, for models its nightly CI does not serve at that tag
(``tutorials/README.md`` says which, and from where). ``tutorials/<tag>/runs.yaml``
holds the runs read from them, which the repository's tooling writes (its
``tutorial_runs`` module says how a page is read): this module reads that file, because
the vLLM-Ascend image, where ``serve_model.py`` runs, has no Markdown parser.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from ray_serve_npu.releases.loader import DATA_DIR
from ray_serve_npu.releases.nightly import ServeRun, SetAside, read_run

#: Where the copies live, one folder per release tag.
TUTORIALS_DIR = DATA_DIR / "tutorials"
#: Where the pages are in vLLM-Ascend's repository.
UPSTREAM_DIR = "docs/source/tutorials/models"
#: The runs read from a tag's pages, in the tag's folder.
RUNS_FILE = "runs.yaml"


def _run(tag: str, entry: dict[str, Any]) -> ServeRun:
    return read_run(
        tag,
        entry["path"],
        entry["line"],
        entry["name"],
        entry["model"],
        entry["envs"],
        entry["argv"],
        node_kind=entry["node_kind"],
        nodes=entry["nodes"],
        other_nodes_argv=tuple(tuple(argv) for argv in entry["other_nodes_argv"]),
    )


@cache
def _read(tag: str) -> tuple[tuple[ServeRun, ...], tuple[SetAside, ...]]:
    path = TUTORIALS_DIR / tag / RUNS_FILE
    if not path.is_file():
        return (), ()
    found = yaml.safe_load(path.read_text(encoding="utf-8"))
    runs = tuple(_run(tag, entry) for entry in found["runs"])
    set_aside = tuple(SetAside(release=tag, nodes=None, **entry) for entry in found["set_aside"])
    return runs, set_aside


def tutorial_runs(tag: str) -> tuple[ServeRun, ...]:
    """The runs of the release's stored tutorial pages; none where it keeps none."""
    return _read(tag)[0]


def tutorial_set_aside(tag: str) -> tuple[SetAside, ...]:
    """The stored tutorial pages' deployments that are not one engine."""
    return _read(tag)[1]
