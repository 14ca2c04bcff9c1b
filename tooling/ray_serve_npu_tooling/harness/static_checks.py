"""Checks that need no server: each language's own parser says whether a block is well formed."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable

import yaml

from .blocks import Block, Language

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

#: Findings that are wrong for a page's blocks, which share variables across blocks:
#: SC2034 (assigned, used by a later block), SC2154 (used, assigned by an earlier block).
_SHELLCHECK_EXCLUDED = "SC2034,SC2154"
_BASH_LINE = re.compile(r"line (\d+): (.*)")
_SHELLCHECK_LINE = re.compile(r"^-:(\d+):(\d+): (\w+): (.*)$")
_TOML_LINE = re.compile(r"line (\d+)")
#: ``RUN <<EOF`` / ``RUN python3 - <<'PY'``: the lines up to the terminator are not instructions.
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
DOCKERFILE_INSTRUCTIONS = {
    "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
    "LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR",
}  # fmt: skip


@functools.cache
def shellcheck_path() -> str | None:
    """shellcheck where installed; the summary says when it is not."""
    return shutil.which("shellcheck")


def check_python(block: Block) -> None:
    try:
        # An excerpt from inside a function or `if` is shown indented; it compiles dedented.
        compile(textwrap.dedent(block.text), str(block.page), "exec", dont_inherit=True)
    except SyntaxError as error:
        raise block.problem(
            error.lineno or 1,
            f"Python syntax error: {error.msg}: {(error.text or '').strip()!r}",
            "fix the code so that it compiles",
        ) from error


def check_shell(block: Block) -> None:
    result = subprocess.run(
        ["bash", "-n"], input=block.text, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        match = _BASH_LINE.search(result.stderr)
        line, message = (int(match[1]), match[2]) if match else (1, result.stderr.strip())
        raise block.problem(line, f"shell syntax error (bash -n): {message}", "fix the command")
    shellcheck = shellcheck_path()
    if shellcheck is None:
        return
    result = subprocess.run(
        [shellcheck, "--shell=bash", "--severity=warning", "--format=gcc",
         f"--exclude={_SHELLCHECK_EXCLUDED}", "-"],
        input=block.text, capture_output=True, text=True, check=False,
    )  # fmt: skip
    findings = [m for m in map(_SHELLCHECK_LINE.match, result.stdout.splitlines()) if m]
    if findings:
        first = findings[0]
        raise block.problem(
            int(first[1]),
            f"shellcheck {first[3]}: {first[4]}"
            + (f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""),
            "fix the command as shellcheck says",
        )


def check_yaml(block: Block) -> None:
    try:
        for _ in yaml.safe_load_all(block.text):
            pass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise block.problem(
            mark.line + 1 if mark else 1, f"YAML does not parse: {error.problem}", "fix the YAML"
        ) from error


def check_json(block: Block) -> None:
    try:
        json.loads(block.text)
    except json.JSONDecodeError as error:
        raise block.problem(
            error.lineno, f"JSON does not parse: {error.msg}", "fix the JSON (or fence it as text)"
        ) from error


def check_toml(block: Block) -> None:
    try:
        tomllib.loads(block.text)
    except tomllib.TOMLDecodeError as error:
        match = _TOML_LINE.search(str(error))
        raise block.problem(
            int(match[1]) if match else 1, f"TOML does not parse: {error}", "fix the TOML"
        ) from error


def check_dockerfile(block: Block) -> None:
    continued = False
    heredoc_end = None
    for number, line in enumerate(block.text.splitlines(), start=1):
        stripped = line.strip()
        if heredoc_end is not None:
            heredoc_end = None if stripped == heredoc_end else heredoc_end
            continue
        starts_instruction = not continued and stripped and not stripped.startswith("#")
        in_instruction = starts_instruction or (continued and not stripped.startswith("#"))
        continued = stripped.endswith("\\") or (continued and stripped.startswith("#"))
        if starts_instruction:
            instruction = stripped.split()[0].upper()
            if instruction not in DOCKERFILE_INSTRUCTIONS:
                raise block.problem(
                    number, f"unknown Dockerfile instruction {instruction}", "fix the instruction"
                )
        # A heredoc may open on any line of an instruction, its continuation lines too.
        if in_instruction and (heredoc := _HEREDOC.search(stripped)):
            heredoc_end = heredoc[1]


#: The static check of each language; OTHER (text, ...) has none.
STATIC_CHECKS: dict[Language, Callable[[Block], None]] = {
    Language.PYTHON: check_python,
    Language.SHELL: check_shell,
    Language.YAML: check_yaml,
    Language.JSON: check_json,
    Language.TOML: check_toml,
    Language.DOCKERFILE: check_dockerfile,
}
