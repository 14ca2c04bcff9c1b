"""``nox -s bench``: what Ray Serve LLM adds on top of ``vllm serve``, on the fake-NPU tier.

One run, on one fake cluster with NPUs and GPUs, prints three tables:

1. the request path's capacity: the recipe's app with a mock engine that computes
   nothing (:mod:`.capacity`), so that what it carries, and the CPU it takes, are
   Serve's proxy, ingress and server path alone;
2. the paths with the tiny engine as fast as the CPU runs it (``unpaced``):
   ``direct`` (vLLM's OpenAI server alone, as the Compose path runs it), ``serve-npu``
   (recipes/serve_npu.py's app: Ray Serve LLM, the ``npu`` kind) and ``serve-gpu``
   (the same app with the ``gpu`` kind, on fake GPUs);
3. ``direct`` and ``serve-npu`` with the engine's steps held to NPU-like times
   (``npu-paced``, a simulation: :mod:`ray_serve_npu_tooling.npu_pacing`).

Every target gets the same engine settings (the recipe's, adapted to the fake
tier by :func:`ray_serve_npu.fake_npu.adapter.adapt_llm_config`) and one API key,
as the recipes are run (:func:`keyed_as_the_recipes`). The unpaced engine is
measured at fewer load levels than the paced one. Rounds of load
points alternate between the targets, so that a slow spell of the machine hits
all of them; each ratio is read round by round. The npu kind is read against the
gpu kind, not the ``cpu`` kind: Ray Serve LLM runs that one with vLLM's ``mp``
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

from ray_serve_npu.envs import API_KEY_ENV_VAR, CLIENT_API_KEY_ENV_VAR, FAKE_DEVICE_ENV_VAR
from ray_serve_npu.fake_npu import adapter
from ray_serve_npu.fake_npu.cluster import FakeNode, FakeNPUCluster, environ, fake_npu_cluster
from ray_serve_npu.fake_npu.direct import serve_vllm
from ray_serve_npu.fake_npu.processes import free_port
from ray_serve_npu.fake_npu.tiny_model import tiny_model
from ray_serve_npu.fake_npu.vllm_plugins import GPU_RESOURCE
from ray_serve_npu.ingress import fresh_api_key
from ray_serve_npu.vllm_cli import engine_kwarg_argv
from ray_serve_npu_tooling.npu_pacing import NPUStepPacing, paced_engine
from ray_serve_npu_tooling.serve_apps import run_apps

from .capacity import (
    capacity_table,
    measure_capacity,
    serve_path_cpu_seconds,
    with_mock_engine,
)
from .compare import (
    DIRECT,
    SERVE_GPU,
    SERVE_NPU,
    UNPACED_TARGET_CONCURRENCY,
    Comparison,
    plot_comparison,
    ratio_tables,
    targets,
)
from .levers import (
    DEFAULT,
    HA_PROXY,
    LEVERS,
    Lever,
    LeverError,
    by_cluster,
    deploy,
    haproxy_env,
    levers_markdown,
    select_levers,
)
from .profile import (
    ProfileError,
    ServePathProfile,
    flame_graphs,
    profile_request_path,
    request_path_processes,
)
from .soak import parse_duration, soak
from .soak_figures import SoakSettings
from .soak_figures import plot as plot_soak
from .soak_figures import summary as soak_summary

#: recipes/, where the reader's sweep tool (``bench``) lives beside the recipe measured.
RECIPES = Path(bench.__file__).parents[1]
RECIPE = RECIPES / "serve_npu.py"


def recipe_fields(model_dir: Path) -> dict[str, Any]:
    """The measured recipe's LLMConfig fields as the fake tier serves them."""
    return adapter.recipe_fields(RECIPE, model_dir)


#: One fake node with as many fake GPUs as NPUs, so that either kind's app fits.
BENCH_NODE = FakeNode(num_gpus=FakeNode().node_kind.devices_per_node)
#: Where every server the bench starts listens, and its clients connect.
LOOPBACK = "127.0.0.1"


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


def direct_args(fields: dict[str, Any], model_dir: Path) -> list[str]:
    """``vllm serve``'s arguments for the app's model and engine settings, as flags."""
    args = ["--model", str(model_dir)]
    args += ["--served-model-name", fields["model_loading_config"]["model_id"]]
    for key, value in fields["engine_kwargs"].items():
        args += engine_kwarg_argv(key, value)
    return args


