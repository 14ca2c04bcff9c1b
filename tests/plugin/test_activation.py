"""The npu kind is active wherever a config is built or unpickled, and only on a tested Ray.

The import hook (:mod:`ray_serve_npu_autoload`) has :mod:`ray_serve_npu.activation`
apply the ledger (:mod:`ray_serve_npu.patches`) when Ray Serve LLM loads; importing
``ray_serve_npu`` does not (``test_import_cost.py``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import textwrap
from types import ModuleType

import cloudpickle
import pytest
from npu_configs import make_llm_config
from packaging.version import Version
from starlette.testclient import TestClient

import ray_serve_npu
import ray_serve_npu_autoload
from ray_serve_npu import accelerators, activation, envs, patches
from ray_serve_npu.compat import (
    RAY_VLLM_PINS,
    SUPPORTED_RAY,
    TESTED_RAY,
    UnsupportedRayError,
    check_ray_version,
    ray_for_vllm,
)
from ray_serve_npu.patches import NPU_KIND_PR, PATCH_MODULES, PATCHES, TARGET_MODULES


def _run_python(
    code: str, *, stdin: bytes = b"", unset: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess[bytes]:
    """Run ``code`` in a new interpreter that has imported nothing of ours, in this
    process's environment without ``unset`` and with ``env``."""
    kept = {name: value for name, value in os.environ.items() if name not in unset}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=stdin,
        capture_output=True,
        env={**kept, **env},
        timeout=300,
    )


