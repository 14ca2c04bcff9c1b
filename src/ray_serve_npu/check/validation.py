"""Documents against JSON schemas: Compose files against the Compose specification's own.

The first problem (by line) becomes the file's ``InputError``: a file that breaks its
format's schema is not read for findings, since its services or configs may not mean
what they seem to.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from ray_serve_npu.check.problems import InputError
from ray_serve_npu.check.yamlnodes import Document

COMPOSE_SPEC = "https://github.com/compose-spec/compose-spec/blob/main/spec.md"
# jsonschema's messages quote the value, which can be a whole hostile document.
_MAX_MESSAGE = 200

_TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "null": "null",
}


def _type_of(value: Any) -> str:
    """The JSON type of a loaded YAML value, as ``_TYPES`` names it."""
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string")):
        if isinstance(value, kind):
            return _TYPES[name]
    return _TYPES["integer" if isinstance(value, int) else "number"]


def _one_of(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _where(path: tuple[Any, ...]) -> str:
    return ".".join(map(str, path)) or "the document"


def _specific(error: ValidationError) -> ValidationError:
    """For "none of the alternatives": the error inside the alternative that got furthest."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        # An alternative of the value's type that failed inside, or on another keyword;
        # if every alternative failed on the type alone, the type is the problem.
        depth = len(error.absolute_path)
        inside = [e for e in error.context if e.validator != "type" or len(e.absolute_path) > depth]
        if inside:
            return _specific(best_match(inside))
    return error


def _describe(error: ValidationError, document: Document) -> tuple[int, str, str]:
    """Line, problem and fix of one schema error."""
    error = _specific(error)
    path = tuple(error.absolute_path)
    where = _where(path)
    line = document.lines.get(path, document.lines[()])
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = sorted(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extra = (k for k in error.instance if k not in allowed)
        key = next((k for k in extra if not any(re.search(p, k) for p in patterns)), None)
        if key is not None:
            line = document.lines.get((*path, key), line)
            if close := difflib.get_close_matches(key, allowed, n=1):
                fix = f"rename it to {close[0]!r}"
            elif allowed:
                extension = " or an x- extension" if "^x-" in patterns else ""
                fix = f"use a key it defines here ({', '.join(allowed)}){extension}"
            else:
                fix = f"name it to match {_one_of(patterns)}"
            return line, f"{where}: {key!r} is not a key it defines", fix
    if error.validator in ("oneOf", "anyOf", "type"):
        branches = error.context if error.validator != "type" else [error]
        expected: list[str] = []
        for branch in branches:
            value = branch.validator_value if branch.validator == "type" else None
            value = value or branch.schema.get("type")
            for name in [value] if isinstance(value, str) else value or []:
                if _TYPES.get(name, name) not in expected:
                    expected.append(_TYPES.get(name, name))
        if expected:
            return (
                line,
                f"{where} is {_type_of(error.instance)}, not {_one_of(expected)}",
                f"make {where} {_one_of(expected)}",
            )
    message = error.message
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "..."
    return line, f"{where}: {message}", f"write {where} as its schema defines it"


def first_error(validator: Draft202012Validator, document: Document, what: str, spec: str) -> None:
    """Raise ``InputError`` for the first schema error by line, counting the others."""
    described = sorted(_describe(e, document) for e in validator.iter_errors(document.data))
    if not described:
        return
    line, problem, fix = described[0]
    more = len(described) - 1
    if more:
        problem += f" (and {more} more problem{'s' if more > 1 else ''} in the file)"
    raise InputError(f"not {what}: {problem}", f"{fix} ({spec})", line)


@cache
def _compose_validator() -> Draft202012Validator:
    schema = resources.files(__package__).joinpath("schemas", "compose-spec.json").read_text()
    return Draft202012Validator(json.loads(schema))


def validate_compose(document: Document) -> None:
    """Raise ``InputError`` where the document breaks the Compose specification's schema."""
    first_error(_compose_validator(), document, "a valid Compose file", COMPOSE_SPEC)