@contextlib.contextmanager
def direct_vllm(fields: dict[str, Any], model_dir: Path, workdir: Path) -> Iterator[str]:
    """vLLM's OpenAI server alone, with the app's settings and environment; its base URL."""
    env = {**os.environ, **fields["runtime_env"]["env_vars"]}
    with serve_vllm(direct_args(fields, model_dir), env=env, workdir=workdir) as server:
        yield server.base_url


#: Where ``vllm serve`` reads its API key (vllm/envs.py), as the Compose recipes set it.
VLLM_SERVER_API_KEY_ENV_VAR = "VLLM_API_KEY"


@contextlib.contextmanager
def keyed_as_the_recipes() -> Iterator[None]:
    """One fresh API key on every path until the block ends, as the recipes run them:
    the plugin's, read where each Serve app is built; direct vLLM's, which the Compose
    recipes set; and the clients', which ``vllm bench serve`` sends."""
    key = fresh_api_key()
    keys = (API_KEY_ENV_VAR, VLLM_SERVER_API_KEY_ENV_VAR, CLIENT_API_KEY_ENV_VAR)
    with environ(dict.fromkeys(keys, key)):
        yield


@contextlib.contextmanager
def driving_bench_cluster() -> Iterator[FakeNPUCluster]:
    """A fake cluster of :data:`BENCH_NODE`, with this process as its driver (the Serve
    apps are deployed from here) until the block ends; Serve stops with it."""
    import ray
    from ray import serve

    with fake_npu_cluster([BENCH_NODE]) as cluster, cluster.driver_env():
        # The replicas and engines log to their own files; the driver prints the figures.
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        try:
            yield cluster
        finally:
            with contextlib.suppress(Exception):
                serve.shutdown()
            ray.shutdown()


def paced(fields: dict[str, Any]) -> dict[str, Any]:
    """The same app with the fake engine's steps held to NPU-like times (the defaults of
    :mod:`ray_serve_npu_tooling.npu_pacing`)."""
    held = copy.deepcopy(fields)
    env_vars = held["runtime_env"]["env_vars"]
    engine_kwargs, env = paced_engine(NPUStepPacing(), env_vars)
    held["engine_kwargs"].update(engine_kwargs)
    env_vars.update(env)
    return held


#: The engines the paths are compared with: the fake engine as fast as the CPU runs
#: it, and held to NPU-like step times (a simulation: ray_serve_npu_tooling.npu_pacing).
UNPACED = "unpaced"
NPU_PACED = "npu-paced"
REGIMES = (UNPACED, NPU_PACED)
#: The app with the mock engine, for the request path's capacity.
MOCK = "serve-mock"


class BenchSettings(BaseModel):
    """The load of every point; small enough for two cores, long enough to stream."""

    concurrency: list[int] = [1, 8, 32, 64]
    #: The unpaced engine in the paths' comparison: one stream, and the level whose
    #: throughput has a target (:data:`.compare.UNPACED_TARGET_CONCURRENCY`).
    unpaced_concurrency: list[int] = [1, UNPACED_TARGET_CONCURRENCY]
    #: The request path with the mock engine, up to where two cores saturate.
    capacity_concurrency: list[int] = [1, 8, 32, 64, 128]
    rounds: int = 5
    input_len: int = 256
    output_len: int = 64
    #: Requests per point: this many per client, and never fewer than ``min_prompts``.
    prompts_per_client: int = 4
    min_prompts: int = 16
    #: ``min_prompts`` with NPU-paced steps, where one stream's 64 tokens take about
    #: 3 s (44 ms a decode step): 16 requests one after the other would take 48 s.
    paced_min_prompts: int = 8

    #: The profile's load: one point, long enough to sample ``profile_seconds`` of it.
    profile_concurrency: int = 32
    profile_prompts_per_client: int = 16
    profile_seconds: int = 10

    def num_prompts(self, concurrency: int) -> int:
        return max(self.min_prompts, self.prompts_per_client * concurrency)


