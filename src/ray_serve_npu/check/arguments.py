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
from ray_serve_npu.vllm_flags import (
    ParseError,
    StoredFlags,
    config_key_value,
    stored_parser,
    suggest,
    vllm_flag_name,
)


def _plain_value(token: str) -> Any:
    if token[:1] in "{[":
        try:
            return json.loads(token)
        except json.JSONDecodeError:
            return token
    return token


def _groups(tokens: list[Setting], is_option: Any) -> list[list[Setting]]:
    """Split argv into [option, values...] groups; a leading group holds positionals."""
    groups: list[list[Setting]] = [[]]
    for token in tokens:
        if is_option(str(token.value)):
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


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
    groups = _groups(tokens, _is_option)
    if groups[0]:
        deployment.model = groups[0][0]
    deployment.serve_argv = tokens


def apply_engine_kwargs(
    kwargs: dict[str, Any], lines: dict[str, int], deployment: Deployment
) -> None:
    """Record an LLMConfig's ``engine_kwargs``; :func:`judge_arguments` reads them."""
    for key, value in kwargs.items():
        if isinstance(value, str) and value[:1] in "{[":
            value = _plain_value(value)
        deployment.engine_kwargs[key] = Setting(value=value, line=lines.get(key, deployment.line))


def _is_option(text: str) -> bool:
    if not text.startswith("-") or text == "-":
        return False
    # A negative number is a value ("-1"), not a flag.
    return not text.lstrip("-").replace(".", "", 1).isdigit()


def _set_config_key(
    deployment: Deployment, dest: str, keys: str, group: list[Setting], line: int
) -> None:
    """``--compilation-config.mode 3``: one key of a config flag's JSON object; vLLM
    merges the keys of one flag into one object (``FlexibleArgumentParser.parse_args``)."""
    word = str(group[0].value)
    text = word.partition("=")[2] if "=" in word else " ".join(str(t.value) for t in group[1:])
    value = config_key_value(text)
    current = deployment.engine.get(dest)
    merged: dict[str, Any] = current.value if current and isinstance(current.value, dict) else {}
    *parents, last = keys.split(".")
    node = merged
    for key in parents:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[last] = value
    deployment.engine[dest] = Setting(value=merged, line=current.line if current else line)


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
    parser = stored_parser(flags.vllm)
    options: dict[str, argparse.Action] = parser._option_string_actions
    for group in _groups(deployment.serve_argv, _is_option)[1:]:
        flag = group[0]
        name, _, keys = vllm_flag_name(str(flag.value)).partition(".")
        if name in _HELP:
            raise _not_serving(name, flag.line)
        action = options.get(name)
        if action is None and parser.allow_abbrev:
            # vLLM's parser accepts a unique prefix of a long flag, so the checker does too.
            prefixed = {options[o] for o in options if o.startswith(name) and o.startswith("--")}
            action = prefixed.pop() if len(prefixed) == 1 else None
        if isinstance(action, argparse._HelpAction):
            raise _not_serving(name, flag.line)
        if action is not None and action.dest == "config":
            # vLLM's parser would open the file; the checker opens no file a command names.
            raise InputError(
                f"`vllm serve {name} FILE` takes its flags from a file, "
                "which the checker does not open, so they would go unchecked",
                "write the flags on the command line to have them checked",
                flag.line,
            )
        if action is None:
            written = str(flag.value).partition("=")[0]
            deployment.unknown_flags.append(
                (Setting(value=written, line=flag.line), suggest(name, list(options)))
            )
            continue
        if keys:
            _set_config_key(deployment, action.dest, keys, group, flag.line)
            continue
        _, equals, inline = str(flag.value).partition("=")
        argv = [f"{name}={inline}"] if equals else [name, *(str(t.value) for t in group[1:])]
        try:
            namespace = parser.parse_args(argv)
        except ParseError as error:
            deployment.invalid_values.append((Setting(value=name, line=flag.line), str(error)))
            continue
        deployment.engine[action.dest] = Setting(
            value=getattr(namespace, action.dest), line=flag.line
        )
