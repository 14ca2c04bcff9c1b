"""Unit tests of the bench's soak (``nox -s bench -- --soak 30m``): its arguments, how a
minute sorts what its requests saw, which processes' memory it follows, and its summary.
No engine: the soak itself runs alone, outside CI (docs/testing.md)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from ray_serve_npu_tooling.bench.paths import main
from ray_serve_npu_tooling.bench.soak import _minute, parse_duration, serving_memory
from ray_serve_npu_tooling.bench.soak_figures import (
    Minute,
    Percentiles,
    SoakRun,
    SoakSettings,
    summary,
)
from ray_serve_npu_tooling.stream_client import StreamOutcome


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("1h", 3600)])
def test_a_duration_is_a_number_and_a_unit(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30", "0m", "1.5h", "30 minutes", "90s"])
def test_a_bad_duration_is_refused_with_the_forms(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--soak", text])
    assert exit_.value.code == 2
    assert (
        f"--soak: {text!r} is not a duration: write a whole number of minutes or hours (30m, 1h)"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--soak", "30m", "--profile"], "--soak: it is a run of its own"),
        (
            ["--soak", "30m", "--soak-concurrency", "0"],
            "--soak-concurrency: 0 clients load nothing",
        ),
    ],
)
def test_a_soak_refuses_what_it_would_ignore(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def _outcome(**fields: object) -> StreamOutcome:
    return StreamOutcome(**fields)  # type: ignore[arg-type]


def test_a_minute_counts_completed_failed_and_hung_apart() -> None:
    done = [
        _outcome(status=200, done=True, first_chunk_s=0.1 * n, total_s=1.0 + n) for n in range(1, 5)
    ]
    failed = _outcome(status=503, error="replica lost")
    broken = _outcome(status=200, error="the stream ended without data: [DONE]")
    hung = _outcome(status=200, timed_out=True, error="no end of stream in 120 s")
    minute = _minute(3, [*done, failed, broken, hung], {"ray::ProxyActor (pid 7)": 100.0})
    assert (minute.minute, minute.completed, minute.hung) == (3, 4, 1)
    assert minute.errors == {"replica lost": 1, "the stream ended without data: [DONE]": 1}
    assert minute.ttft.ms["p50"] == pytest.approx(250.0)
    assert minute.end_to_end.ms["p99"] == pytest.approx(4970.0)


@pytest.fixture
def titled_processes() -> Iterator[list[psutil.Process]]:
    """A proxy running a method, an idle Ray worker and a process of nobody's."""
    started = [
        subprocess.Popen(["bash", "-c", f"exec -a '{title}' sleep 60"])
        for title in ("ray::ProxyActor.receive_asgi_messages", "ray::IDLE", "sleeper")
    ]
    deadline = time.monotonic() + 10
    processes = [psutil.Process(p.pid) for p in started]
    while any(p.cmdline()[:1] in (["bash"], ["sleep"], []) for p in processes):
        assert time.monotonic() < deadline, "the titled processes did not start"
        time.sleep(0.05)
    yield processes
    for process in started:
        process.kill()
        process.wait()


def test_memory_is_read_for_the_serving_processes_only(
    titled_processes: list[psutil.Process],
) -> None:
    proxy, _, _ = titled_processes
    memory = serving_memory(titled_processes)
    # Named without the method it runs, so that each minute finds it under one name.
    assert list(memory) == [f"ray::ProxyActor (pid {proxy.pid})"]
    assert memory[f"ray::ProxyActor (pid {proxy.pid})"] > 0


def _minute_of(index: int, ttft_p50: float, rss: float, errors: int = 0) -> Minute:
    return Minute(
        minute=index,
        completed=100,
        errors={"HTTP 500": errors} if errors else {},
        hung=0,
        ttft=Percentiles(ms={"p50": ttft_p50, "p90": ttft_p50 * 2, "p99": ttft_p50 * 3}),
        end_to_end=Percentiles(ms={"p50": 1000.0, "p90": 1500.0, "p99": 2000.0}),
        rss_mib={"ray::ProxyActor (pid 7)": rss},
    )


def test_the_summary_compares_the_first_and_last_five_minutes_and_memory() -> None:
    minutes = [_minute_of(i, ttft_p50=10.0 * i, rss=200 + i, errors=i == 9) for i in range(1, 11)]
    run = SoakRun(
        settings=SoakSettings(duration_s=600),
        started_at="2026-12-04 23:00:00 UTC",
        command="nox -s bench -- --soak 10m",
        rss_mib_at_start={"ray::ProxyActor (pid 7)": 200.0},
        minutes=minutes,
    )
    text = summary(run)
    # Minutes 1-5: median p50 30, highest p99 150; 6-10: 80 and 300; one error in minute 9.
    assert "| first 5 (1-5) | 500 | 0 | 0 | 30.0 / 150.0 | 1000.0 / 2000.0 |" in text
    assert "| last 5 (6-10) | 500 | 1 | 0 | 80.0 / 300.0 | 1000.0 / 2000.0 |" in text
    assert "| `ray::ProxyActor (pid 7)` | 200.0 | 210.0 | +5.0 % |" in text
    assert "`nox -s bench -- --soak 10m`" in text


def test_the_committed_soaks_summary_is_its_json_summarized() -> None:
    """docs/_static/bench/soak/: the page includes soak.md, and reads soak.json."""
    committed = Path(__file__).resolve().parents[2] / "docs" / "_static" / "bench" / "soak"
    run = SoakRun.model_validate_json((committed / "soak.json").read_text())
    provenance, blank, rest = (committed / "soak.md").read_text().split("\n", 2)
    assert provenance.startswith("Fake-NPU tier, ") and blank == ""
    assert rest == summary(run)
    assert len(run.minutes) == run.settings.duration_s // 60


def test_a_window_where_nothing_completed_is_shown_not_a_crash() -> None:
    idle = Minute(
        minute=1,
        completed=0,
        errors={"HTTP 503": 40},
        hung=0,
        ttft=Percentiles(),
        end_to_end=Percentiles(),
        rss_mib={"ray::ProxyActor (pid 8)": 100.0},
    )
    run = SoakRun(
        settings=SoakSettings(duration_s=60),
        started_at="2026-12-04 23:00:00 UTC",
        command="nox -s bench -- --soak 1m",
        rss_mib_at_start={"ray::ProxyActor (pid 7)": 100.0},
        minutes=[idle],
    )
    text = summary(run)
    assert "| first 1 (1-1) | 0 | 40 | 0 | - | - |" in text
    # The proxy that was replaced, and its replacement.
    assert "| `ray::ProxyActor (pid 7)` | 100.0 | - | gone |" in text
    assert "| `ray::ProxyActor (pid 8)` | - | 100.0 | started during the run |" in text
