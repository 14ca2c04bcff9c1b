"""YAML documents as plain data, with the line of every key and list item (ruamel.yaml).

ruamel.yaml's round-trip loader keeps each key's and item's position and follows merge
keys (``<<: *common``). What it leaves unbounded is bounded here, since the checker reads
files from anyone: nesting depth, recursive aliases, and how far aliases expand (a few
lines of aliases can stand for billions of values). A file past a bound is an
``InputError``, as is anything that is not YAML. Line length is bounded before any
parser runs (``check.MAX_LINE``).
"""

from __future__ import annotations

import datetime
import warnings
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.composer import MaxDepthExceededError
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import LiteralScalarString

from ray_serve_npu.check.problems import InputError

Path = tuple[str | int, ...]

# A Compose file or Serve config holds hundreds of values, nested a dozen deep.
MAX_VALUES = 100_000
MAX_DEPTH = 64
_STANDARD_TAGS = "tag:yaml.org,2002:"
_STR_TAG = _STANDARD_TAGS + "str"


@dataclass
class Document:
    """One YAML document: JSON-like data and the 1-based line of each key path."""

    data: Any
    lines: dict[Path, int]
    # First content line of each literal block scalar (``key: |``): its lines map one
    # to one onto the file's, so YAML inside it can report the file's lines.
    literal_blocks: dict[Path, int]


class _Constructor(RoundTripConstructor):  # type: ignore[misc]
    """ruamel.yaml's round-trip constructor, refusing an alias inside its own anchor.

    ruamel.yaml itself gives such an alias the value null (constructor.py,
    ``construct_object``), which would be read as a setting left empty.
    """

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node not in self.constructed_objects and node in self.recursive_objects:
            raise InputError(
                "an alias refers to the value that contains it (a recursive alias)",
                "point the alias at a value outside its own anchor, or write the value out",
                node.start_mark.line + 1,
            )
        return super().construct_object(node, deep=deep)


def _yaml(version: tuple[int, int] | None) -> YAML:
    yaml = YAML(typ="rt")
    yaml.Constructor = _Constructor
    # Checked as the composer builds each node, before anything recurses deeper; a
    # collection MAX_DEPTH levels down still holds its values.
    yaml.max_depth = MAX_DEPTH + 1
    if version is not None:
        yaml.version = version
    return yaml


def _syntax_error(error: YAMLError) -> InputError:
    if isinstance(error, MarkedYAMLError) and error.problem_mark is not None:
        problem = error.problem or error.context or "unreadable"
        return InputError(
            f"not valid YAML: {problem}",
            "correct the YAML at that line",
            error.problem_mark.line + 1,
        )
    first = (str(error).strip().splitlines() or ["unreadable"])[0]
    return InputError(f"not valid YAML: {first}", "save the file as UTF-8 YAML text")


def _plain_key(key: Any, line: int) -> str:
    if isinstance(key, bool | ScalarBoolean):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, str | int | float):
        return str(key)
    raise InputError(
        "a mapping key is a list or mapping",
        "use a string as the key",
        line,
    )


