"""Shell command lines: ``vllm serve`` invocations, ``export`` lines and ``docker run``;
in a Dockerfile also ``FROM`` (the image, with ``ARG`` defaults substituted) and ``ENV``."""

from __future__ import annotations

import re
from pathlib import PurePath

from ray_serve_npu.check.arguments import apply_serve_argv
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.mounts import docker_mount, short_syntax
from ray_serve_npu.vllm_cli import shell_commands

_SEPARATORS = {"&&", "||", ";", "|", "&"}
# docker run options that take a value (the ones recipes and guides use).
_DOCKER_VALUE_OPTIONS = {
    "-e",
    "--env",
    "-v",
    "--volume",
    "--device",
    "--name",
    "-p",
    "--publish",
    "--shm-size",
    "--net",
    "--network",
    "-w",
    "--workdir",
    "--entrypoint",
    "--ipc",
    "-u",
    "--user",
    "--env-file",
    "--mount",
    "--memory",
    "--cpus",
    "--label",
    "-l",
    "--restart",
    "--pid",
}


def logical_lines(text: str, first_line: int = 1) -> list[tuple[list[Setting], int]]:
    """Commands as the shell splits them (:func:`ray_serve_npu.vllm_cli.shell_commands`);
    each token keeps the physical line it starts on."""
    return [
        ([Setting(value=word, line=line) for word, line in words], start)
        for words, start in shell_commands(text, first_line)
    ]


def serve_argv(tokens: list[Setting]) -> list[Setting] | None:
    """The arguments after ``vllm serve`` in ``tokens``, up to a shell separator."""
    words = [str(t.value) for t in tokens]
    for index in range(len(words) - 1):
        if words[index].rsplit("/", 1)[-1] == "vllm" and words[index + 1] == "serve":
            rest = tokens[index + 2 :]
            for end, token in enumerate(rest):
                if token.value in _SEPARATORS:
                    return rest[:end]
            return rest
    return None


def split_env(assignment: str) -> tuple[str, str] | None:
    name, eq, value = assignment.partition("=")
    return (name, value) if eq and name.isidentifier() else None


def _docker_run(tokens: list[Setting], deployment: Deployment) -> None:
    words = [str(t.value) for t in tokens]
    if "docker" not in words or "run" not in words:
        return
    index = words.index("run", words.index("docker")) + 1
    while index < len(tokens):
        word = words[index]
        name, eq, inline = word.partition("=")
        if not word.startswith("-"):
            deployment.image = tokens[index]
            return
        value = inline if eq else (words[index + 1] if index + 1 < len(words) else "")
        line = tokens[index].line
        if name == "--privileged" and inline.lower() != "false":
            deployment.privileged = Setting(value=True, line=line)
        elif name in ("-e", "--env") and (pair := split_env(value)):
            deployment.env[pair[0]] = Setting(value=pair[1], line=line)
        elif name == "--device" and (number := device_index(value)) is not None:
            deployment.devices.append(Setting(value=number, line=line))
        elif name in ("-v", "--volume") and (mount := short_syntax(value, line)):
            deployment.mounts.append(mount)
        elif name == "--mount" and (mount := docker_mount(value, line)):
            deployment.mounts.append(mount)
        index += 1 if eq or name not in _DOCKER_VALUE_OPTIONS else 2


def device_index(mapping: str) -> int | None:
    """N of a ``/dev/davinciN`` device mapping, None for other devices."""
    host = mapping.split(":", 1)[0]
    suffix = host.removeprefix("/dev/davinci")
    return int(suffix) if suffix != host and suffix.isdigit() else None


def is_dockerfile(path: str) -> bool:
    """``Dockerfile``, ``Dockerfile.a3`` or ``a3.Dockerfile``, as Docker names them."""
    name = PurePath(path).name.lower()
    return name.startswith("dockerfile") or name.endswith(".dockerfile")


_ARG_REFERENCE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def _dockerfile_line(
    words: list[str], tokens: list[Setting], state: dict[str, str]
) -> tuple[Setting, str | None] | None:
    """Read one Dockerfile instruction into ``state`` (ARG defaults and ENV, by name);
    return the image of a ``FROM``, with the ARG defaults before it substituted, and the
    build argument it is, where it is one whole (``FROM ${NAME}``)."""
    # Upper case only, as Dockerfiles write instructions: a heredoc's Python
    # (`from x import y`) is not one.
    instruction = words[0]
    if instruction == "ARG":
        for word in words[1:]:
            name, eq, default = word.partition("=")
            if eq:
                state.setdefault(f"arg:{name}", default)
    elif instruction == "FROM":
        index = next((i for i, w in enumerate(words[1:], 1) if not w.startswith("--")), None)
        if index is not None:
            image = _ARG_REFERENCE.sub(
                lambda m: state.get(f"arg:{m[1] or m[2]}", m[0]), words[index]
            )
            whole = _ARG_REFERENCE.fullmatch(words[index])
            argument = (whole[1] or whole[2]) if whole else None
            return Setting(value=image, line=tokens[index].line), argument
    return None


def _dockerfile_env(words: list[str], tokens: list[Setting]) -> dict[str, Setting]:
    """``ENV A=1 B=2`` or the legacy ``ENV A 1``."""
    if len(words) == 3 and "=" not in words[1]:
        return {words[1]: Setting(value=words[2], line=tokens[1].line)}
    return {
        pair[0]: Setting(value=pair[1], line=token.line)
        for token in tokens[1:]
        if (pair := split_env(str(token.value)))
    }


def parse_commands(path: str, text: str, first_line: int = 1) -> list[Deployment]:
    """One deployment per ``vllm serve``; ``export`` lines before it set its environment.

    In a Dockerfile (by its name), the last ``FROM`` names the image and ``ENV`` sets the
    environment as ``export`` does; instructions are read in upper case only.
    """
    deployments: list[Deployment] = []
    env: dict[str, Setting] = {}
    pending = Deployment(file=path, line=first_line)
    dockerfile = is_dockerfile(path)
    arguments: dict[str, str] = {}
    for tokens, line in logical_lines(text, first_line):
        words = [str(t.value) for t in tokens]
        if words and words[0] == "export":
            for token in tokens[1:]:
                if pair := split_env(str(token.value)):
                    env[pair[0]] = Setting(value=pair[1], line=token.line)
            continue
        if dockerfile and words:
            if words[0] == "ENV":
                env.update(_dockerfile_env(words, tokens))
                continue
            if base := _dockerfile_line(words, tokens, arguments):
                pending.image, pending.image_build_arg = base
                continue
        _docker_run(tokens, pending)
        argv = serve_argv(tokens)
        if argv is None:
            continue
        # Inline assignments (`VAR=1 vllm serve ...`) apply to this command only.
        inline = {
            pair[0]: Setting(value=pair[1], line=t.line)
            for t in tokens
            if (pair := split_env(str(t.value)))
        }
        pending.line = line
        pending.env = {**env, **pending.env, **inline}
        apply_serve_argv(argv, pending)
        deployments.append(pending)
        pending = Deployment(file=path, line=first_line)
    if dockerfile:
        # The image's ENV is the environment of whatever the container runs.
        pending.env = {**env, **pending.env}
    if pending.image or pending.privileged or pending.env:
        # A docker run without a vllm serve still deploys a container worth checking.
        deployments.append(pending)
    return deployments
