"""Read the fake tier's rounds: medians, paired ratios of the two kinds, tables and a plot."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from bench.plots import pyplot
from pydantic import BaseModel

DIRECT = "direct"
SERVE_NPU = "serve-npu"
SERVE_GPU = "serve-gpu"
TARGETS = (DIRECT, SERVE_NPU, SERVE_GPU)


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


def ratio_tables(comparisons: Sequence[Comparison]) -> str:
    """Ray Serve LLM against direct vLLM, and the npu kind against the gpu kind, in Markdown."""
    by = {(c.target, c.concurrency): c for c in comparisons}
    levels = sorted({c.concurrency for c in comparisons})
    lines = [
        "Ray Serve LLM (npu kind) / direct vLLM, medians of the rounds:",
        "",
        "| concurrency | TTFT p50 direct (ms) | TTFT p50 Serve (ms) | TTFT ratio "
        "| output tok/s direct | output tok/s Serve | throughput ratio |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in levels:
        direct, serve = by[DIRECT, level], by[SERVE_NPU, level]
        lines.append(
            f"| {level} | {direct.ttft:.1f} | {serve.ttft:.1f} | {serve.ttft / direct.ttft:.2f} "
            f"| {direct.throughput:.1f} | {serve.throughput:.1f} "
            f"| {serve.throughput / direct.throughput:.2f} |"
        )
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


class KindComparison(BaseModel):
    """The npu kind against the gpu kind at one concurrency, round by round.

    Both kinds ran back to back in each round, so each round's ratio cancels the
    machine's slow spells; the kinds are within noise when the rounds' ratios fall
    on both sides of 1 (with five rounds, all on one side by chance is a 1 in 16 event).
    """

    ttft_ratios: list[float]
    throughput_ratios: list[float]

    @classmethod
    def of(cls, npu: Comparison, gpu: Comparison) -> KindComparison:
        return cls(
            ttft_ratios=[n / g for n, g in zip(npu.ttft_p50_ms, gpu.ttft_p50_ms, strict=True)],
            throughput_ratios=[
                n / g for n, g in zip(npu.output_tokens_per_s, gpu.output_tokens_per_s, strict=True)
            ],
        )

    @property
    def within_noise(self) -> bool:
        return straddles_one(self.ttft_ratios) and straddles_one(self.throughput_ratios)


def plot_comparison(comparisons: Sequence[Comparison], path: Path) -> Path:
    """TTFT p50 and output throughput by concurrency, a line per target; bars span the rounds."""
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
