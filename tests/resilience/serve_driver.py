"""A Ray driver for the resilience tests, run as its own process against a fake NPU cluster.

The tests run it as ``python serve_driver.py COMMAND ...`` with ``RAY_ADDRESS`` set,
so that the pytest process never connects to Ray itself (other test modules may
hold a Ray session of their own there). Each command writes its answer, one JSON
document, to the file named by ``--answer``: not to stdout, where Ray streams the
replicas' and engine workers' log lines at any moment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import ray
from ray import serve

#: Ray Serve names replica actors ``SERVE_REPLICA::<app>#<deployment>#<id>``.
REPLICA_ACTOR_PREFIX = "SERVE_REPLICA::"
SERVE_NAMESPACE = "serve"


def recipe_llm_config(
    recipe: Path, model_dir: Path, engine_kwargs: dict[str, object], env_vars: dict[str, str]
) -> dict[str, object]:
    """The recipe's ``llm_config`` as the fake tier serves it, with the given settings on top."""
    from ray_serve_npu.fake_npu.adapter import recipe_fields

    fields = recipe_fields(recipe, model_dir)
    fields["engine_kwargs"].update(engine_kwargs)
    fields["runtime_env"]["env_vars"].update(env_vars)
    return fields


def deploy(settings_file: Path, port: int, app_name: str) -> dict[str, object]:
    """Start Serve's HTTP proxy on ``port`` and run the recipe's app, built by the plugin.

    ``settings_file`` is JSON: ``recipe``, ``model_dir``, ``engine_kwargs``, ``env_vars``
    and ``ingress_options`` (the ingress's deployment options).
    """
    from ray_serve_npu_tooling.serve_apps import run_apps

    # Before the recipe runs: Serve's proxy must never take the pages' port 8000.
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    settings = json.loads(settings_file.read_text())
    llm_config = recipe_llm_config(
        Path(settings["recipe"]),
        Path(settings["model_dir"]),
        settings["engine_kwargs"],
        settings["env_vars"],
    )
    started = time.monotonic()
    app_args = {"llm_configs": [llm_config]}
    if settings["ingress_options"]:
        app_args["ingress_deployment_config"] = settings["ingress_options"]
    run_apps({app_name: app_args}, host="127.0.0.1", port=port, prefixed=False)
    return {
        "app": app_name,
        "ready_s": round(time.monotonic() - started, 1),
        "metrics_urls": metrics_urls(),
    }


def llm_replica_names(deployment_prefix: str) -> list[str]:
    """The actor names of the replicas whose deployment name starts with ``deployment_prefix``."""
    names = [
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["namespace"] == SERVE_NAMESPACE and actor["name"].startswith(REPLICA_ACTOR_PREFIX)
    ]
    return [name for name in names if name.split("#")[1].startswith(deployment_prefix)]


def replica_pids(deployment_prefix: str) -> dict[str, object]:
    """The process id of each live replica of the deployments named ``deployment_prefix*``."""
    pids = {
        name: ray.get(
            ray.get_actor(name, namespace=SERVE_NAMESPACE).__ray_call__.remote(
                lambda _replica: os.getpid()
            ),
            timeout=60,
        )
        for name in llm_replica_names(deployment_prefix)
    }
    if not pids:
        raise SystemExit(f"no live replica of a deployment named {deployment_prefix}*")
    return {"pids": pids}


def metrics_urls() -> list[str]:
    """Each live node's Prometheus endpoint, where Ray exports Serve's and the engine's metrics."""
    return [
        f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"
        for node in ray.nodes()
        if node["Alive"]
    ]


def app_status(app_name: str) -> dict[str, object]:
    """Serve's status of the app: ``RUNNING`` once every deployment of it is healthy."""
    application = serve.status().applications.get(app_name)
    return {"status": application.status if application else "NOT_FOUND"}


def shutdown() -> dict[str, object]:
    serve.shutdown()
    return {"shutdown": True}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answer", type=Path, required=True)
    commands = parser.add_subparsers(dest="command", required=True)
    deploy_parser = commands.add_parser("deploy")
    deploy_parser.add_argument("settings_file", type=Path)
    deploy_parser.add_argument("--port", type=int, required=True)
    deploy_parser.add_argument("--app", required=True)
    pids_parser = commands.add_parser("replica-pids")
    pids_parser.add_argument("deployment_prefix")
    status_parser = commands.add_parser("status")
    status_parser.add_argument("app")
    commands.add_parser("shutdown")
    args = parser.parse_args(argv)

    ray.init(logging_level="ERROR")
    if args.command == "deploy":
        result = deploy(args.settings_file, args.port, args.app)
    elif args.command == "replica-pids":
        result = replica_pids(args.deployment_prefix)
    elif args.command == "status":
        result = app_status(args.app)
    else:
        result = shutdown()
    args.answer.write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
