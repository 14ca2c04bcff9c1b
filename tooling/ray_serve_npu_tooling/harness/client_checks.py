"""Client blocks must call the server the page's server block starts: same model, host, port."""

from __future__ import annotations

import re
from pathlib import Path

from .blocks import Block, Language
from .problems import PageProblem, display_path
from .server_config import ServerConfig, commands, python_script

#: ``"model": "x"`` (JSON, Python dicts) and ``model="x"`` (the OpenAI client).
_MODEL = re.compile(
    r"""["']model["']\s*:\s*["'](?P<json>[^"']+)["']"""
    r"""|\bmodel\s*=\s*["'](?P<kw>[^"']+)["']"""
)
#: The port a URL without one means.
_SCHEME_PORTS = {None: 80, "http": 80, "https": 443}
#: A loopback address with a scheme or a port: ``http://127.0.0.1:8000``, ``localhost:8000``.
_LOCAL_URL = re.compile(
    r"(?:(?P<scheme>https?)://)?(?P<host>localhost|127(?:\.\d+){3}|0\.0\.0\.0|\[::1\])"
    r"(?::(?P<port>\d+))?"
)
_LOOPBACK = {"localhost", "127.0.0.1", "0.0.0.0", "[::1]", "::1", "::"}
#: Ray's own services, which clients may address beside the server: dashboard and job
#: API, GCS, Ray Client.
RAY_SERVICE_PORTS = {8265, 6379, 10001}


def check_client_text(text: str, config: ServerConfig) -> list[tuple[int, str, str]]:
    """(line, what, fix) for each model, host or port in ``text`` that ``config`` does not serve."""
    mismatches = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _MODEL.finditer(line):
            model = match["json"] or match["kw"]
            if model not in config.model_ids:
                mismatches.append((
                    number,
                    f"model {model!r} is not what the server serves: {_names(config)} "
                    f"(from {config.source})",
                    f"use model {_names(config)}, or change the server config",
                ))  # fmt: skip
        for match in _LOCAL_URL.finditer(line):
            if match["scheme"] is None and match["port"] is None:
                continue  # a bare host name, not an address of the server
            port = int(match["port"]) if match["port"] else _SCHEME_PORTS[match["scheme"]]
            if port in RAY_SERVICE_PORTS:
                continue
            if port != config.port:
                mismatches.append((
                    number,
                    f"{match[0]} uses port {port}; the server listens on {config.port} "
                    f"(from {config.source})",
                    f"use port {config.port}, or change the server config",
                ))  # fmt: skip
            elif config.host is not None and config.host not in _LOOPBACK:
                mismatches.append((
                    number,
                    f"{match[0]} is loopback; the server listens on {config.host} only "
                    f"(from {config.source})",
                    f"use host {config.host}",
                ))  # fmt: skip
    return mismatches


def check_client_block(block: Block, config: ServerConfig, recipes: Path) -> None:
    """Raise on the first mismatch in the block, or in a recipe the block runs with python."""
    for number, what, fix in check_client_text(block.text, config):
        raise block.problem(number, what, fix)
    if block.language is not Language.SHELL:
        return
    for argv in commands(block.text):
        name = python_script(argv)
        if name is not None:
            script = recipes / name
            if not script.is_file():
                raise PageProblem(
                    block.where,
                    f"this block runs {display_path(script)}, which does not exist",
                    "add the recipe or fix its name",
                )
            if display_path(script) == config.source:
                continue
            for number, what, fix in check_client_text(script.read_text(), config):
                ran = f"(in {display_path(script)}:{number}, which this block runs)"
                raise PageProblem(block.where, f"{what} {ran}", fix)


def _names(config: ServerConfig) -> str:
    return " or ".join(repr(name) for name in sorted(config.model_ids))
