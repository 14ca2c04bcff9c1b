"""List the ``additional_config`` keys a vLLM-Ascend tag reads, for the checker's rules.

The rule ``additional-config-unknown-key`` (``src/ray_serve_npu/check/rules/<tag>.yaml``)
holds ``known_keys`` (each key with the file and line at the tag that reads it) and
``known_sub_keys`` (what ``AscendCompilationConfig`` takes). Both are facts of the
source at the tag, so this script reads them from a clone, with Python's ``ast``,
and never from memory:

- a top-level key is read where the source writes ``additional_config.get("key")``,
  ``additional_config["key"]``, ``"key" in additional_config`` or
  ``_get_config_value(additional_config, "key", ...)``, with ``additional_config``
  a name or an attribute of that name, anywhere under ``vllm_ascend/``; the line
  cited is the first in ``vllm_ascend/ascend_config.py``, else the first in the
  file that sorts first;
- ``ascend_compilation_config`` takes the keyword parameters of
  ``AscendCompilationConfig.__init__`` and the ``kwargs.get("key")`` it reads;
- from v0.25.1rc1, ``scheduler_config`` takes the keys that
  ``_get_config_value(scheduler_config, additional_config, "key", ...)`` reads;
- from v0.27.1rc1, where ``AscendConfig``, ``AscendCompilationConfig`` and
  ``SchedulerConfig`` are pydantic dataclasses (``@config``, ``extra="forbid"``) with no
  ``__init__`` of their own, each takes its fields: the names the class body annotates,
  less ``ClassVar`` ones, ``model_config``, private ones (``_name``) and
  ``dataclasses.field(init=False)``. AscendConfig's fields are top-level keys, cited at
  their lines; ``SchedulerConfig.from_additional_config`` reads each deprecated top-level
  scheduler key through ``_resolve("key", ...)``.

Print the two lists as YAML, ready for the rules file, or compare them with it:

    python tools/additional_config_keys.py --git-dir /path/to/vllm-ascend.git v0.23.0
    python tools/additional_config_keys.py --git-dir /path/to/vllm-ascend.git v0.23.0 --check

Without a clone, the release's sdist on PyPI holds the same files: ``--package-dir``
reads an unpacked one. ``--record`` prints, from a clone, what proves an sdist holds
the tag's files (:func:`tree_digest`), for ``tests/check/data/vllm_ascend_sdists.json``.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "vllm_ascend/"
CONFIG_FILE = "vllm_ascend/ascend_config.py"
RULE_ID = "additional-config-unknown-key"


def _git(git_dir: Path, *args: str) -> bytes:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"git --git-dir {git_dir} {' '.join(args)} failed: "
            f"{done.stderr.decode(errors='replace').strip()}. "
            "Give a clone of vllm-project/vllm-ascend that has the tag."
        )
    return done.stdout


def _is_config(node: ast.expr) -> bool:
    """``additional_config`` itself, or an attribute of that name (``cfg.additional_config``)."""
    if isinstance(node, ast.Name):
        return node.id == "additional_config"
    return isinstance(node, ast.Attribute) and node.attr == "additional_config"


def _text(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(key, line) of every top-level ``additional_config`` read in one module."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        key: str | None = None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and _is_config(func.value):
                key = _text(node.args[0]) if node.args else None
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "_get_config_value" and any(_is_config(a) for a in node.args[:2]):
                # AscendConfig's (additional_config, "key", ...) or, from v0.25.1rc1,
                # SchedulerConfig's (scheduler_config, additional_config, "key", ...).
                key = next((k for a in node.args if (k := _text(a)) is not None), None)
        elif isinstance(node, ast.Subscript) and _is_config(node.value):
            key = _text(node.slice)  # type: ignore[arg-type]
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            if isinstance(node.ops[0], ast.In) and _is_config(node.comparators[0]):
                key = _text(node.left)
        if key is not None:
            found.append((key, node.lineno))
    return found


def _class(tree: ast.AST, name: str) -> ast.ClassDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)


def _has_init(cls: ast.ClassDef) -> bool:
    return any(isinstance(i, ast.FunctionDef) and i.name == "__init__" for i in cls.body)


def dataclass_fields(cls: ast.ClassDef) -> list[tuple[str, int]]:
    """(name, line) of each field a pydantic ``@config`` dataclass takes as a keyword,
    from v0.27.1rc1: its annotated names, less ``ClassVar`` ones, ``model_config``,
    private ones and ``dataclasses.field(init=False)``."""
    fields = []
    for item in cls.body:
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        name = item.target.id
        if (
            name.startswith("_")
            or name == "model_config"
            or "ClassVar" in ast.unparse(item.annotation)
        ):
            continue
        value = item.value
        if (
            isinstance(value, ast.Call)
            and ast.unparse(value.func) in ("dataclasses.field", "field")
            and any(
                k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in value.keywords
            )
        ):
            continue
        fields.append((name, item.lineno))
    return fields


def config_class_reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(key, line) of each top-level key that ``AscendConfig`` takes as a pydantic field,
    and each deprecated top-level scheduler key that
    ``SchedulerConfig.from_additional_config`` reads through ``_resolve("key", ...)``,
    from v0.27.1rc1; none where AscendConfig has an ``__init__`` of its own."""
    ascend = _class(tree, "AscendConfig")
    if ascend is None or _has_init(ascend):
        return []
    found = dataclass_fields(ascend)
    scheduler = _class(tree, "SchedulerConfig")
    for item in scheduler.body if scheduler is not None else []:
        if isinstance(item, ast.FunctionDef) and item.name == "from_additional_config":
            found += [
                (key, call.lineno)
                for call in ast.walk(item)
                if isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == "_resolve"
                and call.args
                and (key := _text(call.args[0])) is not None
            ]
    return found


