"""PNG plots of a sweep: each figure against concurrency, one line per other setting."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from .config import SweepError
from .results import PointResult

#: (title, y-axis label, figure of a point)
PANELS = (
    ("Output throughput", "tokens/s", lambda r: r.output_tokens_per_s),
    ("Time to first token, p50", "ms", lambda r: r.latency("ttft")),
    ("Time per output token, p50", "ms", lambda r: r.latency("tpot")),
    ("End-to-end latency, p50", "ms", lambda r: r.latency("e2el")),
)


def pyplot():  # noqa: ANN202 - matplotlib's module
    try:
        import matplotlib
    except ImportError as error:
        raise SweepError(
            "plots need matplotlib: pip install 'ray-serve-npu[bench]' (or matplotlib), "
            "or pass --no-plots"
        ) from error
    matplotlib.use("Agg")  # files only; no display on a server
    import matplotlib.pyplot as plt

    return plt


def plot_sweep(results: Sequence[PointResult], path: Path, title: str) -> Path:
    """Four panels in one small PNG; points without figures are left out."""
    plt = pyplot()
    series: dict[str, list[PointResult]] = defaultdict(list)
    for result in results:
        if result.completed:
            series[result.point.label()].append(result)
    figure, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=80)
    for axis, (panel_title, unit, value) in zip(axes.flat, PANELS, strict=True):
        for label, points in series.items():
            points = sorted(points, key=lambda r: r.point.concurrency)
            axis.plot(
                [r.point.concurrency for r in points],
                [value(r) for r in points],
                marker="o",
                label=label,
            )
        axis.set_title(panel_title)
        axis.set_xlabel("concurrency")
        axis.set_ylabel(unit)
        axis.set_xscale("log", base=2)
        levels = sorted({r.point.concurrency for r in results})
        axis.set_xticks(levels, [str(level) for level in levels])
    axes.flat[0].legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
