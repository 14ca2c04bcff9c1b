"""``nox -s bench -- --levers``: Ray Serve LLM's request-path levers against its defaults.

Each lever is one way to run the recipe's app (recipes/serve_npu.py, as the
fake tier adapts it) that differs from the default in one setting. Every arm
runs its own tiny engine; the arms are measured in rounds that rotate their
order, so that a slow spell of the shared machine hits all of them, and each
lever is read against the default round by round.

Serve reads its own flags (``RAY_SERVE_ENABLE_DIRECT_INGRESS``,
``RAY_SERVE_ENABLE_HA_PROXY``) once per process, at import of
``ray/serve/_private/constants.py``, in the controller, the proxies and the
replicas, and Ray Serve LLM's builder reads ``RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING``
in the process that builds the app (``ray/llm/_internal/serve/constants.py``).
So a lever with a cluster environment gets a fake cluster of its own, started
with it, and every app is built and deployed by a child process with the lever's
environment, which exits once Serve runs the app (Serve's controller is detached).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import bench
from pydantic import BaseModel

from ray_serve_npu_tooling.serve_apps import run_apps

from .compare import (
    DEFAULT,
    DIRECT,
    Comparison,
    KindComparison,
    ratio_cell,
    ratio_tables,
    targets,
)


class Lever(BaseModel, frozen=True):
    """One arm: the recipe's app with one request-path setting changed."""

    name: str
    #: Environment of ``ray start`` (so of Serve's controller, proxies and replicas).
    cluster_env: dict[str, str] = {}
    #: Environment of the process that builds and deploys the app.
    build_env: dict[str, str] = {}
    #: Merged into the LLMConfig's ``experimental_configs``.
    experimental_configs: dict[str, Any] = {}
    #: ``ingress_deployment_config`` of Ray Serve LLM's ``build_openai_app``.
    ingress_deployment_config: dict[str, Any] = {}
    #: Where clients connect: Serve's HTTP port (its proxy, or HAProxy), or the
    #: ingress replica's own HTTP server (direct ingress, no proxy in between).
    entry: Literal["proxy", "replica"] = "proxy"

    def cluster_key(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.cluster_env.items()))


HA_PROXY = {"RAY_SERVE_ENABLE_HA_PROXY": "1"}

#: The arms, default first. Each lever exists in ray 2.56.1, 2.57.1 and 2.60.0
#: (docs/tuning.md cites where).
LEVERS: dict[str, Lever] = {
    lever.name: lever
    for lever in (
        Lever(name=DEFAULT),
        # Ray Serve LLM's default is 50 ms (MODEL_RESPONSE_BATCH_TIMEOUT_MS); 0
        # hands each engine output on as it comes (utils/batcher.py).
        Lever(
            name="stream-batching-0ms",
            experimental_configs={"stream_batching_interval_ms": 0},
        ),
        # The ingress deployment defaults to one replica (autoscaling 1 to 1).
        Lever(name="ingress-replicas-2", ingress_deployment_config={"num_replicas": 2}),
        # Serve's proxy stays (head node only), but each ingress replica also
        # serves HTTP on a port of its own; clients connect to that port.
        Lever(
            name="direct-ingress",
            cluster_env={"RAY_SERVE_ENABLE_DIRECT_INGRESS": "1"},
            entry="replica",
        ),
        # HAProxy in place of Serve's proxy, in front of the replicas' own ports.
        Lever(name="ha-proxy", cluster_env=HA_PROXY),
        # The LLM server is the ingress; needs HAProxy (serve/_private/build_app.py).
        Lever(
            name="direct-streaming",
            cluster_env=HA_PROXY,
            build_env={"RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING": "1"},
        ),
    )
}


class LeverError(ValueError):
    """Bad ``--levers`` input: the message names the flag and the fix."""


def select_levers(names: Sequence[str]) -> list[Lever]:
    """The default and the named levers, in the order of :data:`LEVERS`."""
    unknown = sorted(set(names) - set(LEVERS))
    if unknown:
        raise LeverError(
            f"--levers: {', '.join(unknown)} is not a lever; choose from "
            f"{', '.join(name for name in LEVERS if name != DEFAULT)}"
        )
    return [lever for name, lever in LEVERS.items() if name == DEFAULT or name in names]


