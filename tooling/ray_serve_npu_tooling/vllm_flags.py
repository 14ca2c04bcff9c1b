"""Store ``vllm serve``'s flags at the installed vLLM: ``nox -s vllm-flags -- VERSION``.

Reads vLLM's own ``vllm serve`` parser and writes each option as
:class:`ray_serve_npu.vllm_flags.StoredOption`, its value type named by the
:data:`~ray_serve_npu.vllm_flags.CONVERTERS` entry that gives what vLLM's type function
gives on every one of :data:`PROBES` (value and type, or an error on both sides). A type
function that no converter matches stops the run, naming the flag: add a converter
before storing that vLLM.

    python -m ray_serve_npu_tooling.vllm_flags OUT.json
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray_serve_npu.vllm_flags import CONVERTERS, StoredFlags, StoredOption, converter

#: Texts every value type is tried on: numbers with and without size suffixes, None's
#: spellings, words, JSON of each kind, and comma lists.
PROBES = (
    "0", "1", "-1", "8", "2.5", "1e3", " 7 ", "1_000", "1k", "2K", "1.5k", "1.5K", "3M",
    "auto", "AUTO", "None", "", "abc", "Some-Value", "true", '{"a": 1}', '{"a": 2k}',
    ' {"a": 1} ', '{"a": "2k"}', "[1, 2]", '"x"', "null", "1,2, a", "0,3", "{bad",
)  # fmt: skip

#: vLLM's type function for config objects validates with the config's pydantic class,
#: which the stored file does not carry; it is stored as ``config_json``, judged less
#: closely (ray_serve_npu.vllm_flags says how).
_CONFIG_TYPE = "parse_dataclass"

_ACTIONS: dict[type, str] = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse.BooleanOptionalAction: "boolean_optional",
    argparse._AppendAction: "append",
    argparse._HelpAction: "help",
}


def _outcome(convert: Callable[[str], Any], text: str) -> tuple[bool, Any]:
    try:
        value = convert(text)
    except Exception:  # noqa: BLE001 - any error is argparse's "invalid value"
        return False, None
    return True, (type(value), value)


def _wraps_config(function: Any) -> bool:
    cells = getattr(function, "__closure__", None) or ()
    return _CONFIG_TYPE in getattr(function, "__qualname__", "") or any(
        _wraps_config(cell.cell_contents) for cell in cells if callable(cell.cell_contents)
    )


def type_name(function: Callable[[str], Any], flag: str) -> str:
    """The converter that stands for vLLM's type ``function``; SystemExit names the flag."""
    if _wraps_config(function):
        optional = _outcome(function, "None") == (True, (type(None), None))
        return "optional:config_json" if optional else "config_json"
    expected = [_outcome(function, probe) for probe in PROBES]
    for name in [*CONVERTERS, *(f"optional:{n}" for n in CONVERTERS)]:
        if name.endswith("config_json"):
            continue
        if [_outcome(converter(name), probe) for probe in PROBES] == expected:
            return name
    raise SystemExit(
        f"{flag}: vLLM's type function {getattr(function, '__qualname__', function)!r} matches "
        "no converter on the probes; add one to ray_serve_npu.vllm_flags.CONVERTERS"
    )


def _jsonable(value: Any) -> Any:
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def stored_option(action: argparse.Action) -> StoredOption:
    kind = next((name for cls, name in _ACTIONS.items() if type(action) is cls), None)
    vllm_action = None
    if kind is None:
        # vLLM's own action (LoRAParserAction): stored as the store it extends.
        kind, vllm_action = "store", type(action).__name__
    flags = list(action.option_strings)
    if kind == "boolean_optional":
        # argparse adds each `--no-` form itself.
        flags = [f for f in flags if not (f.startswith("--no-") and f"--{f[5:]}" in flags)]
    return StoredOption(
        flags=flags,
        dest=action.dest,
        action=kind,  # type: ignore[arg-type]
        nargs=action.nargs if kind in ("store", "append") else None,
        const=_jsonable(action.const) if kind in ("store", "store_const") else None,
        type=type_name(action.type, flags[0]) if action.type is not None else None,
        choices=[_jsonable(c) for c in action.choices] if action.choices is not None else None,
        vllm_action=vllm_action,
    )


def live_parser() -> argparse.ArgumentParser:
    """vLLM's ``vllm serve`` parser, built on the CPU platform so that no device is needed."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    # vLLM's own flags, not those a platform plugin installed beside it would add.
    os.environ.setdefault("VLLM_PLUGINS", "")
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    # A CUDA build of vLLM on a machine without a GPU finds no platform, and building its
    # config defaults then fails ("Failed to infer device type"); the flags are the same.
    if not vllm.platforms.current_platform.device_type:
        vllm.platforms._current_platform = CpuPlatform()  # type: ignore[attr-defined]
    from ray_serve_npu.vllm_args import serve_parser

    parser = serve_parser()
    if parser is None:
        raise SystemExit("vLLM's `vllm serve` parser does not import here")
    return parser


def stored_flags(made_by: str) -> StoredFlags:
    """The installed vLLM's flags, as the stored file holds them."""
    import vllm

    from ray_serve_npu.vllm_args import engine_fields

    parser = live_parser()
    fields = engine_fields() or frozenset()
    return StoredFlags(
        vllm=str(vllm.__version__),
        made_by=made_by,
        allow_abbrev=parser.allow_abbrev,
        engine_kwargs=sorted(fields),
        options=[stored_option(a) for a in parser._actions if a.option_strings],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument("--made-by", default="python -m ray_serve_npu_tooling.vllm_flags OUT")
    args = parser.parse_args(argv)
    flags = stored_flags(args.made_by)
    args.out.write_text(flags.model_dump_json(indent=1, exclude_defaults=True) + "\n")
    print(f"vLLM {flags.vllm}: {len(flags.options)} options written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
