"""``nox -s bench``: what Ray Serve LLM adds on top of ``vllm serve``, on the fake-NPU tier.

One tiny engine, three ways, side by side on one fake cluster with NPUs and GPUs:

- ``direct``: vLLM's OpenAI server alone, as the Compose path runs it;
- ``serve-npu``: recipes/serve_npu.py's app (Ray Serve LLM, the ``npu`` kind);
- ``serve-gpu``: the same app with the ``gpu`` kind, on fake GPUs.

Every target gets the same engine settings (the recipe's, adapted to the fake
tier by :func:`ray_serve_npu.fake_npu.adapter.adapt_llm_config`). Rounds of load
points alternate between the targets, so that a slow spell of the machine hits
all of them; the npu kind is read against the gpu kind round by round. Not
against the ``cpu`` kind: Ray Serve LLM runs that one with vLLM's ``mp``
executor and every other kind with the Ray executor
(``get_initialization_kwargs`` in ``ray/llm/_internal/serve/engines/vllm/vllm_models.py``),
so only the gpu kind differs from the npu kind in the kind alone. CPU figures
of a tiny random model: ratios, not NPU throughput.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import runpy
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import bench
from bench.config import SweepConfig
from bench.results import PointResult, write_json
from bench.runner import run_point
from pydantic import BaseModel

from ray_serve_npu.fake_npu.adapter import adapt_llm_config
from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, environ, fake_npu_cluster
from ray_serve_npu.fake_npu.processes import (
    ProcessServer,
    free_port,
    start_process_group,
    stop_process_group,
    wait_until_ready,
)
from ray_serve_npu.fake_npu.tiny_model import make_tiny_model
from ray_serve_npu.fake_npu.vllm_plugins import FAKE_DEVICE_ENV_VAR, GPU_RESOURCE
from ray_serve_npu.vllm_cli import engine_kwarg_argv

from .compare import DIRECT, SERVE_GPU, SERVE_NPU, Comparison, plot_comparison, ratio_tables
from .levers import (
    DEFAULT,
    LEVERS,
    Lever,
    LeverError,
    by_cluster,
    deploy,
    haproxy_env,
    lever_table,
    select_levers,
)

#: recipes/, where the reader's sweep tool (``bench``) lives beside the recipe measured.
RECIPES = Path(bench.__file__).parents[1]
RECIPE = RECIPES / "serve_npu.py"
SERVE_READY_TIMEOUT_S = 600


def recipe_fields(model_dir: Path) -> dict[str, Any]:
    """The recipe's LLMConfig fields as the fake tier serves them."""
    fields, _changes = adapt_llm_config(runpy.run_path(str(RECIPE))["llm_config"], model_dir)
    return fields


#: One fake node with as many fake GPUs as NPUs, so that either kind's app fits.
BENCH_NODE = FakeNode(num_gpus=FakeNode().node_kind.devices_per_node)


def gpu_kind(fields: dict[str, Any]) -> dict[str, Any]:
    """The same app with the gpu kind, on fake GPUs: only the accelerator kind differs.

    Ray Serve LLM runs both kinds with vLLM's Ray executor. The fake platform asks
    Ray for GPUs in this app's replica and engine workers only.
    """
    gpu = copy.deepcopy(fields)
    gpu["accelerator_config"] = {"kind": "gpu"}
    # Ray's default placement for the gpu kind: one {"GPU": 1} bundle per worker.
    # An Ascend accelerator_type would name hardware the gpu kind has not.
    gpu.pop("accelerator_type", None)
    gpu.pop("placement_group_config", None)
    gpu["runtime_env"]["env_vars"][FAKE_DEVICE_ENV_VAR] = GPU_RESOURCE
    return gpu


def direct_argv(fields: dict[str, Any], model_dir: Path, port: int) -> list[str]:
    """vLLM's OpenAI server with the app's engine settings, as flags."""
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir)]
    argv += ["--served-model-name", fields["model_loading_config"]["model_id"]]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    for key, value in fields["engine_kwargs"].items():
        argv += engine_kwarg_argv(key, value)
    return argv


@contextlib.contextmanager
def direct_vllm(fields: dict[str, Any], model_dir: Path, workdir: Path) -> Iterator[str]:
    port = free_port()
    server = ProcessServer(f"http://127.0.0.1:{port}", workdir / "direct-vllm.log")
    env = {**os.environ, **fields["runtime_env"]["env_vars"]}
    process = start_process_group(
        direct_argv(fields, model_dir, port), cwd=workdir, env=env, log_file=server.log_file
    )
    try:
        wait_until_ready(server, process, SERVE_READY_TIMEOUT_S)
        yield server.base_url
    finally:
        stop_process_group(process)


