"""Where Ray Serve LLM's request path spends its CPU: py-spy samples of its processes under load.

While one load point runs against the recipe's app on the fake-NPU tier, with the tiny
engine unpaced, py-spy samples each process of the request path: Serve's HTTP proxy,
the OpenAI ingress replica and the ``LLMServer`` replica. The engine core is a process
of its own, which direct vLLM has too; it is not sampled. The kernel says how much CPU
each process used while sampled; the samples that hold the GIL say on what Python code.
"""

from __future__ import annotations

import colorsys
import hashlib
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import psutil
from bench.config import SweepConfig
from bench.plots import pyplot
from bench.results import PointResult
from bench.runner import run_point
from pydantic import BaseModel, computed_field

from .capacity import PROXY_TITLE, REPLICA_TITLE
from .processes import process_title

#: Samples per second and process (py-spy's default).
RATE_HZ = 100
#: Frames the table names per process.
TOP_FRAMES = 8


class ProfileError(RuntimeError):
    """The profile could not be taken as asked; the message says why and what to change."""


def request_path_processes(processes: Iterable[psutil.Process], app: str) -> dict[str, int]:
    """The pids of the request path of Serve app ``app`` among ``processes`` (a cluster's),
    by role: ``ProxyActor`` and each of the app's deployments."""
    roles: dict[str, int] = {}
    for process in processes:
        title = process_title(process) or ""
        if title.startswith(PROXY_TITLE):
            roles["ProxyActor"] = process.pid
        elif title.startswith(f"{REPLICA_TITLE}{app}:"):
            roles[title.removeprefix(f"{REPLICA_TITLE}{app}:")] = process.pid
    if "ProxyActor" not in roles or len(roles) < 2:
        raise ProfileError(
            f"no Serve proxy and replica of app {app!r} among the cluster's processes "
            f"(found {sorted(roles) or 'none'}): deploy the app before profiling it"
        )
    return roles


def py_spy_argv(pid: int, duration_s: int, output: Path) -> list[str]:
    """py-spy's command that samples ``pid``'s Python stacks into collapsed stacks.

    Without pausing the process (``--nonblocking``), and only the samples whose
    thread holds the GIL (``--gil``): the Python work, which is where these processes'
    CPU goes but for C code that runs without the GIL (some of Ray's C++ core). In
    trials here, without ``--gil`` py-spy counted a thread busy whenever the OS had it
    runnable, so on two busy cores the proxy's samples came to about four times the
    CPU the kernel counted; ``--native`` must pause the process for each sample, which
    cut the Serve processes' CPU time, and it counted waits in ``epoll_wait`` as work.
    """
    return [
        str(Path(sys.executable).with_name("py-spy")),
        "record",
        "--pid", str(pid),
        "--duration", str(duration_s),
        "--rate", str(RATE_HZ),
        "--format", "raw",
        "--nonblocking",
        "--gil",
        "--output", str(output),
    ]  # fmt: skip


def read_collapsed(text: str) -> Counter[str]:
    """Collapsed stacks (``outer;...;inner COUNT`` a line) as stack -> samples."""
    stacks: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def function_of(frame: str) -> str:
    """``name (path/file.py)`` of a py-spy frame ``name (path/file.py:LINE)``: lines merged."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rstrip(')').rpartition(':')[0] or where.rstrip(')')})"


def package_of(frame: str) -> str:
    """The top-level package or module of a frame's file: ``ray``, ``asyncio``, ``uvicorn``."""
    where = frame.partition(" (")[2].rstrip(")").rpartition(":")[0]
    top = where.split("/")[0]
    return top.removesuffix(".py") or "?"