def test_npu_config_survives_cloudpickle_into_a_fresh_process() -> None:
    config = make_llm_config(
        accelerator_config={"kind": "npu"}, engine_kwargs={"tensor_parallel_size": 2}
    )
    # What a Serve controller or replica does with the config it is sent.
    result = _run_python(
        """
        import sys, cloudpickle
        config = cloudpickle.loads(sys.stdin.buffer.read())
        engine_config = config.get_engine_config()
        print(type(config.accelerator_config).__name__)
        print(type(engine_config.accelerator).__name__)
        print(engine_config.placement_bundles)
        """,
        stdin=cloudpickle.dumps(config),
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    # vLLM logs to stdout first; the last lines are the script's.
    assert result.stdout.decode().splitlines()[-3:] == [
        "NPUConfig",
        "NPUAccelerator",
        "[{'NPU': 1}, {'NPU': 1}]",
    ]


@pytest.mark.parametrize(
    "before",
    [
        "",
        # The plugin's modules that import Ray Serve LLM, imported before it: the
        # hook fires while they are half-imported and must wait for them.
        "from ray_serve_npu import NPUConfig",
        "import ray_serve_npu.patches.llm_config",
    ],
    ids=["ray-only", "plugin-names-first", "patch-module-first"],
)
def test_dict_form_works_in_a_process_that_never_activates_the_plugin(before: str) -> None:
    # The import hook of ray_serve_npu_autoload.pth; imported by hand here, as
    # site does at startup, because the tests may run from a source tree.
    result = _run_python(
        f"""
        import sys, ray_serve_npu_autoload
        {before}
        from ray.serve.llm import LLMConfig
        config = LLMConfig(
            model_loading_config={{"model_id": "m"}}, accelerator_config={{"kind": "npu"}}
        )
        print(type(config.get_engine_config().accelerator).__name__)
        """
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode().splitlines()[-1] == "NPUAccelerator"


def test_disabled_plugin_leaves_ray_refusing_the_npu_kind() -> None:
    result = _run_python(
        """
        import ray_serve_npu_autoload
        from ray.serve.llm import LLMConfig
        LLMConfig(model_loading_config={"model_id": "m"}, accelerator_config={"kind": "npu"})
        """,
        RAY_SERVE_NPU_DISABLE="1",
    )
    assert result.returncode != 0
    stderr = result.stderr.decode()
    assert "disabled by RAY_SERVE_NPU_DISABLE" in stderr
    assert "'npu'" in stderr and "does not match any of the expected tags" in stderr


@pytest.mark.parametrize(
    "code",
    [
        "import ray_serve_npu\nray_serve_npu.activate()",
        # Ray alone: the import hook, though disabled, still imports the plugin.
        "import ray_serve_npu_autoload\nfrom ray.serve.llm import build_openai_app",
    ],
    ids=["plugin", "ray-only"],
)
def test_disabling_the_plugin_while_an_api_key_is_set_is_an_error(code: str) -> None:
    result = _run_python(code, RAY_SERVE_NPU_DISABLE="1", RAY_SERVE_NPU_API_KEY="k")

    assert result.returncode != 0
    assert (
        "DisabledWithApiKeyError: RAY_SERVE_NPU_DISABLE turns ray-serve-npu off, and with it "
        "the API key in RAY_SERVE_NPU_API_KEY"
    ) in result.stderr.decode()
    assert "Fix: unset RAY_SERVE_NPU_DISABLE" in result.stderr.decode()


def _fresh(monkeypatch: pytest.MonkeyPatch, name: str) -> ModuleType:
    """A new, unpatched copy of Ray's module ``name``, in its place in ``sys.modules``."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_where_ray_has_its_own_npu_kind_the_api_key_still_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ray Serve LLM with an npu kind of its own, imported before the plugin activates.
    monkeypatch.setattr(accelerators, "RAY_HAS_NPU_KIND", True)
    ray_accelerators = _fresh(monkeypatch, patches.ACCELERATORS)
    ray_ingress = _fresh(monkeypatch, patches.INGRESS)
    monkeypatch.setenv(envs.API_KEY_ENV_VAR, "k")

    ray_serve_npu.activate()

    with TestClient(ray_ingress.init()) as client:
        assert client.get("/v1/models").status_code == 401
    # Ray's own npu kind is left alone.
    assert not hasattr(ray_accelerators, "NPUConfig")


def test_where_ray_has_its_own_npu_kind_disabling_the_plugin_with_a_key_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(accelerators, "RAY_HAS_NPU_KIND", True)
    monkeypatch.setenv(envs.DISABLE_ENV_VAR, "1")
    monkeypatch.setenv(envs.API_KEY_ENV_VAR, "k")

    with pytest.raises(activation.DisabledWithApiKeyError):
        ray_serve_npu.activate()


def test_ledger_names_every_patch_function_and_nothing_else() -> None:
    # A patch module's public functions are its patches; helpers start with "_".
    patch_functions = {
        f"{name}:{function}"
        for name in PATCH_MODULES
        for function, value in vars(importlib.import_module(name)).items()
        if inspect.isfunction(value) and value.__module__ == name and not function.startswith("_")
    }
    assert sorted(patch.patcher for patch in PATCHES) == sorted(patch_functions)


def test_each_patch_module_opens_with_why_upstream_and_when_it_goes() -> None:
    for name in PATCH_MODULES:
        doc = inspect.getdoc(importlib.import_module(name)) or ""
        fields = dict(re.findall(r"^(Why|Upstream|Goes): (.+?)(?=^\w+: |\Z)", doc, re.M | re.S))
        assert set(fields) == {"Why", "Upstream", "Goes"}, (name, sorted(fields))
        for patch in PATCHES:
            if patch.module == name:
                # The ledger's upstream change, or "none yet" where it has none.
                assert (patch.upstream or "none yet") in fields["Upstream"], (name, patch.patcher)


def test_ledger_names_the_upstream_change_of_each_patch() -> None:
    for patch in PATCHES:
        assert patch.what and patch.why, patch
        assert patch.upstream is None or patch.upstream.startswith("ray-project/ray#"), patch
        # The npu kind's patches stand in for Ray's own npu kind, and step aside for it.
        assert (patch.upstream == NPU_KIND_PR) == patch.npu_kind, patch


def test_no_patch_outlives_the_ray_that_fixes_it() -> None:
    oldest_supported = min(SUPPORTED_RAY.filter(RAY_VLLM_PINS), key=Version)
    for patch in PATCHES:
        if patch.fixed_in_ray is not None:
            assert Version(oldest_supported) < Version(patch.fixed_in_ray), (
                f"Every supported Ray has {patch.upstream}: remove {patch.function}."
            )


def test_hook_watches_the_modules_the_ledger_patches_in_import_order() -> None:
    assert ray_serve_npu_autoload.TARGETS == TARGET_MODULES
    # Each module is patched after the ones it imports.
    assert TARGET_MODULES[0] == patches.ACCELERATORS


def test_the_hook_imports_only_the_standard_library() -> None:
    tree = ast.parse(inspect.getsource(ray_serve_npu_autoload))
    top_level = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert top_level <= set(sys.stdlib_module_names) | {"__future__"}, top_level
    assert len(inspect.getsource(ray_serve_npu_autoload).splitlines()) < 120


@pytest.mark.parametrize("fake_tier", [True, False], ids=["fake-tier", "off"])
def test_a_process_started_on_the_fake_tier_gets_its_patch_through_the_hook(
    fake_tier: bool,
) -> None:
    env = {envs.DRY_RUN_MODEL_ENV_VAR: "/tmp/tiny"} if fake_tier else {}
    # The pytest process may have the variable; the child has it only where asked.
    result = _run_python(
        f"""
        import ray_serve_npu_autoload
        from ray.llm._internal.serve.core.server import llm_server
        print(sorted(getattr(llm_server, {activation.APPLIED!r})))
        """,
        unset=(envs.DRY_RUN_MODEL_ENV_VAR,),
        **env,
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    applied = result.stdout.decode().splitlines()[-1]
    assert "ray_serve_npu.patches.llm_server:drop_zero_gpu" in applied
    assert ("ray_serve_npu.patches.llm_server:adapt_for_fake_tier" in applied) == fake_tier


def test_the_fake_tier_patch_is_applied_only_where_the_fake_tier_is_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = [patch.patcher for patch in PATCHES if patch.fake_tier]
    assert fake, "the ledger has no fake-tier patch"
    monkeypatch.delenv(envs.DRY_RUN_MODEL_ENV_VAR, raising=False)
    off = [patch.patcher for patch in activation.patches_for_this_process()]
    monkeypatch.setenv(envs.DRY_RUN_MODEL_ENV_VAR, "/tmp/tiny")
    on = [patch.patcher for patch in activation.patches_for_this_process()]
    assert not set(fake) & set(off)
    assert set(fake) <= set(on)


@pytest.mark.parametrize(
    ("ray_version", "vllm_version", "advice"),
    [
        # The vLLM-Ascend v0.22.1rc1 image: Ray 2.48, vLLM 0.22.1.
        (
            "2.48.0",
            "0.22.1",
            "the Ray whose Serve LLM pins it is 2.56.x: pip install 'ray[serve]~=2.56.1'",
        ),
        ("2.61.0", "0.29.0", "2.60.x: pip install 'ray[serve]~=2.60.0'"),
        ("2.55.1", "0.23.0", "No Ray release pins vLLM 0.23.0"),
        ("2.55.1", None, ""),
    ],
)
def test_version_guard_names_range_and_the_ray_for_your_vllm(
    ray_version: str, vllm_version: str | None, advice: str
) -> None:
    with pytest.raises(UnsupportedRayError) as raised:
        check_ray_version(ray_version, vllm_version)
    message = str(raised.value)
    assert f"supports ray {SUPPORTED_RAY}" in message
    assert f"found ray {ray_version}" in message
    assert advice in message


@pytest.mark.parametrize("ray_version", [*TESTED_RAY, *RAY_VLLM_PINS])
def test_version_guard_accepts_the_supported_range(ray_version: str) -> None:
    check_ray_version(ray_version, None)


def test_each_pinned_vllm_pairs_with_its_own_ray() -> None:
    assert {ray_for_vllm(vllm): ray for ray, vllm in RAY_VLLM_PINS.items()} == {
        ray: ray for ray in RAY_VLLM_PINS
    }


@pytest.mark.parametrize(
    "activation",
    [
        # The import hook, on the first Ray Serve LLM module it watches.
        "import ray_serve_npu_autoload; from ray.serve.llm import LLMConfig",
        "ray_serve_npu.activate()",
    ],
    ids=["hook", "explicit"],
)
def test_activation_fails_on_an_untested_ray(activation: str) -> None:
    result = _run_python(
        f"""
        import ray
        ray.__version__ = "2.48.0"
        import ray_serve_npu  # imports no Ray, so checks nothing
        print("imported")
        {activation}
        """
    )
    assert result.returncode != 0
    assert result.stdout.decode().splitlines()[-1] == "imported"
    assert "UnsupportedRayError: ray-serve-npu supports ray" in result.stderr.decode()


def test_serve_config_import_path_builds_npu_bundles(ray_with_fake_npus: None) -> None:
    # What `serve run` / `serve deploy` / KubeRay do with
    # `import_path: ray_serve_npu:build_openai_app` and `args:` from YAML.
    from ray._common.utils import import_attr
    from ray.serve._private.build_app import build_app

    builder = import_attr("ray_serve_npu:build_openai_app")
    app = builder(
        {
            "llm_configs": [
                {
                    "model_loading_config": {"model_id": "m"},
                    "accelerator_config": {"kind": "npu"},
                    "engine_kwargs": {"tensor_parallel_size": 2},
                }
            ]
        }
    )
    bundles = {
        deployment.name: deployment._replica_config.placement_group_bundles
        for deployment in build_app(app, name="npu-app").deployments
    }
    assert bundles["LLMServer:m"] == [{"NPU": 1, "CPU": 1}, {"NPU": 1}]


def test_activate_leaves_serves_haproxy_manager_to_the_hook_where_jinja2_is_missing() -> None:
    # Serve's HAProxy manager imports jinja2 at Ray 2.56.1 to 2.58.1, which at 2.56.1 a
    # node without HAProxy need not have: the compat tier runs this there. At 2.57.1 and
    # 2.58.1 Serve itself imports that manager (controller.py), so Ray Serve needs jinja2
    # before the plugin is involved and the test skips; at 2.60.0 the manager imports
    # jinja2 only when HAProxy runs, and the test shows activate() works without it.
    result = _run_python(
        """
        import sys
        sys.modules["jinja2"] = None  # as where jinja2 is not installed
        try:
            import ray.serve
        except ModuleNotFoundError as error:
            if error.name != "jinja2":
                raise
            print("ray.serve needs jinja2")
            sys.exit(0)
        import ray_serve_npu
        ray_serve_npu.activate()
        from ray.llm._internal.serve.core.configs import accelerators
        print("activated", hasattr(accelerators, "NPUConfig"))
        """
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    outcome = result.stdout.decode().splitlines()[-1]
    if outcome == "ray.serve needs jinja2":
        pytest.skip("Ray Serve itself imports jinja2 at this Ray")
    assert outcome == "activated True"