def regime_inputs(
    regime: str, fields: dict[str, Any], settings: BenchSettings
) -> tuple[dict[str, Any], BenchSettings]:
    """The app's fields and the load for ``regime``: NPU-paced steps, and fewer requests
    per point at low concurrency, where paced answers take seconds each."""
    if regime != NPU_PACED:
        return fields, settings
    return paced(fields), settings.model_copy(update={"min_prompts": settings.paced_min_prompts})


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
    parser.add_argument("--out-dir", type=Path, default=Path("build") / "bench")
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
        "--against-direct",
        action="store_true",
        help="with --levers: direct vLLM too, in the same rounds, and each arm against it",
    )
    parser.add_argument(
        "--regimes",
        type=lambda text: [name for name in text.split(",") if name],
        metavar="NAME,...",
        help=f"which engines to compare the paths with: {', '.join(REGIMES)} (default both; "
        f"with --levers, one of them, default {UNPACED})",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead: sample with py-spy where the unpaced serve-npu app's request path "
        "spends its CPU under load",
    )
    parser.add_argument(
        "--no-capacity",
        action="store_true",
        help="skip the request path's capacity with the mock engine",
    )
    parser.add_argument(
        "--soak",
        type=soak_duration,
        metavar="DURATION",
        help="instead: the unpaced serve-npu app under steady load for DURATION (30m, "
        "1h), minute by minute: errors, latency percentiles and each Serve process's memory",
    )
    parser.add_argument(
        "--soak-concurrency",
        type=int,
        default=SoakSettings.model_fields["concurrency"].default,
        metavar="N",
        help="with --soak: the streaming clients that keep the app busy",
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(level) for level in text.split(",") if level],
        metavar="N,...",
        help=f"the load levels of every regime (default {BenchSettings().concurrency}, and "
        f"{BenchSettings().unpaced_concurrency} for the unpaced paths' comparison)",
    )
    args = parser.parse_args(argv)
    if args.regimes == []:
        parser.error(f"--regimes: name at least one of {', '.join(REGIMES)}, or leave it out")
    regimes = args.regimes or ([UNPACED] if args.levers is not None else list(REGIMES))
    if unknown := sorted(set(regimes) - set(REGIMES)):
        parser.error(f"--regimes: unknown {', '.join(unknown)}; choose from {', '.join(REGIMES)}")
    if args.levers is not None and len(regimes) != 1:
        parser.error(f"--regimes: a lever run takes one regime; choose {' or '.join(REGIMES)}")
    if args.against_direct and args.levers is None:
        parser.error("--against-direct: it adds direct vLLM to a lever run; add --levers NAME,...")
    if args.soak is not None and (args.levers is not None or args.profile):
        parser.error("--soak: it is a run of its own; leave out --levers and --profile")
    if args.soak_concurrency < 1:
        parser.error(
            f"--soak-concurrency: {args.soak_concurrency} clients load nothing; give 1 or more"
        )
    levels = (
        {}
        if args.concurrency is None
        else dict.fromkeys(("concurrency", "unpaced_concurrency"), args.concurrency)
    )
    settings = BenchSettings(rounds=args.rounds, **levels)
    levers = None
    if args.levers is not None:
        names = list(LEVERS) if args.levers == ["all"] else args.levers
        try:
            levers = select_levers(names)
        except LeverError as error:
            parser.error(str(error))
    # Only now that the arguments hold: the output and the tiny model.
    out = args.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    model_dir = tiny_model(out)
    fields = recipe_fields(model_dir)
    if levers is not None:
        (regime,) = regimes
        return measure_levers(
            levers,
            *regime_inputs(regime, fields, settings),
            model_dir,
            out,
            started,
            regime=regime,
            against_direct=args.against_direct,
        )
    if args.profile:
        return profile_serve_npu(fields, model_dir, settings, out / "profile", started)
    if args.soak is not None:
        soak_settings = SoakSettings(duration_s=args.soak, concurrency=args.soak_concurrency)
        return soak_serve_npu(fields, soak_settings, out / "soak", started)
    with driving_bench_cluster() as cluster, keyed_as_the_recipes():
        port = free_port()
        sections = [provenance()]
        if not args.no_capacity:
            sections.append(request_path_capacity(cluster, fields, model_dir, settings, out, port))
        for regime in regimes:
            regime_fields, regime_settings = regime_inputs(regime, fields, settings)
            apps = {SERVE_NPU: regime_fields}
            if regime == UNPACED:
                apps[SERVE_GPU] = gpu_kind(regime_fields)
                regime_settings = regime_settings.model_copy(
                    update={"concurrency": settings.unpaced_concurrency}
                )
            if args.deploy_first == SERVE_GPU:
                apps = dict(reversed(apps.items()))
            sections.append(
                compare_paths(regime, regime_fields, apps, model_dir, regime_settings, out, port)
            )
    tables = "\n".join(sections)
    (out / "comparison.md").write_text(tables)
    print(tables)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def request_path_capacity(
    cluster: FakeNPUCluster,
    fields: dict[str, Any],
    model_dir: Path,
    settings: BenchSettings,
    out: Path,
    port: int,
) -> str:
    """The recipe's app with the streaming mock engine: what Serve's path carries alone."""
    from ray import serve

    model = fields["model_loading_config"]["model_id"]
    print("deploying the app with the mock engine", flush=True)
    url = run_apps({MOCK: {"llm_configs": [with_mock_engine(fields)]}}, host=LOOPBACK,
                   port=port)[MOCK]  # fmt: skip
    try:
        points = measure_capacity(
            lambda level: point_config(url, model, model_dir, settings, level),
            settings.capacity_concurrency,
            settings.rounds,
            out / "capacity",
            cpu_seconds=lambda: serve_path_cpu_seconds(cluster.processes()),
        )
    finally:
        serve.delete(MOCK)
    write_models(points, out / "capacity.json")
    return f"## Request path, mock engine\n\n{capacity_table(points)}"


