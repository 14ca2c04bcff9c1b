"""``vllm serve``'s flags at one vLLM version, stored as data, so that the checker judges
flags and values without importing vLLM (and Ray, which vLLM imports).

``nox -s vllm-flags -- VERSION`` writes ``releases/vllm_serve/VERSION.json`` from that
vLLM's own parser (the repository's tooling, not this package). Each flag's value type is
one of :data:`CONVERTERS`, chosen there because it gives what vLLM's own type function
gives on every probe the tool runs; a type function no converter matches stops the tool.

Two kinds of value are judged less closely than vLLM does: a config object
(``--compilation-config '{...}'``, type ``config_json``) must be a JSON object, but the
keys and values inside it are checked only by vLLM's config classes when the engine
starts; and the words of a flag with vLLM's own action (``--lora-modules``) are taken as
written.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr


class ParseError(Exception):
    """A parser of ``vllm serve``'s flags, vLLM's own or the stored one, refused a value."""


def suggest(name: str, candidates: list[str] | frozenset[str]) -> str | None:
    """The candidate ``name`` looks like a misspelling of, if one is close enough."""
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
    return close[0] if close else None


#: Where the stored files live, one per vLLM version: ``<version>.json``.
STORED_DIR = files("ray_serve_npu.releases") / "vllm_serve"

_SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT])")
#: A bare number with a size suffix inside JSON, outside its strings (``{"bytes": 80m}``).
_SUFFIXED_IN_JSON = re.compile(r"\b\d+(?:\.\d+)?[kmgtKMGT]\b")
_JSON_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')


def human_readable_int(text: str) -> int:
    """``1k`` is 1000 and ``1K`` 1024 (k, m, g, t decimal; K, M, G, T binary); else an int."""
    text = text.strip()
    if match := _SUFFIXED.fullmatch(text):
        number, suffix = match.groups()
        if suffix.islower():
            try:
                return int(float(number) * 1000 ** ("kmgt".index(suffix) + 1))
            except OverflowError:
                raise argparse.ArgumentTypeError(f"{text}: too large a number") from None
        if "." in number:
            raise argparse.ArgumentTypeError(
                f"{text}: a binary suffix ({suffix}) takes a whole number; "
                f"write {number}{suffix.lower()} for a decimal one"
            )
        return int(number) * 1024 ** ("KMGT".index(suffix) + 1)
    return int(text)


def human_readable_int_or_auto(text: str) -> int:
    """:func:`human_readable_int`, with ``auto`` (any case) or ``-1`` for -1."""
    if text.strip() == "-1" or text.strip().lower() == "auto":
        return -1
    return human_readable_int(text)


def json_or_str(text: str) -> Any:
    """A JSON object where the text is braces, else the text itself."""
    if re.fullmatch(r"(?s)\s*\{.*\}\s*", text):
        return optional(json.loads)(text)
    return text


def config_json(text: str) -> dict[str, Any]:
    """A config object: JSON, with size suffixes on bare numbers (``80m``) expanded."""
    parts = _JSON_STRING.split(text)
    parts[::2] = [
        _SUFFIXED_IN_JSON.sub(lambda m: str(human_readable_int(m.group())), p) for p in parts[::2]
    ]
    value = json.loads("".join(parts))
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text}: a config is a JSON object, {{...}}")
    return value


def lower_snake(text: str) -> str:
    return text.lower().replace("-", "_")


def device_ids(text: str) -> list[int | str]:
    """``2,3,5`` as [2, 3, 5]; an ID that is not a number (a UUID) stays text."""
    return [int(part) if part.isdigit() else part for part in (p.strip() for p in text.split(","))]


def optional(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert``, with ``None`` or nothing for None."""

    def convert_or_none(text: str) -> Any:
        return None if text in ("", "None") else convert(text)

    convert_or_none.__name__ = getattr(convert, "__name__", "value")
    return convert_or_none


def is_flag(word: str) -> bool:
    """Whether a word of ``vllm serve`` is a flag: it starts with ``-``, and is not a
    negative number (``-1``)."""
    if not word.startswith("-") or word == "-":
        return False
    return not word.lstrip("-").replace(".", "", 1).isdigit()


