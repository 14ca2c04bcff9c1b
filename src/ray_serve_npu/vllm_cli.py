"""``vllm serve`` command lines and the Compose services that run them."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: Compose's default file names, in the order it looks for them.
COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")


@dataclass(frozen=True)
class VLLMServe:
    """``vllm serve MODEL --flag value --switch ...``, in order."""

    model: str | None
    #: (flag, value); value is None for a switch such as ``--enforce-eager``.
    options: tuple[tuple[str, str | None], ...] = field(default=())

    @classmethod
    def parse(cls, argv: Sequence[str]) -> VLLMServe:
        """Parse the argv of ``vllm serve`` (starting at ``vllm``).

        A word after a flag is its value unless it is a flag itself; ``--flag=value``
        works too. Raises ValueError when argv is not a ``vllm serve`` command.
        """
        if list(argv[:2]) != ["vllm", "serve"]:
            raise ValueError(f"not a `vllm serve` command: {' '.join(argv[:3])}...")
        rest = list(argv[2:])
        model = rest.pop(0) if rest and not rest[0].startswith("-") else None
        options: list[tuple[str, str | None]] = []
        for word in rest:
            if word.startswith("--"):
                flag, equals, value = word.partition("=")
                options.append((flag, value if equals else None))
            elif options and options[-1][1] is None:
                options[-1] = (options[-1][0], word)
            else:
                raise ValueError(f"`{word}` in `vllm serve` follows no flag")
        return cls(model, tuple(options))

    def get(self, flag: str, default: str | None = None) -> str | None:
        """The value of the last ``flag``, as vLLM's parser would take it."""
        values = [value for name, value in self.options if name == flag]
        return values[-1] if values else default

    def __iter__(self) -> Iterator[tuple[str, str | None]]:
        return iter(self.options)


#: A shell expansion in a word: ``$NAME``, ``${NAME}``, ``$1``, ``$(command)``.
SHELL_EXPANSION = re.compile(r"\$(?:\{?(?P<name>\w+)|\()")

#: The most lines one quoted word may span (``--additional-config '{`` ... ``}'``); a quote
#: still open after as many is read as an unbalanced one, word by word.
QUOTED_LINES_MAX = 64
#: A quote that opens a JSON object or list, the only quoted words read over several
#: lines: an apostrophe in prose (``echo Don't``) must not swallow the next command.
_OPENS_JSON = re.compile(r"""(?:^|[\s=])(['"])[\[{]""")
_QUOTE_AT_END = re.compile(r"""(?:^|[\s=])(['"])$""")


def _quoted_span(physical: list[str], start: int) -> tuple[list[str], int, int] | None:
    """The words of the lines from ``start`` on, as far as a JSON value whose quote opens
    on that line runs, how many lines they take, and how many of the words follow the
    value on its last line; None where no such quote opens, or none closes in
    :data:`QUOTED_LINES_MAX` lines."""
    first = physical[start].strip()
    opened = _OPENS_JSON.search(first)
    if opened is None and start + 1 < len(physical) and physical[start + 1].lstrip()[:1] in "{[":
        # The quote ends its line and the value starts the next (`--additional-config '`).
        opened = _QUOTE_AT_END.search(first.removesuffix("\\").rstrip())
    if opened is None:
        return None
    for end in range(start + 1, min(start + QUOTED_LINES_MAX, len(physical))):
        # Inside the quote, a line is kept as written: its indentation is the value's.
        joined = "\n".join([first, *physical[start + 1 : end + 1]]).rstrip()
        body = joined[:-1] if joined.endswith("\\") else joined
        try:
            words = shlex.split(body, comments=True)
        except ValueError:
            continue
        # The words after the value, on its last line: after the quote that closes it.
        last = physical[end].strip().removesuffix("\\")
        closing = last.rfind(opened[1])
        try:
            after = len(shlex.split(last[closing + 1 :], comments=True))
        except ValueError:
            after = 0
        return words, end + 1 - start, after
    return None


