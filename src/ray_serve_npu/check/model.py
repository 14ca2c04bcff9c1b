"""What every parser turns its input into: one deployment of one vLLM engine."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Setting(BaseModel):
    """A value and the line it was written on."""

    value: Any
    line: int


class Mount(BaseModel):
    """A host path or volume that a container mounts, and whether it is read-only."""

    source: str
    target: str
    read_only: bool
    line: int


def truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


#: The types a ``value_type`` rule may ask a setting to have, by the name its file writes.
VALUE_TYPES: dict[str, type] = {"bool": bool}

#: A setting a deployment does not set (:meth:`Deployment.value_at`).
MISSING: Any = object()

#: Where a setting path starts: an environment variable, an engine argument (by its
#: dest name), or a key of vLLM-Ascend's ``additional_config``.
PATH_HEADS: tuple[str, ...] = ("env", "engine", "additional_config")


def split_path(path: str) -> tuple[str, list[str]]:
    """``env.NAME``, ``engine.key.sub`` or ``additional_config.key.sub`` as (head, keys).

    Raises ValueError naming the path for any other head, as a rule file could spell it.
    """
    head, _, rest = path.partition(".")
    if head not in PATH_HEADS or not rest:
        heads = ", ".join(f"{h}.KEY" for h in PATH_HEADS)
        raise ValueError(f"setting path {path!r}: write it as one of {heads}")
    return head, rest.split(".")


class Deployment(BaseModel):
    """One engine as a file configures it, with the line of every setting."""

    file: str
    # Line that anchors findings about the deployment as a whole.
    line: int
    image: Setting | None = None
    # The build argument a Dockerfile's FROM takes its image from (`FROM ${NAME}`): the
    # image is changed with `docker build --build-arg NAME=...`, not in the file.
    image_build_arg: str | None = None
    model: Setting | None = None
    # The words after `vllm serve` and an LLMConfig's engine_kwargs, as written; judged
    # into `engine` once the file's release says which vLLM's flags apply
    # (check.arguments.judge_arguments).
    serve_argv: list[Setting] | None = None
    engine_kwargs: dict[str, Setting] = Field(default_factory=dict)
    # vLLM engine arguments by their dest name (``tensor_parallel_size``), parsed.
    engine: dict[str, Setting] = Field(default_factory=dict)
    # Flags or engine keywords vLLM does not know, with a suggestion if one is close.
    unknown_flags: list[tuple[Setting, str | None]] = Field(default_factory=list)
    # Flags whose value vLLM's parser rejected: (flag setting, parser message).
    invalid_values: list[tuple[Setting, str]] = Field(default_factory=list)
    env: dict[str, Setting] = Field(default_factory=dict)
    # Lines of additional_config keys by dotted path, where the input shows them.
    additional_config_lines: dict[str, int] = Field(default_factory=dict)
    # Indices of /dev/davinciN nodes the container maps, with their lines.
    devices: list[Setting] = Field(default_factory=list)
    privileged: Setting | None = None
    # Kernel settings a container service changes: `sysctls`, `sysctl`, /proc/sys, governors.
    kernel_tuning: list[Setting] = Field(default_factory=list)
    # Line of the `vllm serve` command, for deployments that run vLLM's own HTTP server.
    http_server_line: int | None = None
    # Ray accelerator type (an SoC name) that an LLMConfig asks for.
    accelerator_type: Setting | None = None
    # Node kind the operator says the file runs on (`ray-serve-npu check --node-kind`).
    node_kind: str | None = None
    # The placement strategy of an LLMConfig's placement_group_config where it lets the
    # engine's bundles span nodes (PACK or SPREAD): its layout is not one node's.
    spans_nodes: Setting | None = None
    # Host paths and volumes the container mounts.
    mounts: list[Mount] = Field(default_factory=list)
    # LLMConfig values the checker could not read without running the recipe: why, and where.
    unread: list[Setting] = Field(default_factory=list)
    # `vllm serve` flags whose value the shell fills when the command runs (`--port $PORT`),
    # written as they are: the checker cannot judge the value against the flag's type.
    shell_values: list[Setting] = Field(default_factory=list)
    # Which of a file's configs this is, where one line builds many (a run of
    # vLLM-Ascend's CI that recipes/serve_model.py serves): findings name it.
    label: str | None = None

    def additional_config(self) -> dict[str, Any]:
        setting = self.engine.get("additional_config")
        return setting.value if setting and isinstance(setting.value, dict) else {}

    def value_at(self, path: str) -> Any:
        """Value at a setting path (:func:`split_path`), or :data:`MISSING`."""
        head, parts = split_path(path)
        if head == "env":
            name = ".".join(parts)
            return self.env[name].value if name in self.env else MISSING
        value: Any = (
            self.additional_config()
            if head == "additional_config"
            else {key: setting.value for key, setting in self.engine.items()}
        )
        for part in parts:
            if not isinstance(value, dict) or part not in value:
                return MISSING
            value = value[part]
        return value

    def line_of(self, path: str) -> int:
        """Line of a setting path (:func:`split_path`): the most specific line known, else
        the deployment's."""
        head, parts = split_path(path)
        if head == "env" and (name := ".".join(parts)) in self.env:
            return self.env[name].line
        if head == "engine" and parts[0] in self.engine:
            return self.engine[parts[0]].line
        if head == "additional_config":
            # The most specific line known: the key's own, else its parent's, else the flag's.
            for n in range(len(parts), 0, -1):
                key = ".".join(parts[:n])
                if key in self.additional_config_lines:
                    return self.additional_config_lines[key]
            if "additional_config" in self.engine:
                return self.engine["additional_config"].line
        return self.line


class ParsedFile(BaseModel):
    """A file's deployments, and its lines for the rules that read text."""

    path: str
    deployments: list[Deployment] = Field(default_factory=list)
    lines: list[str] = Field(default_factory=list)
    # Whether the page carries a warning admonition (Markdown pages only).
    has_warning: bool = False
    # The release whose rules judge the file, and whose vLLM's flags judged its arguments.
    release: str = ""