@dataclass(frozen=True)
class FlagWords:
    """One flag and its values, as vLLM's parser reads them."""

    #: The flag as vLLM's parser reads it (``--max-model-len`` for ``--max_model_len``).
    name: str
    #: A value written in the flag's word (``--flag=value``), and the words after it.
    inline: str | None
    values: tuple[str, ...]
    #: The flag as written, and the index of the word it was written in.
    written: str
    at: int
    #: Why vLLM would refuse it before its parser reads it, else None.
    problem: str | None = None

    def argv(self) -> list[str]:
        """The words argparse is given for this flag."""
        first = [self.name] if self.inline is None else [f"{self.name}={self.inline}"]
        return first + list(self.values)


def _vllm_name(word: str) -> str:
    # Underscores before the first `.` of a `--` flag are dashes.
    name = word.partition("=")[0]
    if not name.startswith("--"):
        return name
    head, dot, keys = name.partition(".")
    return head.replace("_", "-") + dot + keys


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    # Keys merge at every depth, lists extend, and anything else is replaced.
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, list) and isinstance(into.get(key), list):
            into[key] += value
        else:
            into[key] = value


def config_key_value(text: str) -> Any:
    """The value of ``--some-config.key TEXT`` as vLLM reads it: JSON, else a size
    (``80g``), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return human_readable_int(text)
        except (ValueError, argparse.ArgumentTypeError):
            return text


def read_flags(words: list[str]) -> list[FlagWords]:
    """The flags of the words after ``vllm serve`` (leading positionals skipped), as
    vLLM's parser reads them before argparse does, at every stored vLLM
    (``vllm/utils/argparse_utils.py``, ``FlexibleArgumentParser.parse_args``):

    - ``-O3``, ``-O=3`` and ``-O 3`` are ``--optimization-level 3``;
    - underscores before the first ``.`` of a ``--`` flag are dashes;
    - ``--x-config.key VALUE`` sets one key of a JSON object, ``key+ a,b`` extends a list
      there; the keys given for one flag are merged and passed as that flag's value after
      every other flag, so they replace a whole value given for it.
    """
    spelled: list[tuple[int, str]] = []
    for at, word in enumerate(words):
        if word.startswith("-O") and word != "-O":
            level = word[3:] if word[2] == "=" else word[2:]
            spelled += [(at, "--optimization-level"), (at, level)]
        elif word == "-O" and words[at + 1 : at + 2] in (["0"], ["1"], ["2"], ["3"]):
            spelled.append((at, "--optimization-level"))
        else:
            spelled.append((at, word))
    groups: list[list[tuple[int, str]]] = []
    for at, word in spelled:
        if is_flag(word):
            groups.append([(at, word)])
        elif groups:
            groups[-1].append((at, word))
    flags: list[FlagWords] = []
    objects: dict[str, tuple[int, dict[str, Any]]] = {}
    for (at, word), *rest in groups:
        name = _vllm_name(word)
        values = [value for _, value in rest]
        inline = word.partition("=")[2] if "=" in word else None
        head, dot, keys = name.partition(".")
        if not dot:
            flags.append(FlagWords(name, inline, tuple(values), word, at))
            continue
        if inline is None and not values:
            flags.append(FlagWords(head, None, (), word, at, f"{word} needs a value"))
            continue
        text = inline if inline is not None else values.pop(0)
        if values:
            stray = f"unrecognized arguments: {' '.join(values)}"
            flags.append(FlagWords(head, None, (), word, at, stray))
            continue
        *parents, last = keys.split(".")
        value = config_key_value(text)
        if last.endswith("+"):
            last, value = last[:-1], text.split(",")
        nested: dict[str, Any] = {last: value}
        for key in reversed(parents):
            nested = {key: nested}
        _merge(objects.setdefault(head, (at, {}))[1], nested)
    flags += [
        FlagWords(head, None, (json.dumps(merged),), head, at)
        for head, (at, merged) in objects.items()
    ]
    return flags


#: Every value type a stored flag may name; ``optional:NAME`` takes None as well.
CONVERTERS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "json": json.loads,
    "json_or_str": json_or_str,
    "human_readable_int": human_readable_int,
    "human_readable_int_or_auto": human_readable_int_or_auto,
    "lower_snake": lower_snake,
    "device_ids": device_ids,
    "config_json": config_json,
}


def converter(name: str) -> Callable[[str], Any]:
    """The converter a stored flag names; raises KeyError for a name :data:`CONVERTERS` lacks."""
    optional_, _, base = name.rpartition(":")
    convert = CONVERTERS[base]
    if optional_ not in ("", "optional"):
        raise KeyError(name)
    return optional(convert) if optional_ else convert


class StoredOption(BaseModel):
    """One option of ``vllm serve``, as argparse would be told it."""

    model_config = ConfigDict(extra="forbid")

    flags: list[str]
    dest: str
    action: Literal[
        "store", "store_true", "store_false", "store_const", "boolean_optional", "append", "help"
    ]
    nargs: int | Literal["?", "*", "+"] | None = None
    const: Any = None
    type: str | None = None
    choices: list[Any] | None = None
    #: vLLM's own action class where it is not argparse's (its value is built differently).
    vllm_action: str | None = None


class StoredFlags(BaseModel):
    """``vllm serve``'s options and Ray Serve LLM's engine keywords at one vLLM version."""

    model_config = ConfigDict(extra="forbid")

    vllm: str
    #: The command that wrote the file.
    made_by: str
    allow_abbrev: bool
    #: vLLM's AsyncEngineArgs and FrontendArgs fields, the keywords engine_kwargs takes
    #: (ray/llm/_internal/serve/engines/vllm/vllm_models.py:216-228).
    engine_kwargs: list[str]
    options: list[StoredOption]

    _parser: argparse.ArgumentParser | None = PrivateAttr(default=None)

    def parser(self) -> argparse.ArgumentParser:
        """An argparse parser with the stored options, built once; a bad value raises
        ParseError."""
        if self._parser is None:
            self._parser = self._build_parser()
        return self._parser

    def given(self, words: list[str]) -> dict[str, Any]:
        """Each setting ``words`` give, by its engine keyword, as this vLLM parses them:
        only what the words give, never a default. A bad value raises ParseError."""
        # argparse fills only what the namespace lacks: a dest still holding the marker was
        # not given. One parse of every word, as vLLM's, so a repeated flag appends; a list
        # that `append` extends starts as None, its default, which means not given.
        unset = object()
        appends = {option.dest for option in self.options if option.action == "append"}
        namespace = argparse.Namespace(
            **{option.dest: unset for option in self.options if option.dest not in appends}
        )
        flags = [word for flag in read_flags(words) for word in flag.argv()]
        parsed = vars(self.parser().parse_args(flags, namespace=namespace))
        return {
            dest: value
            for dest, value in parsed.items()
            if value is not unset and not (dest in appends and value is None)
        }

    def _build_parser(self) -> argparse.ArgumentParser:
        parser = _RaisingParser(allow_abbrev=self.allow_abbrev, add_help=False)
        for option in self.options:
            kwargs: dict[str, Any] = {"dest": option.dest}
            if option.action == "boolean_optional":
                kwargs["action"] = argparse.BooleanOptionalAction
            elif option.action == "help":
                kwargs = {"action": "help"}
            else:
                kwargs["action"] = option.action
            if option.action in ("store", "append"):
                kwargs["nargs"] = option.nargs
                if option.type:
                    kwargs["type"] = converter(option.type)
                if option.choices is not None:
                    kwargs["choices"] = option.choices
            if option.action == "store" and option.nargs == "?":
                kwargs["const"] = option.const
            if option.action == "store_const":
                kwargs["const"] = option.const
            parser.add_argument(*option.flags, **kwargs)
        return parser


class _RaisingParser(argparse.ArgumentParser):
    # argparse exits on a bad value; the checker reports it instead.
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise ParseError(message)


def stored_versions() -> list[str]:
    """The vLLM versions whose flags are stored."""
    names = (p.name for p in STORED_DIR.iterdir())
    return sorted(name.removesuffix(".json") for name in names if name.endswith(".json"))


@cache
def stored_flags(vllm: str) -> StoredFlags:
    """The stored flags of vLLM ``vllm``; LookupError names the command that stores them."""
    source = STORED_DIR / f"{vllm}.json"
    if not source.is_file():
        raise LookupError(
            f"no stored `vllm serve` flags for vLLM {vllm} "
            f"(there are {', '.join(stored_versions())}); "
            f"store them with `nox -s vllm-flags -- {vllm}`"
        )
    return StoredFlags.model_validate_json(source.read_text())
