"""Read the ``vllm serve`` runs of vLLM-Ascend's stored tutorial pages into the runs file
the package reads (``releases/tutorials/<tag>/runs.yaml``).

The pages are MkDocs Material pages (:mod:`ray_serve_npu.mkdocs`), read block by block:

- A shell block's ``vllm serve`` command is a run where it is the only node's command
  or the first node's (no ``--headless``, data-parallel start rank 0). Its environment
  is the block's ``export`` lines before it; its node kind is the one the tab it sits
  in names (``=== "A2 series"``); its nodes are its data-parallel size over the ranks
  one node runs (``--data-parallel-size-local``). A further node's command joins the
  last run of its node kind above it, and must set what that run sets, but its own
  rank, address and API server.
- A command that separates prefill from decode (``--kv-transfer-config``) is not one
  engine: the page's prefill/decode deployment is set aside, as ``PAGE-PD``, at its
  first such command, as the CI's prefill/decode configs are.
- A value the shell fills (``--port $2``) outside a prefill/decode command stops the
  read, naming the page and line: a run's values are written out.

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

from ray_serve_npu import mkdocs
from ray_serve_npu.check.markdown import SHELL, code_blocks
from ray_serve_npu.releases.nightly import kv_connector, node_differences, settings_of
from ray_serve_npu.releases.tutorials import RUNS_FILE, TUTORIALS_DIR, UPSTREAM_DIR
from ray_serve_npu.vllm_cli import shell_commands

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
    text = path.read_text(encoding="utf-8")
    tabs = mkdocs.opened(text).tabs
    upstream = f"{UPSTREAM_DIR}/{path.name}"
    runs: list[dict[str, Any]] = []
    set_aside: list[dict[str, Any]] = []
    #: Each run's nodes so far: environment, words and where, by the run's index.
    nodes: list[list[tuple[dict[str, str], list[str], str]]] = []
    for language, body, first_line in code_blocks(text):
        if language not in SHELL:
            continue
        before: list[list[str]] = []
        for words_lines, line in shell_commands(body, first_line):
            words = [word for word, _ in words_lines]
            if words[:2] != ["vllm", "serve"] or len(words) < 3:
                before.append(words)
                continue
            argv, where = words[3:], f"{upstream}:{line}"
            if "--kv-transfer-config" in argv:
                if not set_aside:
                    set_aside.append(
                        {
                            "name": f"{path.stem}-PD",
                            "path": upstream,
                            "line": line,
                            "model": _model(words[2]),
                            "layout": "prefill_decode",
                            "connector": kv_connector(tag, argv),
                        }
                    )
                continue
            given, envs = settings_of(tag, argv, where), _exports(before)
            kinds = [m[1].upper() for t in tabs[line - 1] if (m := _TAB_NODE_KIND.search(t))]
            kind = kinds[-1] if kinds else None
            if given.get("headless") or given.get("data_parallel_start_rank"):
                # A further node of the last run of its node kind on the page.
                first = [i for i, run in enumerate(runs) if run["node_kind"] == kind]
                if not first:
                    raise ValueError(
                        f"{where}: a further node's command (--headless, or a start rank "
                        "above 0) with no first node's command of its node kind above it"
                    )
                nodes[first[-1]].append((envs, argv, where))
                continue
            dp, local = given.get("data_parallel_size") or 1, given.get("data_parallel_size_local")
            runs.append(
                {
                    "name": f"{path.stem}-{kind}" if kind else path.stem,
                    "path": upstream,
                    "line": line,
                    "model": _model(words[2]),
                    "node_kind": kind,
                    "nodes": -(-dp // local) if local else 1,
                    "envs": envs,
                    "argv": argv,
                }
            )
            nodes.append([(envs, argv, where)])
    for run, run_nodes in zip(runs, nodes, strict=True):
        run["other_nodes_argv"] = [argv for _, argv, _ in run_nodes[1:]]
        if differ := node_differences(tag, run_nodes):
            raise ValueError(
                f"{run['path']}:{run['line']}: the nodes of {run['name']} set "
                f"{', '.join(differ)} each their own way, which one LLMConfig can't say; "
                "leave the page out of ray_serve_npu/releases/tutorials/"
            )
    return {"runs": runs, "set_aside": set_aside}


def tag_runs(tag: str) -> dict[str, list[dict[str, Any]]]:
    """The runs file of a tag: every stored page's runs and set-aside deployments, each
    under a name of its own."""
    found: dict[str, list[dict[str, Any]]] = {"runs": [], "set_aside": []}
    named: dict[str, str] = {}
    for path in sorted((TUTORIALS_DIR / tag).glob("*.md")):
        for key, entries in page_runs(tag, path).items():
            for entry in entries:
                where = f"{entry['path']}:{entry['line']}"
                if (other := named.setdefault(entry["name"], where)) != where:
                    raise ValueError(
                        f"{where} and {other} are both named {entry['name']!r}; "
                        "serve_model.py takes a run by its name"
                    )
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
