"""recipes/kuberay/rayservice.yaml against KubeRay v1.7.0's RayService schema and the recipe."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import ray_serve_npu  # noqa: F401  (activates the npu kind)
from ray_serve_npu.envs import API_KEY_ENV_VAR

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "recipes" / "kuberay" / "rayservice.yaml"
DOCKERFILE = ROOT / "recipes" / "Dockerfile"
CRD = Path(__file__).parent / "data" / "ray.io_rayservices.yaml"


@functools.cache
def _crd() -> dict[str, Any]:
    """The CRD, read once: 1 MB of YAML, 2.4 s with PyYAML's Python loader and 0.4 s with
    its C one here (2026-12-07); no test changes it."""
    return yaml.load(CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _validator() -> jsonschema.Draft7Validator:
    (v1,) = [v for v in _crd()["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(v1["schema"]["openAPIV3Schema"])


def _manifest() -> dict[str, Any]:
    return yaml.safe_load(MANIFEST.read_text())


def _errors(manifest: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator().iter_errors(manifest)]


def test_the_crd_is_kuberay_v1_7_0_rayservice() -> None:
    crd = _crd()
    assert crd["spec"]["names"]["kind"] == "RayService"
    assert crd["spec"]["group"] == "ray.io"


def test_manifest_validates_against_the_rayservice_schema() -> None:
    assert _errors(_manifest()) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        # The schema must catch what a wrong manifest would get wrong.
        (["spec", "rayClusterConfig", "workerGroupSpecs", 0, "rayStartParams", "resources"], 8),
        (["spec", "rayClusterConfig", "workerGroupSpecs", 0, "replicas"], "two"),
        (["spec", "serveConfigV2"], {"applications": []}),
        (["spec", "rayClusterConfig", "authOptions", "mode"], "on"),
        (["spec", "rayClusterConfig", "gcsFaultToleranceOptions", "redisPassword"], "secret"),
    ],
)
def test_schema_rejects_a_broken_manifest(path: list[Any], value: Any) -> None:
    manifest = _manifest()
    target = manifest
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _errors(manifest) != []


def _worker() -> dict[str, Any]:
    (worker,) = _manifest()["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    return worker


def test_workers_ask_for_whole_nodes_and_advertise_them_to_ray() -> None:
    worker = _worker()
    (container,) = worker["template"]["spec"]["containers"]
    limits = container["resources"]["limits"]
    advertised = json.loads(json.loads(worker["rayStartParams"]["resources"]))
    assert int(limits["huawei.com/Ascend910"]) == advertised["NPU"] == 8
    assert container["resources"]["requests"] == limits
    assert container["readinessProbe"] and container["livenessProbe"]


def _serve_app() -> dict[str, Any]:
    serve_config = yaml.safe_load(_manifest()["spec"]["serveConfigV2"])
    (app,) = serve_config["applications"]
    return app


def test_serve_config_builds_with_the_plugin_and_matches_the_multi_node_recipe() -> None:
    app = _serve_app()
    assert app["import_path"] == "ray_serve_npu:build_openai_app"
    (in_manifest,) = app["args"]["llm_configs"]
    recipes = ROOT / "recipes"
    file = recipes / "serve_multi_node.py"
    spec = importlib.util.spec_from_file_location("serve_multi_node", file)
    assert spec is not None and spec.loader is not None
    recipe = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(recipes))
        # The manifest names the path in the pods: the recipe's default.
        patch.delenv("MODEL_PATH", raising=False)
        spec.loader.exec_module(recipe)
    in_recipe = recipe.llm_config.model_dump(exclude_unset=True, mode="json")
    assert in_manifest == in_recipe


def test_worker_group_bounds_match_the_replica_bounds() -> None:
    (config,) = _serve_app()["args"]["llm_configs"]
    autoscaling = config["deployment_config"]["autoscaling_config"]
    worker = _worker()
    # One replica per worker pod: as many pods as replicas, no more.
    assert worker["minReplicas"] == autoscaling["min_replicas"]
    assert worker["maxReplicas"] == autoscaling["max_replicas"]


def test_every_pod_gets_the_api_key_from_the_secret() -> None:
    """Serve builds the app on any pod; the pod that does must have the key, or the
    endpoint would open without one."""
    cluster = _manifest()["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        (container,) = group["template"]["spec"]["containers"]
        keys = [e for e in container.get("env", []) if e["name"] == API_KEY_ENV_VAR]
        assert keys == [
            {
                "name": API_KEY_ENV_VAR,
                "valueFrom": {
                    "secretKeyRef": {"name": "deepseek-v4-flash-api-key", "key": "api-key"}
                },
            }
        ], container["name"]


def _cluster() -> dict[str, Any]:
    return _manifest()["spec"]["rayClusterConfig"]


def test_ray_token_authentication_is_on_with_the_token_from_a_secret() -> None:
    """KubeRay v1.7.0 passes the Secret's auth_token to every Ray container as
    RAY_AUTH_TOKEN, and refuses token mode without a rayVersion of 2.52 or later
    (ray-operator/controllers/ray/utils/validation.go)."""
    cluster = _cluster()
    assert cluster["authOptions"] == {"mode": "token", "secretName": "deepseek-v4-flash-ray-token"}
    major, minor, _ = (int(part) for part in cluster["rayVersion"].split("."))
    assert (major, minor) >= (2, 52)
    # The Ray the image installs: one version, said in the Dockerfile.
    (image_ray,) = re.findall(r"^ARG RAY_VERSION=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert cluster["rayVersion"] == image_ray


def test_gcs_fault_tolerance_uses_redis_with_the_password_from_a_secret() -> None:
    options = _cluster()["gcsFaultToleranceOptions"]
    # The default backend (redis) needs an address; no password in the manifest itself.
    assert options.get("backend", "redis") == "redis" and options["redisAddress"]
    assert options["redisPassword"] == {
        "valueFrom": {"secretKeyRef": {"name": "deepseek-v4-flash-redis", "key": "password"}}
    }
    (head,) = _cluster()["headGroupSpec"]["template"]["spec"]["containers"]
    # KubeRay rejects a Redis password given anywhere else once the options are set.
    assert "redis-password" not in _cluster()["headGroupSpec"]["rayStartParams"]
    set_by_kuberay = {"REDIS_PASSWORD", "RAY_REDIS_ADDRESS"}
    assert not [e for e in head.get("env", []) if e["name"] in set_by_kuberay]


def test_the_serve_service_leaves_the_head_out() -> None:
    """KubeRay keeps the head pod out of the Serve service (rayservice_types.go at v1.7.0),
    so no client stream goes through the head's proxy: through it, a head restart holds
    every stream of the ingress (tests/resilience/test_fake_npu_head_restart.py)."""
    assert _manifest()["spec"]["excludeHeadPodFromServeSvc"] is True


def test_liveness_does_not_wait_for_the_model_and_readiness_does() -> None:
    """A liveness probe on Serve's proxy fails until a replica runs, so it restarted the
    pod while the weights loaded; the raylet's health check answers within seconds."""
    (container,) = _worker()["template"]["spec"]["containers"]
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    # The dashboard agent's health endpoint, public under token authentication
    # (ray/dashboard/http_server_agent.py, PUBLIC_EXACT_PATHS).
    assert liveness["httpGet"] == {"path": "/api/healthz", "port": 52365}
    assert readiness["httpGet"] == {"path": "/-/healthz", "port": 8000}
    assert "initialDelaySeconds" not in readiness  # readiness never restarts a pod
