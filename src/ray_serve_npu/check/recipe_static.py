"""Read a recipe's ``LLMConfig(...)`` calls from its syntax tree, without running it.

The evaluator knows literals, lists and dicts (with ``**`` unpacking), module-level
names bound to such values, ``dict(...)``, ``json.dumps(...)``, subscripts,
``LLMConfig(...)`` under any name the recipe imports it as, and its ``model_dump()``,
literal dicts in the ``llm_configs`` of an app builder, names imported from a recipe
file beside this one (read the same way), and ``os.environ.get(NAME, default)`` or
``os.getenv(NAME, default)``, which it reads as the default: the checker never
looks at the environment. Any other expression becomes an ``Unread`` value that
says why, at its line, so that what was not read is reported, never guessed; so is
a statement it does not follow that may change a config after it was built.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ray_serve_npu.check.problems import InputError, read_text


@dataclass(frozen=True)
class Unread:
    """A value the evaluator cannot know without running the recipe."""

    line: int
    why: str


@dataclass(frozen=True)
class _Ref:
    """A module or function the recipe imports, by its dotted name."""

    name: str


class Lined(dict[str, Any]):
    """A dict that remembers the line of each key, and the unknown mappings spread into it."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[str, int] = {}
        self.spread: list[Unread] = []

    def put(self, key: str, value: Any, line: int) -> None:
        self[key] = value
        self.lines[key] = line

    def merge(self, other: Lined) -> None:
        for key, value in other.items():
            self.put(key, value, other.lines[key])
        self.spread += other.spread


class JsonText(str):
    """``json.dumps(value)``, which keeps ``value`` for the lines of its keys."""

    value: Any


def _json_text(value: Any) -> JsonText:
    text = JsonText(json.dumps(value))
    text.value = value
    return text


@dataclass
class Config:
    """The keyword arguments of one ``LLMConfig(...)`` call."""

    kwargs: Lined
    line: int
    # The recipe file it was imported from, or None for a call in the file itself.
    origin: str | None = None
    # Statements that change the config after it was built, which the checker does not follow.
    changed: list[Unread] = field(default_factory=list)


# What builds an LLMConfig, and what takes LLMConfigs (or dicts of one) in `llm_configs`.
_LLM_CONFIG = "LLMConfig"
_SERVING = frozenset({"build_openai_app", "build_dp_openai_app", "LLMServingArgs"})
# Modules whose import makes a recipe one that should build an LLMConfig.
_SERVE_LLM_MODULES = ("ray.serve.llm", "ray_serve_npu")