class ProcessProfile(BaseModel):
    """What py-spy saw of one process of the request path."""

    role: str
    pid: int
    #: The process's user and system CPU seconds from the kernel, over the wall time
    #: from py-spy's start to its end (its attaching included). py-spy's own counts
    #: can't give the CPU: they leave out C code that runs without the GIL.
    cpu_s: float
    wall_s: float
    #: How long py-spy sampled, at ``rate_hz``.
    sampled_s: float
    rate_hz: int
    samples: int
    #: Samples whose innermost frame is in each package.
    self_by_package: dict[str, int]
    #: The functions with the most samples as the innermost frame, most first.
    top_self: list[tuple[str, int]]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cores(self) -> float:
        """Cores the process kept busy while py-spy ran."""
        return self.cpu_s / self.wall_s if self.wall_s else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gil_share(self) -> float:
        """The share of the sampled time in which one of its threads held the GIL."""
        return self.samples / (self.rate_hz * self.sampled_s) if self.sampled_s else 0.0

    @classmethod
    def of(
        cls,
        role: str,
        pid: int,
        stacks: Counter[str],
        *,
        cpu_s: float,
        wall_s: float,
        sampled_s: float,
    ) -> ProcessProfile:
        by_package: Counter[str] = Counter()
        by_function: Counter[str] = Counter()
        for stack, count in stacks.items():
            leaf = stack.rsplit(";", 1)[-1]
            by_package[package_of(leaf)] += count
            by_function[function_of(leaf)] += count
        return cls(
            role=role,
            pid=pid,
            cpu_s=cpu_s,
            wall_s=wall_s,
            sampled_s=sampled_s,
            rate_hz=RATE_HZ,
            samples=sum(stacks.values()),
            self_by_package=dict(by_package.most_common()),
            top_self=by_function.most_common(TOP_FRAMES),
        )


class ServePathProfile(BaseModel):
    """A profile of the request path: the load it ran under and each process's samples."""

    app: str
    concurrency: int
    #: The whole load point's output throughput; the samples cover part of the point.
    output_tokens_per_s: float
    processes: list[ProcessProfile]

    def markdown(self) -> str:
        return (
            f"## Where the request path's CPU goes: {self.app}, unpaced, c={self.concurrency}, "
            f"{self.output_tokens_per_s:.0f} output tok/s\n\n{profile_table(self.processes)}"
        )


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def profile_table(profiles: Sequence[ProcessProfile]) -> str:
    """Per process: cores busy, the packages its CPU went to, and its busiest functions."""
    lines = []
    for profile in profiles:
        packages = ", ".join(
            f"{name} {_share(count, profile.samples)}"
            for name, count in list(profile.self_by_package.items())[:6]
        )
        lines += [
            f"{profile.role}: {profile.cores:.2f} cores of CPU over {profile.wall_s:.1f} s; "
            f"{profile.samples} samples holding the GIL in {profile.sampled_s:.0f} s at "
            f"{profile.rate_hz} Hz ({profile.gil_share:.0%} of the ticks)",
            f"  innermost frame's package: {packages}",
            *(
                f"  {_share(count, profile.samples):>5}  {function}"
                for function, count in profile.top_self
            ),
            "",
        ]
    return "\n".join(lines)


def _color(package: str) -> tuple[float, float, float]:
    """A warm color per package, the same in every run."""
    hue = int(hashlib.sha256(package.encode()).hexdigest()[:4], 16) / 0xFFFF
    return colorsys.hls_to_rgb(0.02 + 0.12 * hue, 0.6, 0.8)


