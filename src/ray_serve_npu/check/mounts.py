"""Mounts as Compose's ``volumes:`` and ``docker run -v`` or ``--mount`` write them."""

from __future__ import annotations

from typing import Any

from ray_serve_npu.check.model import Mount, truthy

# Options of the short syntax's last field (docs.docker.com, "Bind mounts" and the Compose
# specification's `volumes` short syntax).
_MODES = frozenset(
    {"ro", "rw", "z", "Z", "nocopy", "consistent", "cached", "delegated"}
    | {"shared", "slave", "private", "rshared", "rslave", "rprivate"}
)


def _fields(spec: str) -> list[str]:
    """``spec`` split on colons, except inside a ``${NAME:-default}`` interpolation."""
    fields, current, depth = [], "", 0
    index = 0
    while index < len(spec):
        if spec.startswith("${", index):
            depth += 1
            current += "${"
            index += 2
            continue
        char = spec[index]
        if char == "}" and depth:
            depth -= 1
        if char == ":" and not depth:
            fields.append(current)
            current = ""
        else:
            current += char
        index += 1
    return [*fields, current]


def _is_mode(field: str) -> bool:
    return all(option in _MODES for option in field.split(","))


def short_syntax(spec: str, line: int) -> Mount | None:
    """``[SOURCE:]TARGET[:MODE]``, as in ``-v /host:/container:ro``."""
    fields = _fields(spec)
    mode = fields.pop() if len(fields) > 1 and _is_mode(fields[-1]) else ""
    if len(fields) > 2:
        return None
    source, target = fields if len(fields) == 2 else ("", fields[0])
    return Mount(source=source, target=target, read_only="ro" in mode.split(","), line=line)


def compose_volume(item: Any, line: int) -> Mount | None:
    """One item of a Compose service's ``volumes``: a short-syntax string or a mapping."""
    if isinstance(item, str):
        return short_syntax(item, line)
    if isinstance(item, dict) and item.get("target"):
        return Mount(
            source=str(item.get("source") or ""),
            target=str(item["target"]),
            read_only=truthy(item.get("read_only", False)),
            line=line,
        )
    return None


def docker_mount(spec: str, line: int) -> Mount | None:
    """``docker run --mount type=bind,source=/host,target=/container,readonly``."""
    options: dict[str, str] = {}
    for option in spec.split(","):
        key, eq, value = option.partition("=")
        options[key] = value if eq else "true"
    target = options.get("target") or options.get("destination") or options.get("dst")
    if not target:
        return None
    return Mount(
        source=options.get("source") or options.get("src") or "",
        target=target,
        read_only=truthy(options.get("readonly", options.get("ro", "false"))),
        line=line,
    )