@contextlib.contextmanager
def serve_apps(
    cluster: FakeNPUCluster, apps: dict[str, dict[str, Any]]
) -> Iterator[dict[str, str]]:
    """Each app on one Serve proxy under its own route prefix; their base URLs by name."""
    import ray
    from ray import serve

    from ray_serve_npu import build_openai_app

    port = free_port()
    # The replicas and engines log to their own files; the driver prints the figures.
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        urls = {}
        for name, fields in apps.items():
            app = build_openai_app({"llm_configs": [fields]})
            serve.run(app, name=name, route_prefix=f"/{name}", blocking=False)
            urls[name] = f"http://127.0.0.1:{port}/{name}"
        yield urls
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()


class BenchSettings(BaseModel):
    """The load of every point; small enough for two cores, long enough to stream."""

    concurrency: list[int] = [1, 8, 32]
    rounds: int = 5
    input_len: int = 256
    output_len: int = 64
    #: Requests per point: this many per client, and never fewer than ``min_prompts``.
    prompts_per_client: int = 4
    min_prompts: int = 16

    def num_prompts(self, concurrency: int) -> int:
        return max(self.min_prompts, self.prompts_per_client * concurrency)


def measure(
    urls: dict[str, str], model: str, tokenizer: Path, settings: BenchSettings, workdir: Path
) -> tuple[list[PointResult], list[Comparison]]:
    """Rounds of every (concurrency, target); the order of targets rotates each round."""
    results: list[PointResult] = []
    rounds: dict[tuple[str, int], list[PointResult]] = {}
    targets = list(urls)
    for warm_target in targets:  # first requests compile and allocate; keep them out
        warmup = point_config(urls[warm_target], model, tokenizer, settings, 1)
        run_point(warmup, warmup.points({})[0], workdir / f"warmup-{warm_target}")
    for round_index in range(settings.rounds):
        order = targets[round_index % len(targets) :] + targets[: round_index % len(targets)]
        for concurrency in settings.concurrency:
            for target in order:
                config = point_config(urls[target], model, tokenizer, settings, concurrency)
                point = config.points({})[0]
                where = workdir / f"round{round_index}-{target}-c{concurrency}"
                result = run_point(config, point, where)
                print(f"round {round_index + 1}/{settings.rounds} {target:>9} "
                      f"c={concurrency:<3} TTFT p50 {result.latency('ttft'):7.1f} ms  "
                      f"{result.output_tokens_per_s:8.1f} output tok/s  "
                      f"failed {result.failed}", flush=True)  # fmt: skip
                if result.error:
                    raise RuntimeError(f"{target} at concurrency {concurrency}: {result.error}")
                results.append(result)
                rounds.setdefault((target, concurrency), []).append(result)
    comparisons = [
        Comparison(
            target=target,
            concurrency=concurrency,
            ttft_p50_ms=[r.latency("ttft") for r in measured],
            output_tokens_per_s=[r.output_tokens_per_s for r in measured],
        )
        for (target, concurrency), measured in rounds.items()
    ]
    return results, comparisons