def profile_serve_npu(
    fields: dict[str, Any], model_dir: Path, settings: BenchSettings, out: Path, started: float
) -> int:
    """The unpaced serve-npu app under one load point, its request path sampled by py-spy."""
    from ray import serve

    model = fields["model_loading_config"]["model_id"]
    level = settings.profile_concurrency
    load = settings.model_copy(update={"prompts_per_client": settings.profile_prompts_per_client})
    with driving_bench_cluster() as cluster:
        url = run_apps({SERVE_NPU: {"llm_configs": [fields]}}, host=LOOPBACK,
                       port=free_port())[SERVE_NPU]  # fmt: skip
        try:
            warmup = point_config(url, model, model_dir, settings, 1)
            run_point(warmup, warmup.points({})[0], out / "warmup")
            pids = request_path_processes(cluster.processes(), SERVE_NPU)
            print(f"sampling {', '.join(pids)} for {settings.profile_seconds} s at c={level}",
                  flush=True)  # fmt: skip
            result, profiles = profile_request_path(
                point_config(url, model, model_dir, load, level),
                pids,
                settings.profile_seconds,
                out,
            )
        except ProfileError as error:
            print(f"profile: {error}", file=sys.stderr)
            return 1
        finally:
            serve.delete(SERVE_NPU)
    profile = ServePathProfile(
        app=SERVE_NPU,
        concurrency=level,
        output_tokens_per_s=result.output_tokens_per_s,
        processes=profiles,
    )
    (out / "profile.json").write_text(profile.model_dump_json(indent=1) + "\n")
    flame_graphs(profiles, out, lambda role: f"{role}, {SERVE_NPU} unpaced at c={level} "
                 "(fake-NPU tier: vLLM CPU build, tiny random model)")  # fmt: skip
    table = f"{provenance()}\n\n{profile.markdown()}"
    (out / "profile.md").write_text(table)
    print(table)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def soak_duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def soak_serve_npu(
    fields: dict[str, Any], settings: SoakSettings, out: Path, started: float
) -> int:
    """The unpaced serve-npu app under :mod:`.soak`'s steady load; writes soak.json,
    soak.md and soak.png to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    command = f"nox -s bench -- --soak {settings.duration_s // 60}m"
    if settings.concurrency != SoakSettings.model_fields["concurrency"].default:
        command += f" --soak-concurrency {settings.concurrency}"
    with driving_bench_cluster() as cluster:
        url = run_apps({SERVE_NPU: {"llm_configs": [fields]}}, host=LOOPBACK,
                       port=free_port())[SERVE_NPU]  # fmt: skip
        model = fields["model_loading_config"]["model_id"]
        run = soak(url, model, settings, cluster.processes, command)
    (out / "soak.json").write_text(run.model_dump_json(indent=1) + "\n")
    plot_soak(run, out / "soak.png")
    table = f"{provenance()}\n\n{soak_summary(run)}"
    (out / "soak.md").write_text(table)
    print(table)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def compare_paths(
    regime: str,
    fields: dict[str, Any],
    apps: dict[str, dict[str, Any]],
    model_dir: Path,
    settings: BenchSettings,
    out: Path,
    port: int,
) -> str:
    """Direct vLLM against the Serve apps, all with ``fields``' engine settings, in rounds."""
    from ray import serve

    model = fields["model_loading_config"]["model_id"]
    workdir = out / regime
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{regime}: starting direct vLLM and {', '.join(apps)}", flush=True)
    with direct_vllm(fields, model_dir, workdir) as direct_url:
        urls = {DIRECT: direct_url}
        args = {name: {"llm_configs": [app]} for name, app in apps.items()}
        urls |= run_apps(args, host=LOOPBACK, port=port)
        try:
            results, comparisons = measure(urls, model, model_dir, settings, workdir / "points")
        finally:
            for name in apps:
                serve.delete(name)
    write_json(results, workdir / "points.json")
    write_models(comparisons, workdir / "comparison.json")
    plot = plot_comparison(comparisons, workdir / "comparison.png")
    return (
        f"## {regime}\n\nServe apps deployed in this order: {', '.join(apps)}. "
        f"Plot: {plot.relative_to(out)}.\n\n{ratio_tables(comparisons)}\n"
        f"{targets(comparisons, paced=regime == NPU_PACED)}"
    )


