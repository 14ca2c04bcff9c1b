"""What a page's server block serves: model ids, host and port, read from the file it starts.

``python X.py`` reads ``model_id`` and ``http_options`` from the recipe; ``serve run X.yaml``
reads the Serve config; ``docker compose up`` reads the Compose service's ``vllm serve``
command; ``vllm serve`` is read from the block itself.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from ray_serve_npu.vllm_cli import VLLMServe, find_compose_file, vllm_serve_service

from .blocks import Block
from .problems import Location, PageProblem, display_path

#: Ray Serve's and vLLM's default HTTP port.
DEFAULT_PORT = 8000


@dataclass(frozen=True)
class ServerConfig:
    model_ids: frozenset[str]
    #: None: the server's default (all interfaces or loopback; clients on this host use loopback).
    host: str | None
    port: int
    #: Where it was read, for messages: ``recipes/serve_npu.py``.
    source: str


def commands(text: str) -> list[list[str]]:
    """The argv of each command line of a shell block (continuations joined, ``&&`` split)."""
    argvs: list[list[str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue  # bash -n reports it
        argv: list[str] = []
        for word in words:
            if word in {"&&", "||", ";", "|", "&"}:
                argvs.append(argv)
                argv = []
            else:
                argv.append(word)
        argvs.append(argv)
    return [argv for argv in argvs if argv]


def python_script(argv: list[str]) -> str | None:
    """``X.py`` of ``[VAR=value ...] python X.py ...``."""
    words = [w for w in argv if "=" not in w or w.startswith("-")]
    if len(words) >= 2 and Path(words[0]).name.startswith("python") and words[1].endswith(".py"):
        return words[1]
    return None


def server_config(block: Block, recipes: Path) -> ServerConfig:
    """The config the server block ``block`` starts (its commands run in ``recipes``)."""
    for argv in commands(block.text):
        words = [w for w in argv if "=" not in w or w.startswith("-")]  # drop VAR=value prefixes
        script = python_script(words)
        if script is not None:
            return _python_config(_existing(block, recipes / script))
        if words[:2] == ["serve", "run"] or words[:2] == ["serve", "deploy"]:
            config = next((w for w in words[2:] if w.endswith((".yaml", ".yml"))), None)
            if config is not None:
                return _serve_yaml_config(_existing(block, recipes / config))
        if words[:2] == ["docker", "compose"] and "up" in words:
            return _compose_config(block, recipes, words)
        if words[:2] == ["vllm", "serve"]:
            return _vllm_serve_config(VLLMServe.parse(words), "the server block")
    raise block.problem(
        1,
        "cannot tell which server this block starts",
        "start it with `python X.py`, `serve run X.yaml`, `docker compose up -d` or `vllm serve`",
    )


def _existing(block: Block, file: Path) -> Path:
    if not file.is_file():
        raise block.problem(
            1, f"the server block starts {display_path(file)}, which does not exist", "add the file"
        )
    return file


def _keyed_values(tree: ast.AST) -> list[tuple[str, ast.expr]]:
    """``key=value`` keywords and ``"key": value`` dict entries anywhere in ``tree``."""
    pairs: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            pairs += [(k.arg, k.value) for k in node.keywords if k.arg]
        elif isinstance(node, ast.Dict):
            pairs += [
                (k.value, v)
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return pairs


def _python_config(file: Path) -> ServerConfig:
    tree = ast.parse(file.read_text(), str(file))
    # Module-level NAME = "literal", so that model_id=MODEL_ID resolves.
    names = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def literal(node: ast.expr) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        return names.get(node.id) if isinstance(node, ast.Name) else None

    pairs = _keyed_values(tree)
    model_ids = {literal(v) for k, v in pairs if k == "model_id"}
    http = [pair for k, v in pairs if k == "http_options" for pair in _keyed_values(v)]
    ports = [literal(v) for k, v in http if k == "port"]
    hosts = [literal(v) for k, v in http if k == "host"]
    port = ports[0] if ports else DEFAULT_PORT
    return _checked(file, model_ids, hosts[0] if hosts else None, port)


def _serve_yaml_config(file: Path) -> ServerConfig:
    config = yaml.safe_load(file.read_text()) or {}
    model_ids: set[object] = set()
    for application in config.get("applications") or []:
        for llm_config in (application.get("args") or {}).get("llm_configs") or []:
            if isinstance(llm_config, str):  # Serve LLM also takes a path to a config file
                llm_config = yaml.safe_load((file.parent / llm_config).read_text())
            model_ids.add((llm_config.get("model_loading_config") or {}).get("model_id"))
    http = config.get("http_options") or {}
    return _checked(file, model_ids, http.get("host"), http.get("port", DEFAULT_PORT))


def _compose_config(block: Block, recipes: Path, words: list[str]) -> ServerConfig:
    named = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in {"-f", "--file"}), None)
    try:
        service = vllm_serve_service(find_compose_file(recipes, named))
    except FileNotFoundError as error:
        raise block.problem(1, str(error), "add the Compose file the block starts") from None
    except ValueError as error:
        raise block.problem(1, str(error), "give the service a `vllm serve` command") from None
    return _vllm_serve_config(service.command, display_path(service.file))


def _vllm_serve_config(command: VLLMServe, source: str) -> ServerConfig:
    names = command.get("--served-model-name") or command.model
    port = int(command.get("--port") or DEFAULT_PORT)
    return ServerConfig(frozenset([names] if names else []), command.get("--host"), port, source)


def _checked(file: Path, model_ids: set[object], host: object, port: object) -> ServerConfig:
    if not model_ids or not all(isinstance(m, str) for m in model_ids):
        raise PageProblem(
            Location(file, 1),
            "the server config has no literal model_id",
            "set model_loading_config's model_id to a string literal",
        )
    if not isinstance(port, int) or (host is not None and not isinstance(host, str)):
        raise PageProblem(
            Location(file, 1), "http_options port/host are not literals", "write them as literals"
        )
    return ServerConfig(frozenset(model_ids), host, port, display_path(file))  # type: ignore[arg-type]
