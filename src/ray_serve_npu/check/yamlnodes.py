"""YAML with the line of every key and list item (PyYAML node marks)."""

from __future__ import annotations

from typing import Any

import yaml

Path = tuple[str | int, ...]


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, str(key.value))
            _walk(value, child, lines)
            # A key's own line, so a block value's finding points at its key.
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines)


def load_documents(text: str) -> list[tuple[Any, dict[Path, int]]]:
    """Each document's value and a map from its key paths to 1-based lines."""
    documents = []
    for node in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if node is None:
            continue
        lines: dict[Path, int] = {}
        _walk(node, (), lines)
        value = yaml.SafeLoader("").construct_document(node)
        documents.append((value, lines))
    return documents


def flatten_lines(lines: dict[Path, int], prefix: Path) -> dict[str, int]:
    """Lines of the keys below ``prefix``, as dotted paths relative to it."""
    return {
        ".".join(str(p) for p in path[len(prefix) :]): line
        for path, line in lines.items()
        if path[: len(prefix)] == prefix and len(path) > len(prefix)
    }
