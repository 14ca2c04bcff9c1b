"""The request path's profile: py-spy's stacks read, summed and drawn as the page shows them.

The live profile of Ray Serve LLM is ``nox -s bench -- --profile``'s (not part of the
suite). Here py-spy samples a real process of ours that spends its CPU in one known
function, so the parsing is held to what py-spy writes, not to a hand-made sample.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray_serve_npu_tooling.bench.profile import (
    RATE_HZ,
    ProcessProfile,
    ProfileError,
    function_of,
    package_of,
    plot_flame_graph,
    profile_table,
    py_spy_argv,
    read_collapsed,
    request_path_processes,
)

BUSY = """\
import time

def spin_in_a_known_function():
    end = time.monotonic() + 30
    while time.monotonic() < end:
        sum(range(1000))

spin_in_a_known_function()
"""


def _sample(script: Path, tmp_path: Path, *, gil: bool = True) -> Counter[str]:
    """py-spy's stacks of ``python SCRIPT`` over 2 s, as the profile records them."""
    target = subprocess.Popen([sys.executable, str(script)])
    try:
        time.sleep(1)  # past the interpreter's start
        argv = py_spy_argv(target.pid, 2, tmp_path / f"{script.stem}-{gil}.txt")
        if not gil:
            argv.remove("--gil")
        done = subprocess.run(argv, capture_output=True, text=True)
    finally:
        target.kill()
        target.wait()
    if done.returncode and "ermission" in done.stderr:
        pytest.skip(f"py-spy may not attach to a process here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    return read_collapsed(Path(argv[argv.index("--output") + 1]).read_text())


def test_py_spy_samples_a_busy_process_and_its_stacks_name_the_function(tmp_path: Path) -> None:
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    stacks = _sample(script, tmp_path)
    # The loop holds the GIL throughout: 2 s at 100 Hz is about 200 samples, nearly
    # all in the function (fewer where the machine's other work delays py-spy).
    samples = sum(stacks.values())
    assert 100 <= samples <= 2 * RATE_HZ + 10
    in_function = sum(n for stack, n in stacks.items() if "spin_in_a_known_function" in stack)
    assert in_function > 0.9 * samples
    # py-spy's own frames, read as the profile reads them.
    profile = ProcessProfile.of("busy", 1, stacks, cpu_s=2, wall_s=2, sampled_s=2)
    assert profile.samples == samples and profile.self_by_package
    (innermost, _), *_ = profile.top_self
    assert innermost.startswith(("spin_in_a_known_function (", "<module> ("))
    assert any(f.startswith("spin_in_a_known_function (") for f, _ in profile.top_self)


#: Busy in C code that lets go of the GIL: hashlib hashes large buffers without it.
WITHOUT_GIL = """\
import hashlib, time
data = b"x" * 50_000_000
end = time.monotonic() + 30
while time.monotonic() < end:
    hashlib.sha256(data).digest()
"""


def test_py_spy_counts_only_samples_that_hold_the_gil(tmp_path: Path) -> None:
    script = tmp_path / "hashing.py"
    script.write_text(WITHOUT_GIL)
    # Without --gil, py-spy sees the busy thread in most ticks; with it, in few.
    without = sum(_sample(script, tmp_path, gil=False).values())
    assert without >= 100
    assert sum(_sample(script, tmp_path).values()) < 0.3 * without


STACKS = Counter(
    {
        "_run_once (asyncio/base_events.py:1922);_run (asyncio/events.py:84)": 50,
        "_run_once (asyncio/base_events.py:1922);handle (ray/serve/_private/proxy.py:10)": 30,
        "_run_once (asyncio/base_events.py:1922);handle (ray/serve/_private/proxy.py:12)": 15,
        "_run_once (asyncio/base_events.py:1922);dumps (json/encoder.py:200)": 5,
    }
)


def test_a_profile_sums_samples_by_innermost_function_and_package() -> None:
    assert read_collapsed("a (x.py:1);b (y/z.py:2) 7\nnot a stack line\n") == {
        "a (x.py:1);b (y/z.py:2)": 7
    }
    assert function_of("handle (ray/serve/_private/proxy.py:10)") == (
        "handle (ray/serve/_private/proxy.py)"
    )
    assert package_of("dumps (json/encoder.py:200)") == "json"
    assert package_of("<module> (busy.py:8)") == "busy"
    profile = ProcessProfile.of("ProxyActor", 1, STACKS, cpu_s=2.5, wall_s=10, sampled_s=8)
    assert profile.samples == 100
    assert profile.cores == pytest.approx(0.25)
    assert profile.gil_share == pytest.approx(100 / (RATE_HZ * 8))
    assert profile.self_by_package == {"asyncio": 50, "ray": 45, "json": 5}
    # Lines of one function merge.
    assert profile.top_self[:2] == [
        ("_run (asyncio/events.py)", 50),
        ("handle (ray/serve/_private/proxy.py)", 45),
    ]
    table = profile_table([profile])
    assert (
        "ProxyActor: 0.25 cores of CPU over 10.0 s; 100 samples holding the GIL in 8 s at "
        "100 Hz (12% of the ticks)"
    ) in table
    assert "innermost frame's package: asyncio 50 %, ray 45 %, json 5 %" in table
    assert "   45 %  handle (ray/serve/_private/proxy.py)" in table


def test_the_flame_graph_is_drawn(tmp_path: Path) -> None:
    path = plot_flame_graph(STACKS, tmp_path / "flame.png", "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _process(pid: int, title: str) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, cmdline=lambda: [title])


def test_the_request_path_is_the_proxy_and_the_apps_replicas() -> None:
    processes = [
        _process(1, "ray::ProxyActor"),
        _process(2, "ray::ServeReplica:serve-npu:OpenAiIngress"),
        _process(3, "ray::ServeReplica:serve-npu:LLMServer:deepseek-v4-flash"),
        _process(4, "ray::ServeReplica:other:OpenAiIngress"),
        _process(5, "ray::RayWorkerWrapper"),
    ]
    assert request_path_processes(processes, "serve-npu") == {
        "ProxyActor": 1,
        "OpenAiIngress": 2,
        "LLMServer:deepseek-v4-flash": 3,
    }
    with pytest.raises(ProfileError, match="deploy the app before profiling it"):
        request_path_processes(processes, "serve-gpu")
