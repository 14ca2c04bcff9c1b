"""The fake platform's variants: NPU scheduling by default, GPU scheduling on request."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from ray_serve_npu.envs import FAKE_DEVICE_ENV_VAR, FAKE_PLATFORM_ENV_VAR
from ray_serve_npu.fake_npu.vllm_plugins import (
    connect_drivers_to_their_own_node,
    fake_npu_platform,
    own_node_ip,
)


def test_the_fake_platform_is_off_without_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAKE_PLATFORM_ENV_VAR, raising=False)
    monkeypatch.setenv(FAKE_DEVICE_ENV_VAR, "GPU")
    assert fake_npu_platform() is None


@pytest.mark.parametrize(
    ("device", "ray_device_key", "visible_devices"),
    [
        (None, "NPU", "ASCEND_RT_VISIBLE_DEVICES"),
        ("NPU", "NPU", "ASCEND_RT_VISIBLE_DEVICES"),
        ("GPU", "GPU", "CUDA_VISIBLE_DEVICES"),
    ],
)
def test_the_fake_device_selects_what_ray_is_asked_for(
    monkeypatch: pytest.MonkeyPatch, device: str | None, ray_device_key: str, visible_devices: str
) -> None:
    if device is None:
        monkeypatch.delenv(FAKE_DEVICE_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(FAKE_DEVICE_ENV_VAR, device)
    monkeypatch.setenv(FAKE_PLATFORM_ENV_VAR, "1")
    qualname = fake_npu_platform()
    assert qualname is not None
    # Imported as vLLM imports it once the plugin named it, with the platform resolved;
    # importing vllm.platforms.cpu first, with the plugin on, would ask for it mid-import.
    monkeypatch.delenv(FAKE_PLATFORM_ENV_VAR)
    module, _, name = qualname.rpartition(".")
    platform = getattr(importlib.import_module(module), name)
    assert platform.ray_device_key == ray_device_key
    assert platform.device_control_env_var == visible_devices
    assert platform().is_cpu()


def test_an_unknown_fake_device_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAKE_PLATFORM_ENV_VAR, "1")
    monkeypatch.setenv(FAKE_DEVICE_ENV_VAR, "TPU")
    with pytest.raises(ValueError, match="RAY_SERVE_NPU_FAKE_DEVICE='TPU': use one of NPU, GPU"):
        fake_npu_platform()


#: Run under a parent whose command line carries a raylet's node-address argument: what
#: ``ray.init`` is called with once the fake tier's patch is in place.
DRIVER_SCRIPT = """
import json, ray
from ray_serve_npu.fake_npu import vllm_plugins
calls = []
def recording_init(*args, **kwargs):
    calls.append(kwargs)
ray.init = recording_init
vllm_plugins.connect_drivers_to_their_own_node()
vllm_plugins.connect_drivers_to_their_own_node()  # vLLM may load its plugins twice
assert ray.init.__wrapped__ is recording_init, "wrapped more than once"
ray.init(address="auto")
ray.init(address="auto", _node_ip_address="127.0.0.9")
print(json.dumps(calls))
"""


def test_a_driver_under_a_fake_node_connects_to_that_node() -> None:
    # The parent stands in for a node's raylet, the grandparent of an engine core.
    parent = [
        sys.executable,
        "-c",
        "import subprocess, sys; subprocess.run(sys.argv[1:], check=True)",
    ]
    run = subprocess.run(
        [*parent, sys.executable, "-c", DRIVER_SCRIPT, "--node_ip_address=127.5.6.3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    calls = json.loads(run.stdout.splitlines()[-1])
    assert calls == [
        {"address": "auto", "_node_ip_address": "127.5.6.3"},
        {"address": "auto", "_node_ip_address": "127.0.0.9"},
    ]


def test_a_driver_under_no_raylet_is_left_alone() -> None:
    import ray

    init = ray.init
    connect_drivers_to_their_own_node()
    assert own_node_ip() is None and ray.init is init
