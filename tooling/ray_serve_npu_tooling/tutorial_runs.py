"""Read the ``vllm serve`` runs of vLLM-Ascend's stored tutorial pages into the runs file
the package reads (``releases/tutorials/<tag>/runs.yaml``).

The pages are MkDocs Material pages (:mod:`ray_serve_npu.mkdocs`), read block by block:

- A shell block's ``vllm serve`` command is a run where it is the only node's command
  or the first node's (no ``--headless``, data-parallel start rank 0). Its environment
  is the block's ``export`` lines before it; its node kind is the one the tab it sits
  in names (``=== "A2 series"``); its nodes are its data-parallel size over the ranks
  one node runs (``--data-parallel-size-local``).
- A command that separates prefill from decode (``--kv-transfer-config``) is not one
  engine: the page is set aside for it, once, at its first such command, as the CI's
  prefill/decode configs are.

The package reads the runs file, not the pages: the vLLM-Ascend image has no Markdown
parser. After adding a page, or a tag's pages, run
``python -m ray_serve_npu_tooling.tutorial_runs``; the test suite fails while a runs
file and its pages disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from ray_serve_npu import mkdocs, myst
from ray_serve_npu.releases.loader import release
from ray_serve_npu.releases.nightly import kv_connector
from ray_serve_npu.releases.tutorials import RUNS_FILE, TUTORIALS_DIR, UPSTREAM_DIR
from ray_serve_npu.vllm_cli import shell_commands
from ray_serve_npu.vllm_flags import stored_flags

#: The languages of a page's blocks that hold shell commands.
_SHELL = {"bash", "sh", "shell"}
#: A node kind a tab's title names: ``A2 series``, ``A3 series``.
_TAB_NODE_KIND = re.compile(r"\b(A2|A3)\b", re.IGNORECASE)


def _model(written: str) -> str:
    """The model a command serves, as its repository id: a path into a ModelScope or
    Hugging Face cache ends in ``ORG/NAME``."""
    parts = written.rstrip("/").split("/")
    return "/".join(parts[-2:]) if written.startswith("/") else written


def _exports(commands: list[list[str]]) -> dict[str, str]:
    envs: dict[str, str] = {}
    for words in commands:
        if words[:1] == ["export"]:
            for assignment in words[1:]:
                name, equals, value = assignment.partition("=")
                if equals:
                    envs[name] = value
    return envs


def page_runs(tag: str, path: Path) -> dict[str, list[dict[str, Any]]]:
    """The runs of one stored page, and the deployments of it set aside, as the runs file
    keeps them."""
    page = mkdocs.opened(path.read_text(encoding="utf-8"))
    upstream = f"{UPSTREAM_DIR}/{path.name}"
    flags = stored_flags(release(tag).vllm)
    runs: list[dict[str, Any]] = []
    set_aside: list[dict[str, Any]] = []
    for fence in myst.leaf_fences(page.text):
        if not fence.code or fence.language.lower() not in _SHELL:
            continue
        before: list[list[str]] = []
        for words_lines, line in shell_commands("\n".join(fence.content), fence.content_line):
            words = [word for word, _ in words_lines]
            if words[:2] != ["vllm", "serve"] or len(words) < 3:
                before.append(words)
                continue
            argv = words[3:]
            if "--kv-transfer-config" in argv:
                if not set_aside:
                    set_aside.append(
                        {
                            "name": path.stem,
                            "path": upstream,
                            "line": line,
                            "model": _model(words[2]),
                            "layout": "prefill_decode",
                            "connector": kv_connector(tag, argv),
                        }
                    )
                continue
            given = flags.given(argv)
            if given.get("headless") or given.get("data_parallel_start_rank"):
                continue  # a further node of the run its first node's command gives
            kinds = [m[1].upper() for t in page.tabs[line - 1] if (m := _TAB_NODE_KIND.search(t))]
            local = given.get("data_parallel_size_local")
            runs.append(
                {
                    "name": f"{path.stem}-{kinds[-1]}" if kinds else path.stem,
                    "path": upstream,
                    "line": line,
                    "model": _model(words[2]),
                    "node_kind": kinds[-1] if kinds else None,
                    "nodes": (given.get("data_parallel_size") or 1) // local if local else 1,
                    "envs": _exports(before),
                    "argv": argv,
                }
            )
    return {"runs": runs, "set_aside": set_aside}


def tag_runs(tag: str) -> dict[str, list[dict[str, Any]]]:
    """The runs file of a tag: every stored page's runs and set-aside deployments."""
    found: dict[str, list[dict[str, Any]]] = {"runs": [], "set_aside": []}
    for path in sorted((TUTORIALS_DIR / tag).glob("*.md")):
        for key, entries in page_runs(tag, path).items():
            found[key] += entries
    return found


def runs_file_text(tag: str) -> str:
    header = (
        "# Written by `python -m ray_serve_npu_tooling.tutorial_runs` from the pages in this\n"
        "# folder; the test suite fails while the two disagree. Do not edit by hand.\n"
    )
    return header + yaml.safe_dump(tag_runs(tag), sort_keys=False, allow_unicode=True, width=100)


def main() -> int:
    for folder in sorted(p for p in TUTORIALS_DIR.iterdir() if p.is_dir()):
        (folder / RUNS_FILE).write_text(runs_file_text(folder.name), encoding="utf-8")
        print(f"wrote {folder / RUNS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
