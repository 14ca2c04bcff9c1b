"""The figures of a soak (:mod:`.soak`): what each minute recorded, the run as
``soak.json`` keeps it, its summary and its plot. Pydantic and the standard library
only, so that the docs build reads a committed run without the soak's clients."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

#: The percentiles each minute records.
PERCENTILES = (50, 90, 99)
#: Minutes the summary compares at each end of the run.
SUMMARY_MINUTES = 5


class SoakSettings(BaseModel):
    duration_s: int
    concurrency: int = 32
    warmup_s: int = 60
    max_tokens: int = 64
    #: A request that takes longer counts as hung.
    client_timeout_s: float = 120


class Percentiles(BaseModel):
    """Milliseconds at each of :data:`PERCENTILES`; empty where no request ended."""

    ms: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Percentiles:
        if not seconds:
            return cls()
        ms = [second * 1000 for second in seconds]
        # "inclusive": numpy's default, linear between the closest ranks.
        cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
        values = [cuts[p - 1] for p in PERCENTILES]
        return cls(
            ms={f"p{p}": round(float(v), 1) for p, v in zip(PERCENTILES, values, strict=True)}
        )


class Minute(BaseModel):
    """What the requests that ended in one minute of the soak saw."""

    minute: int
    completed: int
    #: Each error as the client saw it, with how many requests ended in it; hung
    #: requests are counted apart.
    errors: dict[str, int]
    hung: int
    ttft: Percentiles
    end_to_end: Percentiles
    #: Resident memory in MiB at the minute's end, by ``title (pid N)``.
    rss_mib: dict[str, float]


class SoakRun(BaseModel):
    settings: SoakSettings
    started_at: str
    command: str
    #: Resident memory in MiB when the counted run began, after the warm-up.
    rss_mib_at_start: dict[str, float]
    minutes: list[Minute]

    def window(self, minutes: Sequence[Minute]) -> dict[str, Any]:
        return {
            "minutes": [m.minute for m in minutes],
            "completed": sum(m.completed for m in minutes),
            "errors": sum(sum(m.errors.values()) for m in minutes),
            "hung": sum(m.hung for m in minutes),
        }

    def memory_growth(self) -> dict[str, float | None]:
        """Each process's resident memory at the last minute against the start, in percent;
        None for a process that was gone by then."""
        end = self.minutes[-1].rss_mib
        return {
            name: round((end[name] / mib - 1) * 100, 1) if name in end else None
            for name, mib in self.rss_mib_at_start.items()
        }


def _latency(window: Sequence[Minute], key: str) -> str:
    """``p50 / p99`` of a window in ms: the median of its minutes' p50s and the highest of
    their p99s; ``-`` where no request of the window completed."""
    measured = [getattr(m, key).ms for m in window if getattr(m, key).ms]
    if not measured:
        return "-"
    p50 = statistics.median(ms["p50"] for ms in measured)
    return f"{p50:.1f} / {max(ms['p99'] for ms in measured):.1f}"


def summary(run: SoakRun) -> str:
    """The run's figures as Markdown: the first and last minutes, and memory per process."""
    first, last = run.minutes[:SUMMARY_MINUTES], run.minutes[-SUMMARY_MINUTES:]
    lines = [
        f"Soak of {run.settings.duration_s // 60} min at concurrency {run.settings.concurrency}, "
        f"from {run.started_at}, after a {run.settings.warmup_s} s warm-up: `{run.command}`",
        "",
        # Each minute keeps its own percentiles: a window's p50 is the median of its
        # minutes', its p99 the highest minute's.
        "| Minutes | Completed | Failed | Hung | TTFT p50 / p99 (ms) | End-to-end p50 / p99 (ms) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, window in (("first", first), ("last", last)):
        counts = run.window(window)
        lines.append(
            f"| {name} {len(window)} ({counts['minutes'][0]}-{counts['minutes'][-1]}) "
            f"| {counts['completed']} | {counts['errors']} | {counts['hung']} "
            f"| {_latency(window, 'ttft')} | {_latency(window, 'end_to_end')} |"
        )
    lines += [
        "",
        "| Process | RSS at start (MiB) | RSS at end (MiB) | Growth |",
        "| --- | --- | --- | --- |",
    ]
    end = run.minutes[-1].rss_mib
    for name, growth in run.memory_growth().items():
        after, shown = (
            (f"{end[name]:.1f}", f"{growth:+.1f} %") if growth is not None else ("-", "gone")
        )
        lines.append(f"| `{name}` | {run.rss_mib_at_start[name]:.1f} | {after} | {shown} |")
    # A process that started during the run, such as a replica's replacement.
    for name in sorted(end.keys() - run.rss_mib_at_start.keys()):
        lines.append(f"| `{name}` | - | {end[name]:.1f} | started during the run |")
    return "\n".join(lines) + "\n"


def plot(run: SoakRun, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [m.minute for m in run.minutes]
    figure, (latency, memory) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for key, label in (("ttft", "TTFT"), ("end_to_end", "end-to-end")):
        for p in ("p50", "p99"):
            latency.plot(
                minutes, [getattr(m, key).ms.get(p) for m in run.minutes], label=f"{label} {p}"
            )
    latency.set_ylabel("ms")
    latency.legend()
    latency.set_title(f"Soak at concurrency {run.settings.concurrency} (fake-NPU tier, CPU engine)")
    for name in run.rss_mib_at_start:
        memory.plot(minutes, [m.rss_mib.get(name) for m in run.minutes], label=name[:40])
    memory.set_ylabel("RSS (MiB)")
    memory.set_xlabel("minute")
    memory.legend(fontsize="x-small")
    figure.tight_layout()
    figure.savefig(path)