def nested_sub_keys(tree: ast.AST) -> dict[str, list[str]]:
    """Keys read from a nested mapping before the top level, from v0.25.1rc1:
    ``_get_config_value(scheduler_config, additional_config, "key", ...)`` reads
    ``additional_config["scheduler_config"]["key"]``, else the deprecated top-level key."""
    nested: dict[str, list[tuple[int, str]]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and len(node.args) >= 3):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        parent, config, key = node.args[0], node.args[1], _text(node.args[2])
        if name == "_get_config_value" and isinstance(parent, ast.Name) and _is_config(config):
            if key is not None and not _is_config(parent):
                nested.setdefault(parent.id, []).append((node.lineno, key))
    scheduler = _class(tree, "SchedulerConfig")
    if scheduler is not None and not _has_init(scheduler) and not nested:
        # From v0.27.1rc1: a pydantic dataclass, which takes its fields.
        return {"scheduler_config": [name for name, _ in dataclass_fields(scheduler)]}
    return {parent: [key for _, key in sorted(keys)] for parent, keys in nested.items()}


def compilation_sub_keys(tree: ast.AST) -> list[str]:
    """What ``AscendCompilationConfig.__init__`` takes: its keyword parameters, then the
    ``kwargs.get("key")`` it reads, in source order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "AscendCompilationConfig":
            if not _has_init(node):
                # From v0.27.1rc1: a pydantic dataclass, which takes its fields.
                return [name for name, _ in dataclass_fields(node)]
            init = next(
                item
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name == "__init__"
            )
            keys = [a.arg for a in init.args.args[1:] + init.args.kwonlyargs]
            kwargs = init.args.kwarg.arg if init.args.kwarg else None
            extra = [
                (call.lineno, key)
                for call in ast.walk(init)
                if isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "get"
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == kwargs
                and (key := _text(call.args[0]) if call.args else None)
            ]
            return keys + [key for _, key in sorted(extra) if key not in keys]
    raise SystemExit(f"{CONFIG_FILE} has no class AscendCompilationConfig at this tag")


class Source(Protocol):
    """The package's Python files at one release."""

    def paths(self) -> list[str]:
        """``vllm_ascend/...py`` paths, sorted."""
        ...

    def read(self, path: str) -> bytes: ...


class GitTag:
    """A tag of a clone of vllm-project/vllm-ascend."""

    def __init__(self, git_dir: Path, tag: str) -> None:
        self.git_dir, self.tag = git_dir, tag

    def paths(self) -> list[str]:
        listed = _git(self.git_dir, "ls-tree", "-r", "--name-only", self.tag, "--", PACKAGE)
        return sorted(p for p in listed.decode().splitlines() if p.endswith(".py"))

    def read(self, path: str) -> bytes:
        return _git(self.git_dir, "show", f"{self.tag}:{path}")


