"""Importing the plugin has no side effects: no Ray where none is needed, no patch, no cycle.

Only the import hook (:mod:`ray_serve_npu_autoload`) activates the npu kind
(:mod:`ray_serve_npu.activation`), when Ray Serve LLM loads. So the package, its
data modules (pin facts, hardware facts, the checker) and the command line import
without Ray, and each of their modules imports on its own in a fresh interpreter
without Ray and without patching anything. Import cycles, the tooling's included, are
nox -s lint's (pyproject.toml's acyclic contract), which sees lazy imports too.

vLLM loads its platform plugins, the fake tier's among them
(``ray_serve_npu.fake_npu.vllm_plugins``), while it is itself being imported;
a package that imports vLLM at module level then fails with a circular import,
and the engine falls back to the CPU platform, which Ray can't run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

import pytest

from ray_serve_npu import activation, envs, hardware

ROOT = Path(__file__).resolve().parents[2]

#: The plugin's modules that import Ray at module level, by design: the npu
#: kind's classes subclass Ray's, the patches and the stream guard wrap Ray's.
NEEDS_RAY = frozenset(
    {
        "ray_serve_npu.accelerators",
        "ray_serve_npu.streams",
        "ray_serve_npu.patches.widening",
        "ray_serve_npu.patches.accelerators",
        "ray_serve_npu.patches.llm_config",
        "ray_serve_npu.patches.vllm_models",
        "ray_serve_npu.patches.llm_server",
        # Through ray_serve_npu.streams; the builder's patch needs only Starlette.
        "ray_serve_npu.patches.ingress",
    }
)
#: The fake-NPU tier and the repository's tooling (tooling/) run Ray and vLLM: only the
#: import contracts hold them (no cycles), so no interpreter starts for them.
RUNS_RAY_AND_VLLM = ("ray_serve_npu.fake_npu", "ray_serve_npu_tooling")


def _modules_no_import_reaches_ray() -> tuple[str, ...]:
    """The modules that pyproject.toml's import contracts forbid to reach Ray, lazily or
    not: ``nox -s lint`` holds them to it statically, so no interpreter need check them."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return tuple(
        module
        for contract in contracts["contracts"]
        if contract["type"] == "forbidden" and "ray" in contract["forbidden_modules"]
        for module in contract["source_modules"]
    )


def _module_names() -> list[str]:
    names = ["ray_serve_npu_autoload"]
    held = _modules_no_import_reaches_ray()
    for path in sorted((ROOT / "src").glob("ray_serve_npu/**/*.py")):
        parts = path.relative_to(ROOT / "src").with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name.startswith(RUNS_RAY_AND_VLLM):
            continue
        if name not in held and not name.startswith(tuple(f"{m}." for m in held)):
            names.append(name)
    return names


def test_the_import_contracts_hold_the_data_modules() -> None:
    # What the parametrized test leaves to nox -s lint's contract (watched failing with a
    # lazy `import ray.serve` added to hardware.py).
    assert {"ray_serve_npu.compat", "ray_serve_npu.hardware", "ray_serve_npu.releases"} <= set(
        _modules_no_import_reaches_ray()
    )


def test_the_import_contracts_hold_the_tier_and_the_tooling_free_of_cycles() -> None:
    # What the parametrized test leaves to nox -s lint's acyclic contract.
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (acyclic,) = [c for c in linter["contracts"] if c["type"] == "acyclic_siblings"]
    assert {"ray_serve_npu", "ray_serve_npu_tooling"} <= set(acyclic["ancestors"])
    assert {"ray_serve_npu", "ray_serve_npu_tooling"} <= set(linter["root_packages"])


def _import_alone(module: str) -> dict[str, list[str]]:
    """Import ``module`` in a fresh interpreter; the Ray modules loaded and patched."""
    code = f"""
import importlib, json, sys
importlib.import_module({module!r})
ray = sorted(m for m in sys.modules if m == "ray" or m.startswith("ray."))
patched = [m for m in ray if getattr(sys.modules[m], {activation.APPLIED!r}, False)]
print(json.dumps({{"ray": ray, "patched": patched}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("module", _module_names())
def test_each_module_imports_alone_without_ray_or_patches(module: str) -> None:
    loaded = _import_alone(module)

    assert loaded["patched"] == [], f"importing {module} patched Ray"
    if module not in NEEDS_RAY:
        assert loaded["ray"] == [], f"importing {module} imported {loaded['ray'][:5]}..."


def test_the_plugin_names_are_imported_when_first_used() -> None:
    code = """
import sys, ray_serve_npu
before = "ray" in sys.modules
print(before, ray_serve_npu.NPUConfig.__module__, "ray" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.splitlines()[-1] == "False ray_serve_npu.accelerators True"


def test_importing_the_plugin_imports_no_vllm() -> None:
    code = (
        "import sys, ray_serve_npu; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )

    assert done.stdout.strip() == "[]", done.stdout


def test_hardware_names_are_rays() -> None:
    # Written out in hardware.py and envs.py so that they import no Ray; Ray Core owns them.
    from ray._private.accelerators import npu

    assert hardware.NPU_RESOURCE == npu.NPUAcceleratorManager.get_resource_name()
    assert envs.VISIBLE_DEVICES_ENV_VAR == npu.ASCEND_RT_VISIBLE_DEVICES_ENV_VAR
    assert envs.NOSET_VISIBLE_DEVICES_ENV_VAR == npu.NOSET_ASCEND_RT_VISIBLE_DEVICES_ENV_VAR


def test_command_help_imports_no_ray() -> None:
    code = """
import sys
from ray_serve_npu.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
print("ray" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert "usage: ray-serve-npu" in done.stdout
    assert done.stdout.splitlines()[-1] == "False"


def test_the_placement_probes_task_imports_neither_serve_nor_vllm() -> None:
    # Each probe task's worker imports the module that defines the task's function;
    # sixteen workers on a fake A3 node each importing Ray Serve LLM and vLLM made the
    # data-parallel placement test's set-up take minutes.
    from ray_serve_npu_tooling import mock_engine

    code = f"""
import importlib, json, sys
importlib.import_module({mock_engine.device_probe.__module__!r})
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "vllm"
                        or m.startswith(("ray.llm", "ray.serve")))))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
