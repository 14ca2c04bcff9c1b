"""The figures fake-tier tests measure: printed, and with --figures-json kept as a file
(tooling/ray_serve_npu_tooling/figures.py), also from pytest-xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_serve_npu_tooling.figures import FiguresRun

pytest_plugins = ["pytester"]

MEASURING = """
def test_measures(record_figure):
    record_figure("recovery s", 12.5)
    record_figure("error event", {"type": "REPLICA_LOST"})

def test_measures_nothing():
    pass
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_measuring=MEASURING)
    return pytester.runpytest_subprocess("-p", "ray_serve_npu_tooling.figures", *args)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_figures_json_keeps_each_figure_with_the_run(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    out = pytester.path / "figures.json"
    result = _run(pytester, *workers, "--figures-json", str(out))

    result.assert_outcomes(passed=2)
    run = FiguresRun.model_validate_json(out.read_text())
    assert [(f.name, f.value) for f in run.of("test_measures")] == [
        ("recovery s", 12.5),
        ("error event", {"type": "REPLICA_LOST"}),
    ]
    assert run.of("test_measures_nothing") == []
    assert "--figures-json" in run.command
    assert set(run.versions) == {"ray", "vllm"}
    result.stdout.fnmatch_lines(["*figures measured*", "test_measures: recovery s = 12.5"])


def test_without_the_option_no_file_is_written(pytester: pytest.Pytester) -> None:
    _run(pytester).assert_outcomes(passed=2)

    assert not list(Path(pytester.path).glob("*.json"))


def test_a_run_with_a_failure_keeps_no_file(pytester: pytest.Pytester) -> None:
    out = pytester.path / "figures.json"
    pytester.makepyfile(
        test_failing="def test_fails(record_figure):\n    record_figure('x', 1)\n    assert False\n"
    )
    result = _run(pytester, "--figures-json", str(out))

    result.assert_outcomes(passed=2, failed=1)
    assert not out.exists()
    result.stdout.fnmatch_lines(["*1 tests failed*not written*"])