def _imports_serve_llm(tree: ast.Module) -> bool:
    """Whether module-level code imports Ray Serve LLM; a function that does may be a
    library's, building configs from its arguments."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        if any(m in _SERVE_LLM_MODULES or m.startswith("ray.serve.llm.") for m in modules):
            return True
    return False


def _code(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, MemoryError, ValueError):
        return "(an expression too deep to show)"
    return text if len(text) <= 60 else text[:57] + "..."


def _containers(value: Any, found: set[int]) -> set[int]:
    """The ids of ``value`` and every dict, list and config inside it."""
    if isinstance(value, Lined | list | Config) and id(value) not in found:
        found.add(id(value))
        items: Any = value.values() if isinstance(value, Lined) else value
        if isinstance(value, Config):
            items = [value.kwargs]
        for item in items:
            _containers(item, found)
    elif isinstance(value, JsonText):
        _containers(value.value, found)
    return found


def _relocate(value: Any, line: int, origin: str) -> Any:
    """``value`` imported from ``origin``: every line becomes the importing line."""
    if isinstance(value, Lined):
        moved = Lined()
        for key, item in value.items():
            moved.put(key, _relocate(item, line, origin), line)
        moved.spread = [_relocate(u, line, origin) for u in value.spread]
        return moved
    if isinstance(value, list):
        return [_relocate(item, line, origin) for item in value]
    if isinstance(value, Config):
        return Config(_relocate(value.kwargs, line, origin), line, value.origin or origin)
    if isinstance(value, Unread):
        return Unread(line, f"{value.why} ({origin}:{value.line})")
    if isinstance(value, JsonText):
        return _json_text(_relocate(value.value, line, origin))
    return value


# Methods that leave their object as it was; any other method call may change it.
_PURE_METHODS = frozenset({"model_dump", "get", "copy", "items", "keys", "values"})


def _touched(statement: ast.AST) -> set[str]:
    """Names a module-level statement the evaluator does not follow may bind or change."""
    names: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(statement, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            # A body runs when called; its own names are local, except `global` ones.
            in_function = True
        elif isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if not in_function:
                names.add(node.id)
        elif (
            isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load)
        ) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr not in _PURE_METHODS
        ):
            base = node.func.value if isinstance(node, ast.Call) else node.value  # type: ignore[union-attr]
            while isinstance(base, ast.Attribute | ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
        stack.extend((child, in_function) for child in ast.iter_child_nodes(node))
    return names


#: The builder that turns a run of vLLM-Ascend's CI into an LLMConfig's arguments.
CI_RUN_BUILDER = ("ray_serve_npu.model_recipes", "recipe_for")


@dataclass
class Module:
    """One recipe file, evaluated statement by statement at module level."""

    path: Path
    # Files being read, to stop an import cycle.
    reading: frozenset[Path] = frozenset()
    names: dict[str, Any] = field(default_factory=dict)
    # Each LLMConfig by the node that builds it: a call, or a dict in `llm_configs`.
    configs: dict[ast.AST, Config] = field(default_factory=dict)
    # Whether the recipe imports Ray Serve LLM, so that it should build an LLMConfig.
    uses_serve_llm: bool = False
    #: Whether it builds its LLMConfig from a run of vLLM-Ascend's CI, whichever its
    #: command line names (``ray_serve_npu.model_recipes.recipe_for``).
    builds_ci_runs: bool = False
    #: The runs it names as literals (``find_run("Qwen3-32B-W8A8-single-a2", ...)``).
    named_runs: list[str] = field(default_factory=list)

    def run(self, tree: ast.Module) -> None:
        self.uses_serve_llm = _imports_serve_llm(tree)
        self.builds_ci_runs = any(
            isinstance(node, ast.ImportFrom)
            and node.module == CI_RUN_BUILDER[0]
            and any(alias.name == CI_RUN_BUILDER[1] for alias in node.names)
            for node in ast.walk(tree)
        )
        self.named_runs = [
            node.args[0].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "find_run"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ]
        for statement in tree.body:
            self._statement(statement)
        # Calls that module-level code does not reach (in a function, or under
        # `if __name__ == "__main__":`) are read with the module's final names.
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and self._callee(node) and node not in self.configs:
                self._expr(node)

    def imported_config(self) -> bool:
        """Whether the module holds an LLMConfig imported from another recipe."""
        return any(
            isinstance(item, Config)
            for value in self.names.values()
            for item in (value if isinstance(value, list) else [value])
        )

    def _callee(self, node: ast.Call) -> str | None:
        """``LLMConfig`` or one of ``_SERVING`` if ``node`` calls it, by the import table."""
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.names:
            name = func.id  # a star import, or an import the checker did not see
        else:
            callee = self._expr(func) if isinstance(func, ast.Name | ast.Attribute) else None
            if isinstance(callee, _Ref):
                name = callee.name.rsplit(".", 1)[-1]
            elif isinstance(func, ast.Attribute) and not isinstance(callee, Config):
                name = func.attr
            else:
                return None
        return name if name == _LLM_CONFIG or name in _SERVING else None

    def _statement(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    self.names[alias.asname] = _Ref(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.names[top] = _Ref(top)
        elif isinstance(statement, ast.ImportFrom):
            self._import_from(statement)
        elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            value = self._expr(statement.value)
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    self.names[target.id] = value
                else:
                    self._forget(target, statement.lineno)
        elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
            self._forget(statement, statement.lineno)

    def _forget(self, node: ast.AST, line: int) -> None:
        for name in _touched(node):
            value = self.names.get(name)
            if not isinstance(value, _Ref):
                why = f"`{name}` is bound or changed by a statement the checker does not follow"
                self.names[name] = Unread(line, why)
                # A config built from the value, or held in it, may have changed with it.
                touched = _containers(value, set())
                for config in self.configs.values():
                    if _containers(config, set()) & touched:
                        config.changed.append(Unread(line, f"{why}, after an LLMConfig used it"))

    def _import_from(self, statement: ast.ImportFrom) -> None:
        module = statement.module or ""
        sibling = self.path.parent / f"{module}.py"
        if statement.level or "." in module or not sibling.is_file():
            for alias in statement.names:
                self.names[alias.asname or alias.name] = _Ref(f"{module}.{alias.name}")
            return
        loaded = read_module(sibling, self.reading | {self.path})
        for alias in statement.names:
            if isinstance(loaded, Unread):
                value: Any = loaded
            elif alias.name in loaded.names:
                value = _relocate(loaded.names[alias.name], statement.lineno, sibling.name)
            else:
                value = Unread(
                    statement.lineno, f"{sibling.name} binds no `{alias.name}` the checker reads"
                )
            self.names[alias.asname or alias.name] = value

    # Expressions.

    def _expr(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and not isinstance(node.value, bytes):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float)
        ):
            return -node.operand.value
        if isinstance(node, ast.List | ast.Tuple):
            return [self._item(item) for item in node.elts]
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                value = self.names[node.id]
                return Unread(node.lineno, value.why) if isinstance(value, Unread) else value
            if node.id == "dict":
                return _Ref("dict")
            return Unread(node.lineno, f"`{node.id}` is not a module-level name the checker reads")
        if isinstance(node, ast.Attribute):
            base = self._expr(node.value)
            if isinstance(base, _Ref):
                return _Ref(f"{base.name}.{node.attr}")
            return base if isinstance(base, Unread) else self._unknown(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return self._unknown(node)

    def _unknown(self, node: ast.expr) -> Unread:
        why = f"`{_code(node)}` is an expression the checker does not evaluate"
        return Unread(node.lineno, why)

    def _item(self, node: ast.expr) -> Any:
        """A value placed in a list, dict or call: a module or function reference is unknown."""
        if isinstance(node, ast.Starred):
            return self._unknown(node)
        value = self._expr(node)
        if isinstance(value, _Ref):
            why = f"`{_code(node)}` is `{value.name}`, from a module the checker does not read"
            return Unread(node.lineno, why)
        return value

    def _dict(self, node: ast.Dict) -> Lined:
        result = Lined()
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                self._spread(result, value)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                result.put(key.value, self._item(value), key.lineno)
            else:
                result.spread.append(self._unknown(key))
        return result

    def _spread(self, into: Lined, node: ast.expr) -> None:
        value = self._expr(node)
        if isinstance(value, Lined):
            into.merge(value)
        else:
            into.spread.append(value if isinstance(value, Unread) else self._unknown(node))

    def _subscript(self, node: ast.Subscript) -> Any:
        base = self._expr(node.value)
        key = self._expr(node.slice)
        if isinstance(base, Unread):
            return base
        if isinstance(base, _Ref) and base.name == "os.environ":
            return Unread(
                node.lineno,
                f"`{_code(node)}` reads the environment when the recipe runs, with no default",
            )
        if isinstance(base, Lined) and isinstance(key, str) and key in base:
            return base[key]
        if isinstance(base, list) and isinstance(key, int) and -len(base) <= key < len(base):
            return base[key]
        return self._unknown(node)

    def _call(self, node: ast.Call) -> Any:
        callee_name = self._callee(node)
        if callee_name == _LLM_CONFIG:
            return self._llm_config(node)
        if callee_name in _SERVING:
            self._serving(node)
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(base := self._expr(func.value), Config):
            if func.attr == "model_dump" and not node.args and _dumps_every_set_field(node):
                # The fields a recipe set; defaults of the fields the checker reads are empty.
                return base.kwargs
            if func.attr.startswith("model_copy"):
                # A config built from another with changes: its values are not read.
                config = Config(base.kwargs, node.lineno)
                why = f"`{_code(node)}` builds an LLMConfig the checker does not read"
                config.changed.append(Unread(node.lineno, why))
                return self.configs.setdefault(node, config)
        callee = self._expr(func)
        if isinstance(callee, Unread):
            return Unread(node.lineno, f"`{_code(node)}` is a call the checker does not evaluate")
        name = callee.name if isinstance(callee, _Ref) else ""
        if name == "dict" and len(node.args) <= 1:
            result = Lined()
            if node.args:
                self._spread(result, node.args[0])
            self._keywords(result, node)
            return result
        if name == "json.dumps" and len(node.args) == 1 and not node.keywords:
            return self._json(self._item(node.args[0]), node)
        if name in ("os.environ.get", "os.getenv") and not node.keywords:
            if len(node.args) == 2:
                return self._item(node.args[1])
            return Unread(
                node.lineno,
                f"`{_code(node)}` reads the environment when the recipe runs, with no default",
            )
        return Unread(node.lineno, f"`{_code(node)}` is a call the checker does not evaluate")

    def _keywords(self, into: Lined, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg is None:
                self._spread(into, keyword.value)
            else:
                into.put(keyword.arg, self._item(keyword.value), keyword.lineno)

    def _json(self, value: Any, node: ast.Call) -> Any:
        unread = _first_unread(value)
        if unread is not None:
            return unread
        try:
            return _json_text(value)
        except TypeError:  # an LLMConfig object inside
            return self._unknown(node)

    def _serving(self, node: ast.Call) -> None:
        """Read the literal dicts of ``llm_configs`` passed to an app builder as LLMConfigs."""
        listed = [k.value for k in node.keywords if k.arg == "llm_configs"]
        for arg in node.args[:1] + [k.value for k in node.keywords if k.arg is not None]:
            if isinstance(arg, ast.Dict):
                listed += [
                    value
                    for key, value in zip(arg.keys, arg.values, strict=True)
                    if isinstance(key, ast.Constant) and key.value == "llm_configs"
                ]
        for configs in listed:
            for item in configs.elts if isinstance(configs, ast.List | ast.Tuple) else []:
                if isinstance(item, ast.Dict) and item not in self.configs:
                    self.configs[item] = Config(self._dict(item), item.lineno)

    def _llm_config(self, node: ast.Call) -> Config:
        kwargs = Lined()
        for arg in node.args:
            kwargs.spread.append(self._unknown(arg))
        self._keywords(kwargs, node)
        config = Config(kwargs, node.lineno)
        self.configs.setdefault(node, config)
        return config


def _dumps_every_set_field(node: ast.Call) -> bool:
    """A ``model_dump`` whose keywords keep every field the recipe set (no include/exclude)."""
    return all(
        keyword.arg in ("exclude_unset", "exclude_none", "exclude_defaults")
        and isinstance(keyword.value, ast.Constant)
        for keyword in node.keywords
    )


def _first_unread(value: Any) -> Unread | None:
    if isinstance(value, Unread):
        return value
    if isinstance(value, Lined):
        if value.spread:
            return value.spread[0]
        return next(filter(None, map(_first_unread, value.values())), None)
    if isinstance(value, list):
        return next(filter(None, map(_first_unread, value)), None)
    return None


def read_module(path: Path, reading: frozenset[Path] = frozenset()) -> Module | Unread:
    """Evaluate ``path``'s module-level code statically; an unreadable import is Unread."""
    path = path.resolve()
    if path in reading:
        return Unread(1, f"{path.name} imports itself back (an import cycle)")
    try:
        tree = ast.parse(read_text(path), filename=str(path))
        module = Module(path, reading)
        module.run(tree)
    except InputError as error:
        return Unread(1, f"{path.name} could not be read ({error.problem})")
    except (OSError, SyntaxError, RecursionError, MemoryError, ValueError) as error:
        return Unread(1, f"{path.name} could not be read as Python ({type(error).__name__})")
    return module


def flatten(value: Any, prefix: str, lines: dict[str, int], unread: list[Unread], line: int) -> Any:
    """``value`` as plain data; key lines go to ``lines`` by dotted path, unknowns to ``unread``."""
    if isinstance(value, Lined):
        plain = {}
        for key, item in value.items():
            lines[prefix + key] = value.lines[key]
            if isinstance(item, Unread):
                unread.append(item)
            else:
                plain[key] = flatten(item, f"{prefix}{key}.", lines, unread, value.lines[key])
        unread += value.spread
        return plain
    if isinstance(value, JsonText):
        flatten(value.value, prefix, lines, [], line)
        return str(value)
    if isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, Unread):
                unread.append(item)
            else:
                items.append(flatten(item, prefix, lines, unread, line))
        return items
    if isinstance(value, Config):
        unread.append(Unread(line, "an LLMConfig object is not a value the checker reads here"))
        return None
    return value
