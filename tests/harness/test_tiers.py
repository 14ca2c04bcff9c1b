"""The suite's tiers (ray_serve_npu_tooling.tiers) and the fast tier's engine tripwire.

Nested runs of a two-test file show what each tier selects and that the fast tier fails
when an engine core recorded itself; the tripwire's recording is tested on its own.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray_serve_npu_tooling import engine_tripwire
from ray_serve_npu_tooling.engine_tripwire import ENGINE_TRIPWIRE_ENV_VAR

pytest_plugins = ["pytester"]

TWO_TIERS = """
import json, os, pathlib, pytest

def test_fast():
    pass

@pytest.mark.fake_npu
def test_on_the_fake_tier():
    pass

def test_that_starts_an_engine():
    # What an engine core's process does where the tripwire is armed (engine_tripwire).
    armed = os.environ.get("RAY_SERVE_NPU_ENGINE_TRIPWIRE")
    if os.environ.get("START_AN_ENGINE") and armed:
        record = {"pid": 4242, "argv": ["vllm", "serve"], "test": "here"}
        (pathlib.Path(armed) / "engine-4242.json").write_text(json.dumps(record))
"""


@pytest.fixture
def two_tiers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # The nested run arms a tripwire of its own, not this run's.
    monkeypatch.delenv(ENGINE_TRIPWIRE_ENV_VAR, raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    fake_npu: the recipe tier\n")
    pytester.makepyfile(test_two_tiers=TWO_TIERS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "ray_serve_npu_tooling.tiers", "-v", *args)


@pytest.mark.parametrize(
    ("args", "ran"),
    [
        pytest.param((), ["test_fast", "test_that_starts_an_engine"], id="fast-by-default"),
        pytest.param(("--tier", "recipes"), ["test_on_the_fake_tier"], id="recipes"),
        pytest.param(
            ("--tier", "all"),
            ["test_fast", "test_on_the_fake_tier", "test_that_starts_an_engine"],
            id="all",
        ),
    ],
)
def test_each_tier_selects_its_tests_by_marker(
    two_tiers: pytest.Pytester, args: tuple[str, ...], ran: list[str]
) -> None:
    result = _run(two_tiers, *args)
    assert result.ret == pytest.ExitCode.OK
    passed = sorted(line.split("::")[1].split()[0] for line in result.outlines if " PASSED" in line)
    assert passed == ran


def test_the_fast_tier_fails_when_an_engine_started(
    two_tiers: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("START_AN_ENGINE", "1")
    result = _run(two_tiers)
    # Every test passed; the run fails, naming the engine and the fix.
    result.assert_outcomes(passed=2, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*engine tripwire: FAILED*",
            "1 vLLM engine core(s) started in the fast tier*mark the test*@pytest.mark.fake_npu*",
            "  pid 4242: vllm serve (test: here)",
        ]
    )
    # Where the engines are the point, nothing is armed.
    assert _run(two_tiers, "--tier", "all").ret == pytest.ExitCode.OK


def _as_engine_core(call: object) -> None:
    """Call ``call`` from a frame that looks like vLLM's engine core constructor."""
    source = "class EngineCore:\n    def __init__(self, call):\n        call()\n"
    namespace: dict[str, object] = {}
    exec(compile(source, str(Path("site-packages", engine_tripwire.ENGINE_CORE_FILE)), "exec"),
         namespace)  # fmt: skip
    namespace["EngineCore"](call)  # type: ignore[operator]


def test_an_engine_core_records_itself_where_the_tripwire_is_armed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENGINE_TRIPWIRE_ENV_VAR, raising=False)
    _as_engine_core(engine_tripwire.record_engine_start)
    assert list(tmp_path.iterdir()) == []  # not armed: nothing
    monkeypatch.setenv(ENGINE_TRIPWIRE_ENV_VAR, str(tmp_path))
    _as_engine_core(engine_tripwire.record_engine_start)
    (record,) = tmp_path.glob("engine-*.json")
    assert json.loads(record.read_text())["argv"]


def test_a_process_that_loads_the_plugins_first_records_the_engine_core_it_builds_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vllm serve's API server loads the plugins, then forks the engine core, which
    # inherits the wrapped constructor and does not load them again.
    import vllm.plugins
    from vllm.v1.engine import core

    # Vllm's own constructor: where this run's tripwire is armed, a process that loaded
    # the plugins before has wrapped it already, and would record this engine core too.
    monkeypatch.setattr(core.EngineCore, "__init__", inspect.unwrap(core.EngineCore.__init__))
    monkeypatch.setenv(ENGINE_TRIPWIRE_ENV_VAR, str(tmp_path))
    engine_tripwire.record_engine_start()
    # As in the forked child: the plugins count as loaded, so the constructor loads none.
    monkeypatch.setattr(vllm.plugins, "plugins_loaded", True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(Exception):  # noqa: B017 (no config: vLLM's own error)
        core.EngineCore(None, None, False)  # type: ignore[arg-type]
    assert len(list(tmp_path.glob("engine-*.json"))) == 1


def test_the_fast_tier_refuses_to_run_where_vllm_would_not_load_the_tripwire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ray_serve_npu_tooling import tiers

    # This environment's tooling registers it, as nox installs it.
    assert tiers._tripwire_plugin_installed()
    # An older install of the tooling, without the entry point: no silent pass.
    monkeypatch.setattr(tiers.importlib.metadata, "entry_points", lambda group: [])
    fast_run = SimpleNamespace(getoption=lambda name, default=None: default, stash={})
    with pytest.raises(pytest.UsageError, match=r"pip install -e \./tooling"):
        tiers.pytest_configure(fast_run)  # type: ignore[arg-type]
