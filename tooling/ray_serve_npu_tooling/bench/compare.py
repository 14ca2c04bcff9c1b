"""Read the fake tier's rounds: medians, paired ratios of the two kinds, tables and a plot."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

DIRECT = "direct"
SERVE_NPU = "serve-npu"
SERVE_GPU = "serve-gpu"
TARGETS = (DIRECT, SERVE_NPU, SERVE_GPU)
#: The levers' reference arm: the recipe's app as it ships.
DEFAULT = "default"


class Comparison(BaseModel):
    """The figures of one target at one concurrency: each round's, and their median."""

    target: str
    concurrency: int
    ttft_p50_ms: list[float]
    output_tokens_per_s: list[float]

    @property
    def ttft(self) -> float:
        return statistics.median(self.ttft_p50_ms)

    @property
    def throughput(self) -> float:
        return statistics.median(self.output_tokens_per_s)


def straddles_one(ratios: Sequence[float]) -> bool:
    return min(ratios) <= 1 <= max(ratios)


def ratio_cell(ratios: Sequence[float]) -> str:
    """The median ratio and, in brackets, the range of the rounds' ratios."""
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def ratio_tables(comparisons: Sequence[Comparison], target: str = SERVE_NPU) -> str:
    """Ray Serve LLM (``target``: the npu kind's app, or a lever run's arm) against direct
    vLLM, and (where measured) the npu kind against the gpu kind, round by round, in
    Markdown."""
    by = {(c.target, c.concurrency): c for c in comparisons}
    levels = sorted({c.concurrency for c in comparisons})
    label = "npu kind" if target == SERVE_NPU else target
    lines = [
        f"Ray Serve LLM ({label}) / direct vLLM, round by round: median (range over the rounds):",
        "",
        "| concurrency | TTFT p50 direct (ms) | TTFT p50 Serve (ms) | TTFT added (ms) "
        "| TTFT ratio | output tok/s direct | output tok/s Serve | throughput ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in levels:
        direct, served = by[DIRECT, level], by[target, level]
        paired = KindComparison.of(served, direct)
        added = paired.ttft_added_ms
        lines.append(
            f"| {level} | {direct.ttft:.1f} | {served.ttft:.1f} "
            f"| {statistics.median(added):.1f} ({min(added):.1f} to {max(added):.1f}) "
            f"| {ratio_cell(paired.ttft_ratios)} | {direct.throughput:.1f} "
            f"| {served.throughput:.1f} | {ratio_cell(paired.throughput_ratios)} |"
        )
    if not any(c.target == SERVE_GPU for c in comparisons):
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "npu kind / gpu kind, round by round: median ratio (range over the rounds):",
        "",
        "| concurrency | TTFT ratio | throughput ratio | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for level in levels:
        kinds = KindComparison.of(by[SERVE_NPU, level], by[SERVE_GPU, level])
        verdict = "within noise" if kinds.within_noise else "outside noise"
        lines.append(
            f"| {level} | {ratio_cell(kinds.ttft_ratios)} "
            f"| {ratio_cell(kinds.throughput_ratios)} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


#: The request path's targets: beside an NPU-paced engine, Ray Serve LLM keeps this
#: share of direct vLLM's output throughput at every concurrency, and adds at most this
#: much to its time to first token at the levels below (higher, direct vLLM's own time
#: to first token runs to seconds, and its spread over the rounds dwarfs the target);
#: with the engine unpaced, it keeps this share at concurrency 32.
PACED_THROUGHPUT_TARGET = 0.97
PACED_TTFT_ADDED_TARGET_MS = 10.0
PACED_TTFT_TARGET_CONCURRENCY = (1, 8)
UNPACED_THROUGHPUT_TARGET = 0.8
UNPACED_TARGET_CONCURRENCY = 32


class Targets(NamedTuple):
    """What the request path must keep at one concurrency: a floor on the throughput
    ratio to direct vLLM and a ceiling on the TTFT it adds (ms); None where none applies."""

    throughput_floor: float | None
    ttft_added_ceiling_ms: float | None


def targets_at(level: int, *, paced: bool) -> Targets:
    """The targets at concurrency ``level`` beside an NPU-paced (``paced``) or unpaced engine."""
    if paced:
        ceiling = PACED_TTFT_ADDED_TARGET_MS if level in PACED_TTFT_TARGET_CONCURRENCY else None
        return Targets(PACED_THROUGHPUT_TARGET, ceiling)
    floor = UNPACED_THROUGHPUT_TARGET if level == UNPACED_TARGET_CONCURRENCY else None
    return Targets(floor, None)


def targets(comparisons: Sequence[Comparison], *, paced: bool, target: str = SERVE_NPU) -> str:
    """Whether Ray Serve LLM (``target``, as in :func:`ratio_tables`) met the request
    path's targets, from the rounds' medians."""
    by = {(c.target, c.concurrency): c for c in comparisons}
    lines = []
    for level in sorted({c.concurrency for c in comparisons}):
        floor, ceiling = targets_at(level, paced=paced)
        paired = KindComparison.of(by[target, level], by[DIRECT, level])
        checks = []
        if floor is not None:
            throughput = statistics.median(paired.throughput_ratios)
            checks.append((f"throughput ratio {throughput:.2f} >= {floor}", throughput >= floor))
        if ceiling is not None:
            added = statistics.median(paired.ttft_added_ms)
            checks.append((f"TTFT added {added:.1f} ms <= {ceiling:g} ms", added <= ceiling))
        for what, met in checks:
            lines.append(f"- concurrency {level}: {what}: {'met' if met else 'not met'}")
    if not lines:
        return ""
    return "Targets, from the medians of the rounds:\n\n" + "\n".join(lines) + "\n"


class KindComparison(BaseModel):
    """One target against another (the npu kind against the gpu kind, Serve against
    direct vLLM) at one concurrency, round by round.

    Both kinds ran back to back in each round, so each round's ratio cancels the
    machine's slow spells; the kinds are within noise when the rounds' ratios fall
    on both sides of 1 (with five rounds, all on one side by chance is a 1 in 16 event).
    """

    ttft_ratios: list[float]
    throughput_ratios: list[float]
    #: The first target's TTFT p50 less the second's, in ms.
    ttft_added_ms: list[float]

    @classmethod
    def of(cls, npu: Comparison, gpu: Comparison) -> KindComparison:
        ttfts = list(zip(npu.ttft_p50_ms, gpu.ttft_p50_ms, strict=True))
        return cls(
            ttft_ratios=[n / g for n, g in ttfts],
            throughput_ratios=[
                n / g for n, g in zip(npu.output_tokens_per_s, gpu.output_tokens_per_s, strict=True)
            ],
            ttft_added_ms=[n - g for n, g in ttfts],
        )

    @property
    def within_noise(self) -> bool:
        return straddles_one(self.ttft_ratios) and straddles_one(self.throughput_ratios)


def plot_comparison(comparisons: Sequence[Comparison], path: Path) -> Path:
    """TTFT p50 and output throughput by concurrency, a line per target; bars span the rounds."""
    # Imported here: the reader's plotting module lives in recipes/, which the docs
    # build (it reads the comparisons, not the plots) does not put on its path.
    from bench.plots import pyplot

    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=80)
    panels = (
        ("TTFT p50 (ms)", "ttft_p50_ms"),
        ("Output throughput (tokens/s)", "output_tokens_per_s"),
    )
    for axis, (title, field) in zip(axes, panels, strict=True):
        for target in TARGETS:
            mine = sorted(
                (c for c in comparisons if c.target == target), key=lambda c: c.concurrency
            )
            values = [getattr(c, field) for c in mine]
            middles = [statistics.median(v) for v in values]
            axis.errorbar(
                [c.concurrency for c in mine],
                middles,
                yerr=[[m - min(v) for m, v in zip(middles, values, strict=True)],
                      [max(v) - m for m, v in zip(middles, values, strict=True)]],
                marker="o", capsize=3, label=target,
            )  # fmt: skip
        axis.set_title(title)
        axis.set_xlabel("concurrency")
        axis.set_xscale("log", base=2)
        axis.set_xticks(
            [c.concurrency for c in comparisons], [str(c.concurrency) for c in comparisons]
        )
    axes[0].legend()
    figure.suptitle("Fake-NPU tier: vLLM CPU build, tiny random model (not NPU figures)")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
