"""What a committed run (a lever run, or the paths' comparison) says, read from its JSON:
one reading per arm and concurrency.

The docs extension ``bench_readings`` (docs/_ext) writes these readings on the pages as
sentences, in each edition's language, so a page's reading of a run is the run's own: a
new run changes the words with the figures, and no test holds a page's wording.

Each arm is read against a reference arm that ran in the same rounds: Ray's defaults
(each lever against them) or direct vLLM (each arm against it, with the request path's
targets). A figure leans one way only when every round does: with five rounds, all on
one side by chance is a 1 in 16 event.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from .compare import (
    DEFAULT,
    DIRECT,
    Comparison,
    KindComparison,
    targets_at,
)


class Lean(Enum):
    """Where every round's figure fell against the reference, or neither."""

    HIGHER = "higher"
    LOWER = "lower"
    NOISE = "within noise"


@dataclass(frozen=True)
class Figure:
    """One figure of an arm against the reference, round by round."""

    #: ``throughput`` (output tokens per second) or ``ttft`` (time to first token, p50).
    name: str
    #: ``ratio`` (the arm's over the reference's) or ``added`` (the arm's less the
    #: reference's, in ms).
    kind: str
    values: tuple[float, ...]
    #: The request path's target for this figure, where one applies: a floor for the
    #: throughput ratio, a ceiling for the time added.
    target: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def lean(self) -> Lean:
        neutral = 1.0 if self.kind == "ratio" else 0.0
        if min(self.values) > neutral:
            return Lean.HIGHER
        if max(self.values) < neutral:
            return Lean.LOWER
        return Lean.NOISE

    def meets(self, value: float) -> bool:
        """Whether ``value`` meets the target (a floor for throughput, a ceiling else)."""
        assert self.target is not None
        return value >= self.target if self.name == "throughput" else value <= self.target

    @property
    def rounds_meeting(self) -> int:
        return sum(self.meets(value) for value in self.values)


@dataclass(frozen=True)
class Reading:
    """One arm at one concurrency, against the reference arm of the same rounds."""

    arm: str
    reference: str
    concurrency: int
    figures: tuple[Figure, ...]

    @property
    def rounds(self) -> int:
        return len(self.figures[0].values)


def readings(comparisons: Sequence[Comparison], reference: str, *, paced: bool) -> list[Reading]:
    """Every arm but ``reference`` (and, against the defaults, direct vLLM) at each
    concurrency, in the run's order of arms; against direct vLLM, with the targets of
    the engine's regime (``paced``)."""
    by = {(c.target, c.concurrency): c for c in comparisons}
    if not any(target == reference for target, _ in by):
        raise ValueError(f"the run has no {reference!r} arm to read the others against")
    levels = sorted({c.concurrency for c in comparisons})
    skip = {reference} | ({DIRECT} if reference == DEFAULT else set())
    arms = [arm for arm in dict.fromkeys(c.target for c in comparisons) if arm not in skip]
    found = []
    for arm in arms:
        for level in levels:
            paired = KindComparison.of(by[arm, level], by[reference, level])
            if reference == DIRECT:
                figures = _against_direct(paired, level, paced=paced)
            else:
                figures = (
                    Figure("throughput", "ratio", tuple(paired.throughput_ratios)),
                    Figure("ttft", "ratio", tuple(paired.ttft_ratios)),
                )
            found.append(Reading(arm, reference, level, figures))
    return found


def _against_direct(paired: KindComparison, level: int, *, paced: bool) -> tuple[Figure, ...]:
    """Throughput as a share of direct vLLM's, and the time to first token added to it,
    each with the target that applies at this concurrency in this regime."""
    floor, ceiling = targets_at(level, paced=paced)
    return (
        Figure("throughput", "ratio", tuple(paired.throughput_ratios), floor),
        Figure("ttft", "added", tuple(paired.ttft_added_ms), ceiling),
    )