def shell_commands(text: str, first_line: int = 1) -> list[tuple[list[tuple[str, int]], int]]:
    """The commands of a shell script as the shell splits them, each with its first line:
    backslash continuations joined, a quoted JSON value that runs over several lines read
    whole, comments left out. Each word comes with the line it starts on; a line whose
    quote never closes is split at its blanks."""
    commands: list[tuple[list[tuple[str, int]], int]] = []
    words: list[tuple[str, int]] = []
    start = first_line
    physical = text.splitlines()
    index = 0
    while index < len(physical):
        number = first_line + index
        stripped = physical[index].strip()
        if not words:
            start = number
        if stripped.startswith("#") and not words:
            index += 1
            continue
        body = stripped[:-1] if stripped.endswith("\\") else stripped
        try:
            words.extend((word, number) for word in shlex.split(body, comments=True))
            index += 1
        except ValueError:
            span = _quoted_span(physical, index)
            if span is None:
                words.extend((word, number) for word in body.split())
                index += 1
            else:
                split, taken, after = span
                last_line = number + taken - 1
                words.extend(
                    (word, last_line if at >= len(split) - after else number)
                    for at, word in enumerate(split)
                )
                index += taken
        if not physical[index - 1].strip().endswith("\\") and words:
            commands.append((words, start))
            words = []
    if words:
        commands.append((words, start))
    return commands


def engine_flag(key: str) -> str:
    """vLLM's flag for an engine keyword: ``max_model_len`` -> ``--max-model-len``."""
    return "--" + key.replace("_", "-")


def engine_kwarg_argv(key: str, value: Any) -> list[str]:
    """The ``vllm serve`` words for one engine keyword: a switch, its ``--no-`` form, or a value."""
    flag = engine_flag(key)
    if value is True:
        return [flag]
    if value is False:
        return ["--no-" + flag.removeprefix("--")]
    # vLLM parses a dict or list flag as JSON (`--model-loader-extra-config '{...}'`).
    return [flag, json.dumps(value) if isinstance(value, dict | list) else str(value)]


#: Compose's variable forms: ``$$``, ``$NAME``, ``${NAME}``, ``${NAME<op>word}``
#: with op one of ``:-``, ``-``, ``:?``, ``?`` (docs.docker.com, "Interpolation").
#: Any other ``$`` matches ``other``.
_COMPOSE_VARIABLE = re.compile(
    r"\$(?:(?P<dollar>\$)|(?P<bare>[A-Za-z_]\w*)"
    r"|\{(?P<name>[A-Za-z_]\w*)(?:(?P<op>:-|-|:\?|\?)(?P<word>[^}]*))?\}|(?P<other>))"
)


def interpolate_compose(value: str, env: Mapping[str, str]) -> str:
    """``value`` with Compose's variables replaced from ``env``, as ``docker compose up`` does.

    Raises ValueError for a ``${NAME:?message}`` (or ``?``) whose variable is
    missing, with Compose's message, and for a ``$`` form this reader does not know.
    """

    def substitute(match: re.Match[str]) -> str:
        if match["dollar"]:
            return "$"
        if match["other"] is not None:
            raise ValueError(
                f"{value!r}: unsupported `$` form at {match.start()}; use $NAME, ${{NAME}}, "
                "${NAME:-default} or ${NAME:?message}, or $$ for a literal `$`"
            )
        name = match["bare"] or match["name"]
        op, word, current = match["op"], match["word"] or "", env.get(name)
        missing = current is None or (op is not None and op.startswith(":") and not current)
        if op in {":?", "?"} and missing:
            raise ValueError(f"required variable {name} is missing a value: {word}")
        if op in {":-", "-"} and missing:
            return word
        return current or ""

    return _COMPOSE_VARIABLE.sub(substitute, value)


@dataclass(frozen=True)
class ComposeService:
    name: str
    command: VLLMServe
    environment: dict[str, str]
    file: Path


def _as_argv(command: Any) -> list[str]:
    argv = (
        shlex.split(command) if isinstance(command, str) else [str(word) for word in command or []]
    )
    # `bash -c "vllm serve ..."`: the command is the shell's script.
    if len(argv) >= 3 and Path(argv[0]).name in {"bash", "sh"} and argv[-2] == "-c":
        argv = shlex.split(argv[-1])
    return argv


def _environment(value: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    return dict(item.partition("=")[::2] for item in value or [])


def find_compose_file(directory: Path, named: str | None = None) -> Path:
    candidates = [directory / named] if named else [directory / name for name in COMPOSE_FILES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"no Compose file in {directory}: looked for {', '.join(c.name for c in candidates)}"
    )


def vllm_serve_service(compose_file: Path) -> ComposeService:
    """The first service of a Compose file whose command is ``vllm serve``."""
    compose = yaml.safe_load(compose_file.read_text()) or {}
    for name, service in (compose.get("services") or {}).items():
        argv = _as_argv(service.get("command"))
        if argv[:2] == ["vllm", "serve"]:
            return ComposeService(
                name, VLLMServe.parse(argv), _environment(service.get("environment")), compose_file
            )
    raise ValueError(f"{compose_file}: no service runs `vllm serve`; give one that command")
