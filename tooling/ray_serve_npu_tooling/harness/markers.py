"""The invisible test markers: a MyST comment ``% test: ...`` on the line right before a block."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from .problems import Location, PageProblem

#: A line that is meant as a marker, well-formed or not.
MARKER_LINE = re.compile(r"^%\s*test\s*:(?P<rest>.*)$")
_KIND_AND_REASON = re.compile(r'^\s*(?P<kind>[\w-]+)\s*(?:"(?P<reason>[^"]*)")?\s*$')


class MarkerKind(enum.Enum):
    CLUSTER = "cluster"
    SERVER = "server"
    OUTPUT = "output"
    SKIP = "skip"
    SKIP_FAKE = "skip-fake"
    #: For the Ascend node's host, where the Docker engine is: the suite never runs it.
    #: The fake tier has no Docker engine, and the Ascend runners run the suite inside
    #: the container; the ascend-recipes workflow takes the host's steps itself.
    HOST = "host"


#: Kinds that must say why.
_NEEDS_REASON = {MarkerKind.SKIP, MarkerKind.SKIP_FAKE, MarkerKind.HOST}
_USAGE = (
    '`% test: cluster`, `% test: server`, `% test: output`, `% test: skip "reason"`, '
    '`% test: skip-fake "reason"` or `% test: host "reason"`'
)


def skipped_on(kind: MarkerKind | None, *, fake: bool) -> bool:
    """Whether a block with this marker is skipped, on the fake tier or on Ascend runners
    (whose suite runs inside the container, with no Docker engine)."""
    return kind in (MarkerKind.SKIP, MarkerKind.HOST) or (kind is MarkerKind.SKIP_FAKE and fake)


@dataclass(frozen=True)
class Marker:
    kind: MarkerKind
    #: Why the block does not run (skip kinds only).
    reason: str
    where: Location


def parse_marker(line: str, where: Location) -> Marker | None:
    """The marker on ``line``, None if the line is no marker; raises on a malformed one."""
    match = MARKER_LINE.match(line.strip())
    if match is None:
        return None
    parts = _KIND_AND_REASON.match(match["rest"])
    kind = None
    if parts is not None:
        kind = next((k for k in MarkerKind if k.value == parts["kind"]), None)
    if parts is None or kind is None:
        raise PageProblem(where, f"unknown test marker {line.strip()!r}", f"write one of {_USAGE}")
    reason = (parts["reason"] or "").strip()
    if kind in _NEEDS_REASON and not reason:
        raise PageProblem(
            where,
            f"`% test: {kind.value}` without a reason",
            f'say why the block cannot run: `% test: {kind.value} "reason"`',
        )
    if kind not in _NEEDS_REASON and parts["reason"] is not None:
        raise PageProblem(
            where, f"`% test: {kind.value}` takes no reason", f"write `% test: {kind.value}`"
        )
    return Marker(kind, reason, where)