def serve_arms(
    levers: Sequence[Lever],
    fields: dict[str, Any],
    deploys: Path,
    clusters: contextlib.ExitStack,
) -> dict[str, str]:
    """Each arm's app on a fake cluster with its Serve environment, kept in ``clusters``.

    Returns each arm's base URL; the deploys' logs are in ``deploys``.
    """
    urls: dict[str, str] = {}
    for group in by_cluster(levers):
        cluster_env = dict(group[0].cluster_env)
        if HA_PROXY.items() <= cluster_env.items():
            # Entered first, so its files go after the cluster, entered below, stops.
            cluster_env |= clusters.enter_context(haproxy_env())
        print(f"starting a fake cluster for {', '.join(lever.name for lever in group)}"
              f" with {group[0].cluster_env or 'Serve defaults'}", flush=True)  # fmt: skip
        with environ(cluster_env):
            cluster = clusters.enter_context(fake_npu_cluster([BENCH_NODE]))
        # Serve's HTTP servers on 127.0.0.1, not on the fake node's own address:
        # HAProxy reaches a replica on its own node at 127.0.0.1
        # (serve/_private/haproxy.py:2056-2057 at 2.60.0), and the replica
        # listens on Serve's HTTP host (serve/_private/http_util.py:784). The
        # clusters share the address: a replica whose port another cluster
        # holds takes the next one (replica.py:2324-2362).
        urls |= deploy(
            {**cluster.env(), **cluster_env}, group, fields, LOOPBACK, free_port(), deploys
        )
    return urls


def measure_levers(
    levers: Sequence[Lever],
    fields: dict[str, Any],
    settings: BenchSettings,
    model_dir: Path,
    out: Path,
    started: float,
    *,
    regime: str = UNPACED,
    against_direct: bool = False,
) -> int:
    """Every arm on a fake cluster with its Serve environment; each lever against the
    default and, ``against_direct``, each arm against direct vLLM measured beside them.
    ``fields`` and ``settings`` are ``regime``'s (:func:`regime_inputs`)."""
    model = fields["model_loading_config"]["model_id"]
    deploys = out / "deploys"
    deploys.mkdir(exist_ok=True)
    with contextlib.ExitStack() as clusters:
        urls: dict[str, str] = {}
        if against_direct:
            urls[DIRECT] = clusters.enter_context(direct_vllm(fields, model_dir, deploys))
        urls |= serve_arms(levers, fields, deploys, clusters)
        print(f"ready after {time.monotonic() - started:.0f} s: {urls}", flush=True)
        results, comparisons = measure(urls, model, model_dir, settings, out / "points")
    write_json(results, out / "points.json")
    write_models(comparisons, out / "levers.json")
    tables = levers_markdown(comparisons, paced=regime == NPU_PACED)
    table = f"{provenance()}\n\nEngine: {regime}.\n\n{tables}"
    (out / "levers.md").write_text(table)
    print(table)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


def write_models(models: Sequence[BaseModel], path: Path) -> None:
    """A JSON list of ``models``, one per line."""
    path.write_text("[\n" + ",\n".join(m.model_dump_json() for m in models) + "\n]\n")


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
