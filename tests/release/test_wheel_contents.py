"""The wheel ships the product and nothing of the repository's tooling.

The product: the plugin (the npu kind, the ingress, placement), the checker, the
release data, the command line and the fake-NPU tier that ``ray-serve-npu dry-run``
runs. Not shipped: the docs harness, the mock engine and the site's checks
(``tooling/``), which only test and build this repository.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from configparser import ConfigParser
from pathlib import Path

import pytest

from ray_serve_npu.vllm_flags import stored_versions

ROOT = Path(__file__).resolve().parents[2]
TOOLING_PACKAGE = "ray_serve_npu_tooling"
#: Where a file of the wheel may live: the product's package, the import hook and its
#: .pth file, and the wheel's metadata.
SHIPPED_TOPS = ("ray_serve_npu/", "ray_serve_npu_autoload.py", "ray_serve_npu_autoload.pth")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("ray_serve_npu-*.whl")
    return zipfile.ZipFile(built)


def _payload(wheel: zipfile.ZipFile) -> list[str]:
    return [name for name in wheel.namelist() if ".dist-info/" not in name]


def test_the_wheel_holds_only_the_product(wheel: zipfile.ZipFile) -> None:
    names = _payload(wheel)
    assert "ray_serve_npu/fake_npu/dry_run.py" in names
    assert "ray_serve_npu/check/cli.py" in names
    # The patches, one module per patched Ray module, under their ledger.
    assert "ray_serve_npu/patches/__init__.py" in names
    assert "ray_serve_npu/patches/ingress.py" in names
    assert "ray_serve_npu/_patch.py" not in names
    # The docs harness's tier protocol and the benchmarks' NPU pacing are the tooling's.
    assert "ray_serve_npu/fake_npu/tier.py" not in names
    assert "ray_serve_npu/fake_npu/npu_pacing.py" not in names
    assert "ray_serve_npu/fake_npu/paced_worker.py" not in names
    # The stored `vllm serve` flags the checker judges each release's flags by.
    for version in stored_versions():
        assert f"ray_serve_npu/releases/vllm_serve/{version}.json" in names
    # vLLM-Ascend's nightly CI configs, which the models page lists.
    assert "ray_serve_npu/releases/nightly/v0.25.1rc1/DeepSeek-V4-Flash-W8A8-A3.yaml" in names
    assert [name for name in names if not name.startswith(SHIPPED_TOPS)] == []


def test_the_base_install_leaves_the_checkers_dependencies_to_its_extra(
    wheel: zipfile.ZipFile,
) -> None:
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [
        line.partition(": ")[2]
        for line in wheel.read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist: ")
    ]
    base = [requirement for requirement in requires if "extra ==" not in requirement]
    check = [requirement for requirement in requires if "extra == 'check'" in requirement]
    assert base and check
    for name in ("jsonschema", "markdown-it-py", "mdit-py-plugins"):
        assert not [r for r in base if r.startswith(name)], (name, base)
        assert [r for r in check if r.startswith(name)], (name, check)


def test_no_shipped_module_imports_the_tooling(wheel: zipfile.ZipFile) -> None:
    modules = [name for name in _payload(wheel) if name.endswith(".py")]
    assert modules
    importing = [name for name in modules if TOOLING_PACKAGE in wheel.read(name).decode()]
    assert importing == []


def test_every_entry_point_names_a_module_of_the_wheel(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    parser = ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    targets = [value for section in parser.sections() for value in parser[section].values()]
    assert len(targets) >= 3  # the command and the fake tier's two vLLM plugins
    names = set(wheel.namelist())
    missing = [
        target for target in targets if target.split(":")[0].replace(".", "/") + ".py" not in names
    ]
    assert missing == []
