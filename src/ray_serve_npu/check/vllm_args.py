"""``vllm serve`` flags and engine keywords, judged by vLLM's own parser where vLLM imports."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
from functools import cache
from typing import Any

from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.problems import InputError


class _ParseError(Exception):
    pass


@cache
def _parser() -> argparse.ArgumentParser | None:
    try:
        # vLLM 0.29 moved the serve parser here from vllm.entrypoints.openai.cli_args.
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        try:
            from vllm.entrypoints.openai.cli_args import make_arg_parser
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:
            return None

    class RaisingParser(FlexibleArgumentParser):
        # argparse exits on a bad value; the checker reports it instead.
        def error(self, message: str) -> Any:  # type: ignore[override]
            raise _ParseError(message)

    return make_arg_parser(RaisingParser())


def serve_flags() -> frozenset[str] | None:
    """Every option string of ``vllm serve``'s parser, or None if vLLM does not import."""
    parser = _parser()
    return None if parser is None else frozenset(parser._option_string_actions)


def vllm_version() -> str | None:
    """The version of the vLLM whose parser judges flags, or None if vLLM does not import."""
    if _parser() is None:
        return None
    import vllm

    return str(vllm.__version__)


@cache
def engine_fields() -> frozenset[str] | None:
    """Keywords Ray Serve LLM accepts in engine_kwargs: vLLM's AsyncEngineArgs and
    FrontendArgs fields (ray/llm/_internal/serve/engines/vllm/vllm_models.py:216-228)."""
    try:
        from vllm.engine.arg_utils import AsyncEngineArgs

        try:
            from vllm.entrypoints.launchers.cli_args import FrontendArgs
        except ImportError:
            from vllm.entrypoints.openai.cli_args import FrontendArgs
    except ImportError:
        return None
    return frozenset(
        f.name for cls in (AsyncEngineArgs, FrontendArgs) for f in dataclasses.fields(cls)
    )


def suggest(name: str, candidates: list[str] | frozenset[str]) -> str | None:
    """The candidate ``name`` looks like a misspelling of, if one is close enough."""
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
    return close[0] if close else None


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
    parser = _parser()
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
        except _ParseError as error:
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