def point_config(
    url: str, model: str, tokenizer: Path, settings: BenchSettings, concurrency: int
) -> SweepConfig:
    return SweepConfig(
        base_url=url,
        model=model,
        tokenizer=str(tokenizer),
        concurrency=[concurrency],
        input_len=[settings.input_len],
        output_len=[settings.output_len],
        num_prompts=settings.num_prompts(concurrency),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ray_serve_npu_tooling.bench.paths", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out-dir", type=Path, default=Path("bench-fake-tier"))
    parser.add_argument("--rounds", type=int, default=BenchSettings().rounds)
    # Which Serve app deploys first changed the npu/gpu ratios more than the kind
    # did; run both orders to tell the two apart (docs/benchmarks.md).
    parser.add_argument("--deploy-first", choices=[SERVE_NPU, SERVE_GPU], default=SERVE_NPU)
    parser.add_argument(
        "--levers",
        type=lambda text: [name for name in text.split(",") if name],
        metavar="NAME,...",
        help="instead: Ray Serve LLM with each named request-path lever against its "
        f"defaults; one of {', '.join(n for n in LEVERS if n != DEFAULT)}, or all",
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(level) for level in text.split(",") if level],
        default=BenchSettings().concurrency,
        metavar="N,...",
    )
    args = parser.parse_args(argv)
    settings = BenchSettings(rounds=args.rounds, concurrency=args.concurrency)
    out = args.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    model_dir = make_tiny_model(Path(os.environ.get("RAY_SERVE_NPU_TMPDIR", out)) / "models")
    fields = recipe_fields(model_dir)
    model = fields["model_loading_config"]["model_id"]
    if args.levers is not None:
        names = list(LEVERS) if args.levers == ["all"] else args.levers
        try:
            levers = select_levers(names)
        except LeverError as error:
            parser.error(str(error))
        return measure_levers(levers, fields, model_dir, settings, out, started)
    with (
        fake_npu_cluster([BENCH_NODE]) as cluster,
        # serve_apps drives the cluster from this process.
        cluster.driver_env(),
        contextlib.ExitStack() as servers,
    ):
        print("starting direct vLLM and the two Serve apps", flush=True)
        urls = {DIRECT: servers.enter_context(direct_vllm(fields, model_dir, out))}
        apps = {SERVE_NPU: fields, SERVE_GPU: gpu_kind(fields)}
        if args.deploy_first == SERVE_GPU:
            apps = dict(reversed(apps.items()))
        urls |= servers.enter_context(serve_apps(cluster, apps))
        print(f"ready after {time.monotonic() - started:.0f} s", flush=True)
        results, comparisons = measure(urls, model, model_dir, settings, out / "points")
    write_json(results, out / "points.json")
    (out / "comparison.json").write_text(
        "[\n" + ",\n".join(c.model_dump_json() for c in comparisons) + "\n]\n"
    )
    tables = (
        f"{provenance()}\nServe apps deployed in this order: {', '.join(apps)}.\n\n"
        f"{ratio_tables(comparisons)}"
    )
    (out / "comparison.md").write_text(tables)
    print(tables)
    print(f"plots: {plot_comparison(comparisons, out / 'comparison.png')}")
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def measure_levers(
    levers: Sequence[Lever],
    fields: dict[str, Any],
    model_dir: Path,
    settings: BenchSettings,
    out: Path,
    started: float,
) -> int:
    """Every arm on a fake cluster with its Serve environment; each lever against the default."""
    model = fields["model_loading_config"]["model_id"]
    deploys = out / "deploys"
    deploys.mkdir(exist_ok=True)
    with contextlib.ExitStack() as clusters:
        urls: dict[str, str] = {}
        for group in by_cluster(levers):
            cluster_env = dict(group[0].cluster_env)
            if "RAY_SERVE_ENABLE_HA_PROXY" in cluster_env:
                cluster_env |= haproxy_env()
            print(f"starting a fake cluster for {', '.join(lever.name for lever in group)}"
                  f" with {group[0].cluster_env or 'Serve defaults'}", flush=True)  # fmt: skip
            with environ(cluster_env):
                cluster = clusters.enter_context(fake_npu_cluster([BENCH_NODE]))
            # Serve's HTTP servers on the node's own address: HAProxy reaches the
            # replicas' ports there (the Target's ip), not on 127.0.0.1.
            urls |= deploy(
                {**cluster.env(), **cluster_env},
                group,
                fields,
                cluster.node_ip(0),
                free_port(),
                deploys,
            )
        print(f"ready after {time.monotonic() - started:.0f} s: {urls}", flush=True)
        results, comparisons = measure(urls, model, model_dir, settings, out / "points")
    write_json(results, out / "points.json")
    (out / "levers.json").write_text(
        "[\n" + ",\n".join(c.model_dump_json() for c in comparisons) + "\n]\n"
    )
    table = f"{provenance()}\n\n{lever_table(comparisons)}"
    (out / "levers.md").write_text(table)
    print(table)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def provenance() -> str:
    """What produced the figures: they are CPU figures of a tiny random model."""
    import platform

    import ray
    import vllm

    return (
        f"Fake-NPU tier, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: vLLM {vllm.__version__} "
        f"(CPU build), Ray {ray.__version__}, tiny random model, "
        f"{os.cpu_count()} CPUs ({platform.machine()}). CPU figures, not NPU figures."
    )


if __name__ == "__main__":
    sys.exit(main())