class PackageDir:
    """An unpacked sdist of the release (``<dir>/vllm_ascend/...``), less the files its
    build writes that the tag doesn't hold (``exclude``, such as ``_version.py``)."""

    def __init__(self, root: Path, exclude: Iterable[str] = ()) -> None:
        self.root, self.exclude = root, frozenset(exclude)

    def paths(self) -> list[str]:
        found = (p.relative_to(self.root).as_posix() for p in (self.root / PACKAGE).rglob("*.py"))
        return sorted(p for p in found if p not in self.exclude)

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()


def tree_digest(source: Source) -> str:
    """SHA-256 over each Python file's path and git blob id: equal for an sdist and the
    tag exactly when they hold the same files with the same bytes."""
    digest = hashlib.sha256()
    for path in source.paths():
        content = source.read(path)
        blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # noqa: S324 - git's id
        digest.update(f"{path}\0{blob}\n".encode())
    return digest.hexdigest()


def known_keys(source: Source) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``known_keys`` and ``known_sub_keys`` of the release, as the rules file holds them."""
    # ascend_config.py first: it is where AscendConfig reads the keys.
    paths = sorted(source.paths(), key=lambda p: p != CONFIG_FILE)
    cited: dict[str, str] = {}
    sub_keys: dict[str, list[str]] = {}
    for path in paths:
        tree = ast.parse(source.read(path), filename=path)
        found = reads(tree) + (config_class_reads(tree) if path == CONFIG_FILE else [])
        for key, line in sorted(found, key=lambda item: item[1]):
            cited.setdefault(key, f"{path}:{line}")
        if path == CONFIG_FILE:
            sub_keys = {"ascend_compilation_config": compilation_sub_keys(tree)}
            sub_keys.update(nested_sub_keys(tree))
    return cited, sub_keys


def rule_params(tag: str) -> dict[str, object]:
    """The rule's parameters in the rules file of ``tag``."""
    sys.path.insert(0, str(ROOT / "src"))
    from ray_serve_npu.check.rules import load_rules

    return load_rules(tag).rule(RULE_ID).params


def differences(source: Source, tag: str) -> list[str]:
    """What the rules file of ``tag`` says that ``source`` (the release's files) doesn't,
    and the reverse."""
    keys, sub_keys = known_keys(source)
    params = rule_params(tag)
    problems = []
    held: dict[str, str] = dict(params["known_keys"])  # type: ignore[arg-type]
    for key in sorted(keys.keys() | held.keys()):
        if held.get(key) != keys.get(key):
            problems.append(
                f"known_keys.{key}: the rules file has {held.get(key)}, the source {keys.get(key)}"
            )
    if params["known_sub_keys"] != sub_keys:
        problems.append(
            f"known_sub_keys: the rules file has {params['known_sub_keys']}, the source {sub_keys}"
        )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tag", help="a vLLM-Ascend tag, e.g. v0.23.0")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--git-dir", type=Path, help="a clone of vllm-ascend")
    where.add_argument("--package-dir", type=Path, help="the tag's sdist, unpacked")
    parser.add_argument(
        "--check", action="store_true", help="compare with the tag's rules file instead"
    )
    parser.add_argument(
        "--record", action="store_true", help="print the tag's tree digest instead (a clone)"
    )
    args = parser.parse_args(argv)
    if args.record and not args.git_dir:
        parser.error("--record reads the tag itself: give --git-dir, a clone with the tag")
    if args.record and args.check:
        parser.error("--record and --check: give one of them")
    source: Source = (
        GitTag(args.git_dir, args.tag) if args.git_dir else PackageDir(args.package_dir)
    )
    if args.record:
        print(tree_digest(source))
        return 0
    if args.check:
        problems = differences(source, args.tag)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    keys, sub_keys = known_keys(source)
    print("known_keys:")
    for key, where_read in keys.items():
        print(f"  {key}: {where_read}")
    print("known_sub_keys:")
    for parent, subs in sub_keys.items():
        print(f"  {parent}:")
        for sub in subs:
            print(f"    - {sub}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
