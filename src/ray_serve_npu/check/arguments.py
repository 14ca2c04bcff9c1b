"""Fill a :class:`~ray_serve_npu.check.model.Deployment` from ``vllm serve`` argv or engine_kwargs.

A file's flags are recorded while it is read, and judged once its release is known, by
the stored flags of that release's vLLM (:mod:`ray_serve_npu.vllm_flags`): the checker
imports no vLLM.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.problems import InputError
from ray_serve_npu.vllm_cli import SHELL_EXPANSION
from ray_serve_npu.vllm_flags import ParseError, StoredFlags, is_flag, read_flags, suggest


def _plain_value(token: str) -> Any:
    if token[:1] in "{[":
        try:
            return json.loads(token)
        except json.JSONDecodeError:
            return token
    return token


# With these, `vllm serve` prints its help and exits instead of serving.
_HELP = ("-h", "--help")


def _not_serving(name: str, line: int) -> InputError:
    return InputError(
        f"`vllm serve ... {name}` prints the help and exits instead of serving",
        f"remove {name}",
        line,
    )


def apply_serve_argv(tokens: list[Setting], deployment: Deployment) -> None:
    """Record the tokens after ``vllm serve``; :func:`judge_arguments` reads their flags."""
    if tokens:
        deployment.http_server_line = tokens[0].line
    if tokens and not is_flag(str(tokens[0].value)):
        deployment.model = tokens[0]
    deployment.serve_argv = tokens


def apply_engine_kwargs(
    kwargs: dict[str, Any], lines: dict[str, int], deployment: Deployment
) -> None:
    """Record an LLMConfig's ``engine_kwargs``; :func:`judge_arguments` reads them."""
    for key, value in kwargs.items():
        if isinstance(value, str) and value[:1] in "{[":
            value = _plain_value(value)
        deployment.engine_kwargs[key] = Setting(value=value, line=lines.get(key, deployment.line))


def judge_arguments(deployment: Deployment, flags: StoredFlags) -> None:
    """Fill ``deployment.engine`` from its recorded flags and engine keywords, judged by
    the stored flags of one vLLM; what that vLLM would refuse goes to ``unknown_flags``
    and ``invalid_values``."""
    for key, setting in deployment.engine_kwargs.items():
        if key in flags.engine_kwargs:
            deployment.engine[key] = setting
        else:
            name = Setting(value=f"engine_kwargs.{key}", line=setting.line)
            deployment.unknown_flags.append((name, suggest(key, flags.engine_kwargs)))
    if deployment.serve_argv is None:
        return
    parser = flags.parser()
    options: dict[str, argparse.Action] = parser._option_string_actions
    tokens = deployment.serve_argv
    for flag in read_flags([str(t.value) for t in tokens]):
        line = tokens[flag.at].line
        if flag.name in _HELP:
            raise _not_serving(flag.name, line)
        action = options.get(flag.name)
        if action is None and parser.allow_abbrev:
            # vLLM's parser accepts a unique prefix of a flag, so the checker does too.
            prefixed = {options[o] for o in options if o.startswith(flag.name)}
            action = prefixed.pop() if len(prefixed) == 1 else None
        if isinstance(action, argparse._HelpAction):
            raise _not_serving(flag.name, line)
        if action is not None and action.dest == "config":
            # vLLM's parser would open the file; the checker opens no file a command names.
            raise InputError(
                f"`vllm serve {flag.name} FILE` takes its flags from a file, "
                "which the checker does not open, so they would go unchecked",
                "write the flags on the command line to have them checked",
                line,
            )
        written = Setting(value=flag.written.partition("=")[0], line=line)
        if action is None:
            deployment.unknown_flags.append((written, suggest(flag.name, list(options))))
            continue
        if flag.problem:
            deployment.invalid_values.append((written, flag.problem))
            continue
        try:
            value = getattr(parser.parse_args(flag.argv()), action.dest)
        except ParseError as error:
            if any(SHELL_EXPANSION.search(word) for word in flag.argv()):
                # The shell decides the value at run time; what it holds is not on the page.
                said = " ".join(flag.argv())
                deployment.shell_values.append(Setting(value=said, line=line))
            else:
                deployment.invalid_values.append((written, str(error)))
            continue
        earlier = deployment.engine.get(action.dest)
        if isinstance(action, argparse._AppendAction) and earlier:
            # `--middleware a --middleware b`: vLLM keeps both.
            value = [*earlier.value, *value]
        deployment.engine[action.dest] = Setting(value=value, line=line)