def app_args(lever: Lever, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``build_openai_app``'s argument for this arm: the recipe's fields with the lever's change."""
    config = json.loads(json.dumps(fields, default=str))
    if lever.experimental_configs:
        config["experimental_configs"] = {
            **config.get("experimental_configs", {}),
            **lever.experimental_configs,
        }
    args: dict[str, Any] = {"llm_configs": [config]}
    if lever.ingress_deployment_config:
        args["ingress_deployment_config"] = dict(lever.ingress_deployment_config)
    return args


def by_cluster(levers: Sequence[Lever]) -> list[list[Lever]]:
    """The arms grouped by the cluster they need, in first-seen order."""
    groups: dict[tuple[tuple[str, str], ...], list[Lever]] = {}
    for lever in levers:
        groups.setdefault(lever.cluster_key(), []).append(lever)
    return list(groups.values())


@contextlib.contextmanager
def haproxy_env() -> Iterator[dict[str, str]]:
    """HAProxy's files and fixed ports, private to one cluster; the files' directory
    goes on exit.

    Serve's defaults are shared paths under /tmp/haproxy-serve and ports 8404
    (stats) and 9101 (Prometheus), which HAProxy binds on every interface
    (``ray/serve/_private/haproxy_templates.py``). The directory is short: Serve
    adds a 56-character directory below it, and HAProxy refuses a log socket
    path longer than a Unix socket's 108 bytes.
    """
    from ray_serve_npu.fake_npu.processes import free_port

    with tempfile.TemporaryDirectory(
        prefix="rsn-hap-", dir="/tmp", ignore_cleanup_errors=True
    ) as directory:
        base = Path(directory)
        yield {
            "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": str(base / "haproxy.cfg"),
            "RAY_SERVE_HAPROXY_SOCKET_PATH": str(base / "admin.sock"),
            "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": str(base),
            "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": str(base / "server-state"),
            "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": str(base / "metrics.sock"),
            "RAY_SERVE_HAPROXY_STATS_PORT": str(free_port()),
            "RAY_SERVE_HAPROXY_METRICS_PORT": str(free_port()),
        }


def deploy(
    cluster_env: Mapping[str, str],
    levers: Sequence[Lever],
    fields: Mapping[str, Any],
    host: str,
    port: int,
    workdir: Path,
) -> dict[str, str]:
    """Deploy the arms on the cluster in ``cluster_env`` (with its driver variables); their URLs.

    One child process per build environment: the builder's flags are read at import.
    """
    urls: dict[str, str] = {}
    groups: dict[tuple[tuple[str, str], ...], list[Lever]] = {}
    for lever in levers:
        groups.setdefault(tuple(sorted(lever.build_env.items())), []).append(lever)
    for build_env, group in groups.items():
        spec = {
            "host": host,
            "port": port,
            "apps": {
                lever.name: {"args": app_args(lever, fields), "entry": lever.entry}
                for lever in group
            },
        }
        stem = f"deploy-{group[0].name}"
        spec_file = workdir / f"{stem}.json"
        spec_file.write_text(json.dumps(spec, indent=2))
        out_file = workdir / f"{stem}-urls.json"
        with (workdir / f"{stem}.log").open("w") as log:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ray_serve_npu_tooling.bench.levers",
                    str(spec_file),
                    str(out_file),
                ],
                # recipes/, where the reader's sweep tool (`bench`) is importable.
                cwd=Path(bench.__file__).parents[1],
                env={**os.environ, **cluster_env, **dict(build_env)},
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode:
            raise RuntimeError(
                f"deploying {[lever.name for lever in group]} failed ({done.returncode}); "
                f"see {workdir / f'{stem}.log'}"
            )
        urls |= json.loads(out_file.read_text())
    return urls


def _deploy_main(spec_file: Path, out_file: Path) -> None:
    """The child process of :func:`deploy`: start Serve, run the apps, write their URLs."""
    import ray
    from ray.serve.context import _get_global_client

    spec = json.loads(spec_file.read_text())
    host, port = spec["host"], spec["port"]
    ray.init(logging_level="ERROR", log_to_driver=False)
    apps = {name: app["args"] for name, app in spec["apps"].items()}
    urls = run_apps(apps, host=host, port=port)
    for name, app in spec["apps"].items():
        if app["entry"] == "replica":
            controller = _get_global_client()._controller
            groups = ray.get(controller.get_target_groups.remote(name))
            targets = [t for g in groups if g.protocol == "HTTP" for t in g.targets]
            if len(targets) != 1:
                raise RuntimeError(f"{name}: expected one direct-ingress target, got {groups}")
            # The replica listens on Serve's HTTP host, whatever the Target's ip
            # (serve/_private/http_util.py:784 at 2.60.0).
            urls[name] = f"http://{host}:{targets[0].port}/{name}"
        print(f"{name}: {urls[name]}", flush=True)
    out_file.write_text(json.dumps(urls))


def lever_table(comparisons: Sequence[Comparison]) -> str:
    """Each lever against the default, round by round, in Markdown (direct vLLM, where
    measured beside them, is no lever)."""
    by = {(c.target, c.concurrency): c for c in comparisons}
    levels = sorted({c.concurrency for c in comparisons})
    names = [n for n in dict.fromkeys(c.target for c in comparisons) if n not in (DEFAULT, DIRECT)]
    lines = [
        "Each lever / the default, round by round: median ratio (range over the rounds):",
        "",
        "| lever | concurrency | TTFT p50 default (ms) | TTFT p50 lever (ms) | TTFT ratio "
        "| output tok/s default | output tok/s lever | throughput ratio | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in names:
        for level in levels:
            default, lever = by[DEFAULT, level], by[name, level]
            paired = KindComparison.of(lever, default)
            lines.append(
                f"| {name} | {level} | {default.ttft:.1f} | {lever.ttft:.1f} "
                f"| {ratio_cell(paired.ttft_ratios)} | {default.throughput:.1f} "
                f"| {lever.throughput:.1f} | {ratio_cell(paired.throughput_ratios)} "
                f"| {verdict(paired.throughput_ratios)} |"
            )
    return "\n".join(lines) + "\n"


def levers_markdown(comparisons: Sequence[Comparison], *, paced: bool) -> str:
    """A lever run's tables: each lever against the default and, where direct vLLM ran
    beside the arms, each arm against it with the request path's targets."""
    parts = [lever_table(comparisons)]
    if any(c.target == DIRECT for c in comparisons):
        for arm in dict.fromkeys(c.target for c in comparisons if c.target != DIRECT):
            parts.append(ratio_tables(comparisons, arm))
            parts.append(targets(comparisons, paced=paced, target=arm))
    return "\n".join(part for part in parts if part)


def verdict(throughput_ratios: Sequence[float]) -> str:
    """Faster or slower only when every round leans the same way."""
    if min(throughput_ratios) > 1:
        return "faster every round"
    if max(throughput_ratios) < 1:
        return "slower every round"
    return "within noise"


if __name__ == "__main__":
    _deploy_main(Path(sys.argv[1]), Path(sys.argv[2]))
