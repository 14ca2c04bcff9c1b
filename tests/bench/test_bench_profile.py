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


def test_py_spy_samples_a_busy_process_and_its_stacks_name_the_function(tmp_path: Path) -> None:
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    busy = subprocess.Popen([sys.executable, str(script)])
    try:
        output = tmp_path / "busy.txt"
        subprocess.run(py_spy_argv(busy.pid, 2, output), check=True, capture_output=True)
    finally:
        busy.kill()
        busy.wait()
    stacks = read_collapsed(output.read_text())
    # The loop holds the GIL throughout: 2 s at 100 Hz is about 200 samples, nearly
    # all in the function (fewer where the machine's other work delays py-spy).
    samples = sum(stacks.values())
    assert 100 <= samples <= 2 * RATE_HZ + 10
    in_function = sum(n for stack, n in stacks.items() if "spin_in_a_known_function" in stack)
    assert in_function > 0.9 * samples


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
    hashing = subprocess.Popen([sys.executable, str(script)])
    try:
        time.sleep(1)  # past the interpreter's start
        output = tmp_path / "hashing.txt"
        subprocess.run(py_spy_argv(hashing.pid, 2, output), check=True, capture_output=True)
    finally:
        hashing.kill()
        hashing.wait()
    # A core busy for 2 s, nearly all of it without the GIL: few samples count.
    assert sum(read_collapsed(output.read_text()).values()) < 0.3 * 2 * RATE_HZ


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
    profile = ProcessProfile.of("ProxyActor", 1, STACKS, cpu_s=2.5, wall_s=10)
    assert profile.samples == 100
    assert profile.cores == pytest.approx(0.25)
    assert profile.self_by_package == {"asyncio": 50, "ray": 45, "json": 5}
    # Lines of one function merge.
    assert profile.top_self[:2] == [
        ("_run (asyncio/events.py)", 50),
        ("handle (ray/serve/_private/proxy.py)", 45),
    ]
    table = profile_table([profile])
    assert "ProxyActor: 0.25 cores of CPU over 10 s; 100 samples holding the GIL at 100 Hz" in table
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