class _Walk:
    """Copies ruamel.yaml's data into plain values and records lines, within the bounds.

    Lines are 1-based lines of the text the walk reads.
    """

    def __init__(self) -> None:
        self.values = 0
        self.lines: dict[Path, int] = {}
        self.literal_blocks: dict[Path, int] = {}

    def value(self, value: Any, path: Path, line: int) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise InputError(
                f"its aliases expand to more than {MAX_VALUES} values",
                "write the values out instead of nesting aliases; "
                "no Compose file or Serve config is this large",
                line,
            )
        if len(path) > MAX_DEPTH:
            raise InputError(
                f"its aliases nest more than {MAX_DEPTH} levels deep",
                "write the values out instead of nesting aliases",
                line,
            )
        where = ".".join(map(str, path)) or "the document"
        tag = getattr(getattr(value, "tag", None), "value", None)
        if tag == _STR_TAG and isinstance(value, TaggedScalar):
            return str(value.value)
        if tag is not None and not tag.startswith(_STANDARD_TAGS):
            raise InputError(
                f"{where} carries the YAML tag {tag}, which no Compose file or Serve config uses",
                "remove the tag",
                line,
            )
        if isinstance(value, CommentedMap):
            return self._mapping(value, path)
        if isinstance(value, CommentedSeq):
            return self._sequence(value, path)
        if isinstance(value, ScalarBoolean):
            return bool(value)
        if value is None or isinstance(value, bool):
            return value
        # ruamel.yaml's int, float and string subclasses keep formatting; the checker
        # wants the values, as JSON would hold them.
        for kind in (int, float, str):
            if isinstance(value, kind):
                return kind(value)
        # Compose reads a date (`built: 2024-01-01`) as the string it is written as.
        if isinstance(value, datetime.date):
            return value.isoformat()
        raise InputError(
            f"{where} is a YAML {type(value).__name__} value, "
            "which no Compose file or Serve config holds",
            "quote it, to make it a string",
            line,
        )

    @staticmethod
    def _position(container: CommentedBase, key: Any) -> list[int] | None:
        """ruamel.yaml's 0-based position of ``key`` in ``container``, following merge keys
        to the mapping that wrote it: ``[line, column]`` for an item, and for a key
        ``[key line, key column, value line, value column]``."""
        if key in container.lc.data:
            return list(container.lc.data[key])
        if isinstance(container, CommentedMap):
            for merged in container.merge:
                if key in merged:
                    return _Walk._position(merged, key)
        return None

    def _mapping(self, mapping: CommentedMap, path: Path) -> dict[str, Any]:
        plain: dict[str, Any] = {}
        # Iteration includes the keys that merge keys bring in.
        for key in mapping:
            position = self._position(mapping, key) or [mapping.lc.line or 0] * 4
            key_line = position[0] + 1
            name = _plain_key(key, key_line)
            child = (*path, name)
            item = mapping[key]
            plain[name] = self.value(item, child, key_line)
            # A key's own line, so that a block value's finding points at its key.
            self.lines[child] = key_line
            if isinstance(item, LiteralScalarString):
                # The value's position is the `|` indicator; the content starts below it.
                self.literal_blocks[child] = position[2] + 2
        return plain

    def _sequence(self, sequence: CommentedSeq, path: Path) -> list[Any]:
        plain = []
        for index, item in enumerate(sequence):
            child = (*path, index)
            position = self._position(sequence, index) or [sequence.lc.line or 0]
            self.lines[child] = position[0] + 1
            plain.append(self.value(item, child, position[0] + 1))
        return plain


def load_documents(
    text: str, first_line: int = 1, version: tuple[int, int] | None = None
) -> list[Document]:
    """Each document of ``text``, with lines counted from ``first_line``.

    ``version`` reads the text as that YAML version (``(1, 1)``: ``yes`` is a boolean),
    for files whose consumer reads them so; ruamel.yaml's default is YAML 1.2.
    Raises ``InputError`` for text that is not YAML or is past a bound.
    """
    yaml = _yaml(version)
    shift = first_line - 1
    documents = []
    try:
        with warnings.catch_warnings():
            # YAML lets a later anchor of a name replace the earlier one.
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            raw = list(yaml.load_all(text))
        for data in raw:
            if data is None:
                continue
            walk = _Walk()
            root = int(data.lc.line or 0) + 1 if isinstance(data, CommentedBase) else 1
            walk.lines[()] = root
            plain = walk.value(data, (), root)
            documents.append(
                Document(
                    plain,
                    {path: line + shift for path, line in walk.lines.items()},
                    {path: line + shift for path, line in walk.literal_blocks.items()},
                )
            )
    except MaxDepthExceededError as error:
        raise InputError(
            f"nested more than {MAX_DEPTH} levels deep",
            "flatten the structure; no Compose file or Serve config nests this deep",
            error.problem_mark.line + 1,
        ).shifted(first_line) from None
    except YAMLError as error:
        raise _syntax_error(error).shifted(first_line) from None
    except InputError as error:
        raise error.shifted(first_line) from None
    return documents


def flatten_lines(lines: dict[Path, int], prefix: Path) -> dict[str, int]:
    """Lines of the keys below ``prefix``, as dotted paths relative to it."""
    return {
        ".".join(str(p) for p in path[len(prefix) :]): line
        for path, line in lines.items()
        if path[: len(prefix)] == prefix and len(path) > len(prefix)
    }
