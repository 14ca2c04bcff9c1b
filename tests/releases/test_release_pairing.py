"""Each release's Ray pairing: agrees with what each Ray pins, and the code refuses any other."""

from __future__ import annotations

import pytest
from packaging.version import Version

import ray_serve_npu.releases as releases_package
from ray_serve_npu import compat
from ray_serve_npu.releases import RELEASES, NoPairingError, PairingError, check_pairing, release
from ray_serve_npu.releases.pairings import Pairings, Step, StepResult, pairings


def _series(version: str) -> tuple[int, ...]:
    return Version(version).release[:2]


@pytest.mark.parametrize("tag", list(RELEASES))
def test_the_paired_ray_pins_this_vllm(tag: str) -> None:
    data = release(tag)
    pairing = data.pairing
    if pairing.ray is None:
        # None: no Ray pins this vLLM series, and the data says what was measured instead.
        assert compat.ray_for_vllm(data.vllm) is None
        assert pairing.reason
        return
    pinned = compat.RAY_VLLM_PINS[pairing.ray]
    if pairing.match == "exact":
        assert pinned == data.vllm
    else:
        assert pinned != data.vllm and _series(pinned) == _series(data.vllm)
    assert compat.ray_for_vllm(data.vllm) == pairing.ray


def test_the_pairings_the_data_holds() -> None:
    assert release("v0.22.1rc1").ray == "2.56.1"
    assert release("v0.25.1rc1").ray == "2.57.1"
    assert release("v0.25.1rc1").pairing.match == "exact"
    assert check_pairing("v0.22.1rc1", "2.56.1") == "pinned"
    assert check_pairing("v0.22.1rc1", "2.56.2") == "pinned"  # a patch release of the series
    assert check_pairing("v0.25.1rc1", "2.57.1") == "pinned"


def test_a_ray_version_that_is_no_version_is_refused() -> None:
    with pytest.raises(PairingError) as error:
        check_pairing("v0.22.1rc1", "latest")
    assert str(error.value) == "ray 'latest' is not a version, such as 2.57.1"


def test_a_ray_of_another_series_is_refused_naming_both() -> None:
    with pytest.raises(PairingError) as error:
        check_pairing("v0.25.1rc1", "2.56.1")
    message = str(error.value)
    assert "ray 2.56.1 does not pair with vLLM-Ascend v0.25.1rc1 (vLLM 0.25.1)" in message
    assert "the Ray that does is 2.57.x (2.57.1)" in message
    with pytest.raises(PairingError, match=r"the Ray that does is 2\.56\.x"):
        check_pairing("v0.22.1rc1", "2.60.0")


@pytest.mark.parametrize("ray_version", ["2.56.1", "2.57.1", "2.60.0"])
def test_v0_23_0_pairs_only_with_a_ray_measured_serving_it(ray_version: str) -> None:
    # No Ray pins vLLM 0.23.0: a Ray pairs with v0.23.0 only as measured.
    if pairings().serves(ray_version, "0.23.0"):
        assert check_pairing("v0.23.0", ray_version) == "measured"
        return
    with pytest.raises(NoPairingError) as error:
        check_pairing("v0.23.0", ray_version)
    message = str(error.value)
    assert f"ray {ray_version} does not pair with vLLM-Ascend v0.23.0 (vLLM 0.23.0): " in message
    assert "No Ray release's Serve LLM pins vLLM 0.23" in message


def _measured(monkeypatch: pytest.MonkeyPatch, *pairs: tuple[str, str, bool]) -> None:
    """Make the measurements check_pairing reads these (ray, vllm, served) pairs."""
    template = pairings().pairs[0]
    served_steps = list(template.steps)
    assert template.serves, "the template is a pair that served"
    made = [
        template.model_copy(
            update={
                "ray": ray,
                "vllm": vllm,
                "steps": served_steps
                if served
                else [
                    *served_steps[:-1],
                    StepResult(step=Step.SERVE, passed=False, seconds=1.0, error="E: no"),
                ],
            }
        )
        for ray, vllm, served in pairs
    ]
    measured = Pairings(command="nox -s pairings", pairs=made)
    monkeypatch.setattr(releases_package, "pairings", lambda: measured)


def test_a_ray_measured_serving_beside_the_vllm_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    _measured(monkeypatch, ("2.59.0", "0.25.1", True), ("2.60.0", "0.25.1", False))
    assert check_pairing("v0.25.1rc1", "2.57.1") == "pinned"
    assert check_pairing("v0.25.1rc1", "2.59.0") == "measured"
    # Measured, but it did not serve: refused, and the refusal names the Ray that did.
    with pytest.raises(PairingError) as error:
        check_pairing("v0.25.1rc1", "2.60.0")
    assert "Measured serving beside vLLM 0.25.1 on the fake-NPU tier: ray 2.59.0." in str(
        error.value
    )
    # A measured pair is this very Ray, not its series.
    with pytest.raises(PairingError):
        check_pairing("v0.25.1rc1", "2.59.1")


def test_a_release_no_ray_pins_pairs_with_a_ray_measured_serving_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _measured(monkeypatch, ("2.57.1", "0.23.0", True))
    assert check_pairing("v0.23.0", "2.57.1") == "measured"
    with pytest.raises(NoPairingError, match=r"ray 2\.57\.1\.$"):
        check_pairing("v0.23.0", "2.56.1")


def test_v0_23_0s_vllm_was_measured_beside_the_rays_around_it() -> None:
    # The session's file, not the release data, holds what was measured.
    assert {pair.ray for pair in pairings().beside("0.23.0")} >= {"2.56.1", "2.57.1"}