def plot_flame_graph(stacks: Counter[str], path: Path, title: str, max_depth: int = 48) -> Path:
    """A flame graph of collapsed stacks: the root at the bottom, widths by samples."""
    total = sum(stacks.values())
    tree: dict[str, tuple[int, dict]] = {}  # name -> (samples, children)

    def add(level: dict, frames: list[str], count: int) -> None:
        if not frames:
            return
        samples, children = level.get(frames[0], (0, {}))
        level[frames[0]] = (samples + count, children)
        add(children, frames[1:], count)

    for stack, count in stacks.items():
        add(tree, stack.split(";")[:max_depth], count)
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(14, 9), dpi=80)

    def draw(level: dict, x: float, depth: int) -> None:
        for name, (samples, children) in sorted(level.items()):
            width = samples / total
            axis.add_patch(
                plt.Rectangle((x, depth), width, 0.95, color=_color(package_of(name)), linewidth=0)
            )
            if width > 0.06:
                axis.text(x + 0.002, depth + 0.45, function_of(name)[: int(width * 160)],
                          fontsize=7, va="center", clip_on=True)  # fmt: skip
            draw(children, x, depth + 1)
            x += width

    draw(tree, 0.0, 0)
    depth = max((len(stack.split(";")) for stack in stacks), default=1)
    axis.set_xlim(0, 1)
    axis.set_ylim(0, min(depth, max_depth))
    axis.set_xlabel("share of the process's samples")
    axis.set_ylabel("stack depth")
    axis.set_title(title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def profile_request_path(
    config: SweepConfig,
    pids: dict[str, int],
    duration_s: int,
    out: Path,
    settle_s: float = 3.0,
) -> tuple[PointResult, list[ProcessProfile]]:
    """Run ``config``'s one load point; ``settle_s`` into it, sample ``pids`` for
    ``duration_s``. Raises :class:`ProfileError` if the load ended before the samples did."""
    out.mkdir(parents=True, exist_ok=True)
    point = config.points({})[0]
    outcome: list[PointResult | BaseException] = []

    def run_load() -> None:
        try:
            outcome.append(run_point(config, point, out / "point"))
        except BaseException as error:  # noqa: BLE001 - reported below, with its cause
            outcome.append(error)

    load = threading.Thread(target=run_load, daemon=True)
    load.start()
    time.sleep(settle_s)
    cpu_before, started = _cpu_seconds(pids), time.monotonic()
    recorders = {
        role: subprocess.Popen(
            py_spy_argv(pid, duration_s, stacks_file(out, role)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for role, pid in pids.items()
    }
    failures = {}
    for role, recorder in recorders.items():
        try:
            _, stderr = recorder.communicate(timeout=duration_s + 60)
        except subprocess.TimeoutExpired:
            recorder.kill()
            _, stderr = recorder.communicate()
            failures[role] = f"py-spy did not end within {duration_s + 60} s"
            continue
        if recorder.returncode:
            failures[role] = stderr.decode(errors="replace").strip()[-500:]
    cpu_after, wall_s = _cpu_seconds(pids), time.monotonic() - started
    still_loading = load.is_alive()
    load.join()
    (result,) = outcome
    if isinstance(result, BaseException):
        raise ProfileError(f"the load point failed: {type(result).__name__}: {result}")
    if result.error:
        raise ProfileError(f"the load point failed: {result.error}")
    if failures:
        raise ProfileError(f"py-spy could not sample {failures}")
    if not still_loading:
        raise ProfileError(
            f"the load point ended before {settle_s + duration_s:.0f} s of it were sampled: "
            "raise its requests (prompts per client) or shorten the profile"
        )
    profiles = [
        ProcessProfile.of(
            role,
            pid,
            read_collapsed(stacks_file(out, role).read_text()),
            cpu_s=cpu_after[role] - cpu_before[role],
            wall_s=wall_s,
            sampled_s=duration_s,
        )
        for role, pid in pids.items()
    ]
    return result, profiles


def _cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User and system CPU seconds each process has used so far."""
    try:
        times = {role: psutil.Process(pid).cpu_times() for role, pid in pids.items()}
    except psutil.Error as error:
        raise ProfileError(f"a process of the request path is gone: {error}") from None
    return {role: t.user + t.system for role, t in times.items()}


def flame_graphs(
    profiles: Sequence[ProcessProfile], out: Path, title: Callable[[str], str]
) -> list[Path]:
    """One flame graph a process, from the stacks :func:`profile_request_path` kept."""
    return [
        plot_flame_graph(
            read_collapsed(stacks_file(out, profile.role).read_text()),
            out / f"flame-{_file_name(profile.role)}.png",
            title(profile.role),
        )
        for profile in profiles
    ]


def stacks_file(out: Path, role: str) -> Path:
    """Where py-spy writes the collapsed stacks of the process of ``role``."""
    return out / f"{_file_name(role)}.txt"


def _file_name(role: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in role).strip("-").lower()
