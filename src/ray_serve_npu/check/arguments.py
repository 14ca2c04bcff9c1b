"""Fill a :class:`~ray_serve_npu.check.model.Deployment` from ``vllm serve`` argv or engine_kwargs.

Flags are judged by vLLM's own parser where vLLM imports (:mod:`ray_serve_npu.vllm_args`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.problems import InputError
from ray_serve_npu.vllm_args import ParseError, engine_fields, serve_parser, suggest


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
    """Fill ``deployment`` from the tokens after ``vllm serve``."""
    parser = serve_parser()
    options: dict[str, argparse.Action] = parser._option_string_actions if parser else {}

    def is_option(text: str) -> bool:
        if not text.startswith("-") or text == "-":
            return False
        # A negative number is a value ("-1"), not a flag.
        return not text.lstrip("-").replace(".", "", 1).isdigit()

    groups = _groups(tokens, is_option)
    if tokens:
        deployment.http_server_line = tokens[0].line
    if groups[0]:
        deployment.model = groups[0][0]
    for group in groups[1:]:
        flag = group[0]
        name, eq, inline = str(flag.value).partition("=")
        if name in _HELP:
            raise _not_serving(name, flag.line)
        if parser is None:
            dest = name.lstrip("-").replace("-", "_")
            value = (
                _plain_value(inline)
                if eq
                else (_plain_value(str(group[1].value)) if len(group) > 1 else True)
            )
            deployment.engine[dest] = Setting(value=value, line=flag.line)
            continue
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
            deployment.unknown_flags.append(
                (Setting(value=name, line=flag.line), suggest(name, list(options)))
            )
            continue
        argv = [str(t.value) for t in group]
        try:
            namespace = parser.parse_args(argv)
        except ParseError as error:
            deployment.invalid_values.append((Setting(value=name, line=flag.line), str(error)))
            continue
        deployment.engine[action.dest] = Setting(
            value=getattr(namespace, action.dest), line=flag.line
        )


def apply_engine_kwargs(
    kwargs: dict[str, Any], lines: dict[str, int], deployment: Deployment
) -> None:
    """Fill ``deployment`` from an LLMConfig's ``engine_kwargs``."""
    fields = engine_fields()
    for key, value in kwargs.items():
        line = lines.get(key, deployment.line)
        if fields is not None and key not in fields:
            deployment.unknown_flags.append(
                (Setting(value=f"engine_kwargs.{key}", line=line), suggest(key, fields))
            )
            continue
        if isinstance(value, str) and value[:1] in "{[":
            value = _plain_value(value)
        deployment.engine[key] = Setting(value=value, line=line)
