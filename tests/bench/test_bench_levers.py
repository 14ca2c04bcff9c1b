"""``nox -s bench -- --levers``: the arms it builds, the clusters it groups them on, its table.

No Ray cluster: these check what the lever mode would deploy and how it reads the
rounds. The flags' names and defaults are checked against the installed Ray.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray_serve_npu_tooling.bench.compare import DEFAULT, DIRECT, Comparison, ratio_tables, targets
from ray_serve_npu_tooling.bench.levers import (
    LEVERS,
    LeverError,
    app_args,
    by_cluster,
    lever_table,
    levers_markdown,
    select_levers,
    verdict,
)
from ray_serve_npu_tooling.bench.paths import (
    NPU_PACED,
    UNPACED,
    BenchSettings,
    direct_args,
    main,
    recipe_fields,
    regime_inputs,
)
from ray_serve_npu_tooling.npu_pacing import (
    PACED_CPU_WORKER,
    PACING_ENV_VAR,
    VLLM_COPY_ENV_VAR,
    NPUStepPacing,
)

from ray_serve_npu.envs import API_KEY_ENV_VAR, CLIENT_API_KEY_ENV_VAR


@pytest.fixture
def arguments_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail fast where ``main`` gets past its arguments: it would start a bench run."""
    from ray_serve_npu_tooling.bench import paths

    def refuse(out: Path) -> None:
        raise AssertionError("main accepted the arguments and began a bench run")

    monkeypatch.setattr(paths, "tiny_model", refuse)


def comparison(target: str, concurrency: int, ttft: list[float], tput: list[float]) -> Comparison:
    return Comparison(
        target=target, concurrency=concurrency, ttft_p50_ms=ttft, output_tokens_per_s=tput
    )


def test_every_run_has_the_default_first() -> None:
    assert [lever.name for lever in select_levers(["ha-proxy"])] == [DEFAULT, "ha-proxy"]
    assert select_levers([])[0].name == DEFAULT


def test_an_unknown_lever_is_named_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(
        LeverError, match="direct-ingres is not a lever; choose from .*direct-ingress"
    ):
        select_levers(["direct-ingres"])
    with pytest.raises(SystemExit) as stopped:
        main(["--levers", "fast"])
    assert stopped.value.code == 2
    assert "--levers: fast is not a lever" in capsys.readouterr().err


def test_each_lever_changes_one_thing_of_the_recipes_app(tiny_model_dir: Path) -> None:
    fields = recipe_fields(tiny_model_dir)
    default = app_args(LEVERS[DEFAULT], fields)
    assert default["llm_configs"][0]["engine_kwargs"] == fields["engine_kwargs"]
    assert "ingress_deployment_config" not in default
    batching = app_args(LEVERS["stream-batching-0ms"], fields)
    assert batching["llm_configs"][0]["experimental_configs"] == {"stream_batching_interval_ms": 0}
    batching["llm_configs"][0].pop("experimental_configs")
    assert batching == default
    ingress = app_args(LEVERS["ingress-replicas-2"], fields)
    assert ingress.pop("ingress_deployment_config") == {"num_replicas": 2}
    assert ingress == default


def test_the_batching_lever_is_a_key_ray_serve_llm_reads() -> None:
    from ray.llm._internal.serve.core.server.llm_server import LLMServer
    from ray.serve.llm import LLMConfig

    def interval(experimental_configs: dict[str, int]) -> float:
        # No server and no engine: the method reads only the config.
        llm_config = LLMConfig(
            model_loading_config={"model_id": "m"}, experimental_configs=experimental_configs
        )
        return LLMServer._get_batch_interval_ms(SimpleNamespace(_llm_config=llm_config))

    assert interval({}) == 50  # Ray Serve LLM's default
    assert interval(LEVERS["stream-batching-0ms"].experimental_configs) == 0


def test_serve_wide_flags_get_clusters_of_their_own() -> None:
    groups = [[lever.name for lever in group] for group in by_cluster(list(LEVERS.values()))]
    assert groups == [
        [DEFAULT, "stream-batching-0ms", "ingress-replicas-2"],
        ["direct-ingress"],
        # Direct streaming needs HAProxy (ray/serve/_private/build_app.py).
        ["ha-proxy", "direct-streaming"],
    ]


def test_the_levers_flags_are_ray_serves_and_off_by_default() -> None:
    from ray.llm._internal.serve import constants as llm_constants
    from ray.serve._private import constants as serve_constants

    for lever in LEVERS.values():
        for name in {**lever.cluster_env, **lever.build_env}:
            module = serve_constants if hasattr(serve_constants, name) else llm_constants
            assert getattr(module, name) is False, name


def test_the_lever_table_pairs_each_round_with_the_default() -> None:
    table = lever_table(
        [
            comparison(DEFAULT, 1, [80, 160, 80], [200, 100, 200]),
            comparison("ha-proxy", 1, [40, 80, 40], [300, 150, 300]),
            comparison(DEFAULT, 32, [400, 400, 400], [1000, 1000, 1000]),
            comparison("ha-proxy", 32, [400, 400, 400], [900, 1100, 1000]),
        ]
    )
    assert "| ha-proxy | 1 | 80.0 | 40.0 | 0.50 (0.50-0.50) | 200.0 | 300.0 " in table
    assert "| 1.50 (1.50-1.50) | faster every round |" in table
    assert "| ha-proxy | 32 |" in table and "| 1.00 (0.90-1.10) | within noise |" in table
    assert "| default |" not in table


def test_against_direct_reads_each_arm_over_direct_and_direct_is_no_lever() -> None:
    rounds = [
        comparison(DIRECT, 32, [100, 200], [1000, 500]),
        comparison(DEFAULT, 32, [300, 600], [500, 250]),
        comparison("direct-streaming", 32, [150, 300], [900, 400]),
    ]
    assert "| direct |" not in lever_table(rounds)
    streaming = ratio_tables(rounds, "direct-streaming")
    assert streaming.startswith("Ray Serve LLM (direct-streaming) / direct vLLM")
    # Round by round: 900/1000 and 400/500.
    assert "| 32 | 150.0 | 225.0 | 75.0 (50.0 to 100.0) | 1.50 (1.50-1.50) " in streaming
    assert "| 0.85 (0.80-0.90) |" in streaming
    assert "throughput ratio 0.85 >= 0.8: met" in targets(
        rounds, paced=False, target="direct-streaming"
    )
    assert "throughput ratio 0.50 >= 0.8: not met" in targets(rounds, paced=False, target=DEFAULT)
    # The run's file: each arm's table against direct, its targets a paragraph of their own.
    tables = levers_markdown(rounds, paced=False)
    assert tables.startswith(lever_table(rounds))
    assert "Ray Serve LLM (default) / direct vLLM" in tables
    assert f"{streaming}\nTargets, from the medians of the rounds:\n\n" in tables
    assert "/ direct vLLM" not in levers_markdown(rounds[1:], paced=False)


def test_against_direct_needs_a_lever_run(
    capsys: pytest.CaptureFixture[str], arguments_only: None
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--against-direct"])
    assert stopped.value.code == 2
    assert "--against-direct: it adds direct vLLM to a lever run; add --levers" in (
        capsys.readouterr().err
    )


def test_a_lever_run_takes_one_regime(
    capsys: pytest.CaptureFixture[str], arguments_only: None
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--levers", "ha-proxy", "--regimes", "unpaced,npu-paced"])
    assert stopped.value.code == 2
    assert "--regimes: a lever run takes one regime; choose unpaced or npu-paced" in (
        capsys.readouterr().err
    )


def test_the_paced_regime_paces_every_arms_engine_and_sends_fewer_requests(
    tiny_model_dir: Path,
) -> None:
    fields = recipe_fields(tiny_model_dir)
    settings = BenchSettings()
    assert regime_inputs(UNPACED, fields, settings) == (fields, settings)
    paced_fields, paced_settings = regime_inputs(NPU_PACED, fields, settings)
    paced_env = paced_fields["runtime_env"]["env_vars"]
    assert paced_env[PACING_ENV_VAR] == NPUStepPacing().env_value()
    # vLLM's Ray executor copies the pacing to the engine's workers, which pace.
    assert paced_env[VLLM_COPY_ENV_VAR] == PACING_ENV_VAR
    assert paced_fields["engine_kwargs"]["worker_cls"] == PACED_CPU_WORKER
    argv = direct_args(paced_fields, tiny_model_dir)
    assert argv[argv.index("--worker-cls") + 1] == PACED_CPU_WORKER
    assert PACING_ENV_VAR not in fields["runtime_env"]["env_vars"]
    assert "worker_cls" not in fields["engine_kwargs"]
    assert paced_settings.num_prompts(1) == settings.paced_min_prompts < settings.num_prompts(1)
    served = app_args(LEVERS["ha-proxy"], paced_fields)["llm_configs"][0]
    assert served["runtime_env"] == paced_fields["runtime_env"]
    assert served["engine_kwargs"]["worker_cls"] == PACED_CPU_WORKER


def test_main_hands_a_lever_run_its_regimes_fields_and_direct_vllm(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray_serve_npu_tooling.bench import paths

    fields = recipe_fields(tiny_model_dir)
    monkeypatch.setattr(paths, "tiny_model", lambda out: tiny_model_dir)
    runs = []
    monkeypatch.setattr(paths, "measure_levers", lambda *a, **kw: runs.append((a, kw)) or 0)
    argv = ["--levers", "direct-streaming", "--against-direct", "--out-dir", str(tmp_path)]
    assert main([*argv, "--regimes", "npu-paced", "--concurrency", "1,32"]) == 0
    assert main(argv) == 0
    (paced_levers, paced_fields, paced_settings, *_), paced_kw = runs[0]
    assert [lever.name for lever in paced_levers] == [DEFAULT, "direct-streaming"]
    expected = regime_inputs(NPU_PACED, fields, BenchSettings(concurrency=[1, 32]))
    assert (paced_fields, paced_settings) == expected
    assert paced_kw == {"regime": NPU_PACED, "against_direct": True}
    (_, unpaced_fields, _, *_), unpaced_kw = runs[1]
    assert unpaced_fields == fields and unpaced_kw["regime"] == UNPACED


def test_an_empty_regime_list_is_refused(
    capsys: pytest.CaptureFixture[str], arguments_only: None
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--regimes", ","])
    assert stopped.value.code == 2
    assert "--regimes: name at least one of unpaced, npu-paced, or leave it out" in (
        capsys.readouterr().err
    )


def test_verdict_needs_every_round_on_one_side() -> None:
    assert verdict([1.1, 1.2]) == "faster every round"
    assert verdict([0.9, 0.8]) == "slower every round"
    assert verdict([0.9, 1.2]) == verdict([1.0, 1.1]) == "within noise"


def test_two_apps_cannot_both_take_the_root_route() -> None:
    from ray_serve_npu_tooling.serve_apps import run_apps

    with pytest.raises(ValueError, match="prefixed=False serves one app at /, not 2"):
        run_apps({"a": {}, "b": {}}, host="127.0.0.1", port=1, prefixed=False)


def test_the_paths_comparison_keys_every_path_as_the_recipes_do(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default run measures the recipe as written: one key on the Serve apps, on
    direct vLLM and in the clients, and the unpaced engine at its two levels."""
    from ray_serve_npu_tooling.bench import paths

    keys = (API_KEY_ENV_VAR, paths.VLLM_SERVER_API_KEY_ENV_VAR, CLIENT_API_KEY_ENV_VAR)
    for name in keys:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(paths, "tiny_model", lambda out: tiny_model_dir)
    monkeypatch.setattr(paths, "driving_bench_cluster", contextlib.nullcontext)
    monkeypatch.setattr(paths, "provenance", lambda: "provenance")
    seen: dict[str, tuple[list[int], dict[str, str | None]]] = {}

    def compare(regime: str, fields, apps, model_dir, settings: BenchSettings, *rest) -> str:
        seen[regime] = (settings.concurrency, {name: os.environ.get(name) for name in keys})
        return regime

    monkeypatch.setattr(paths, "compare_paths", compare)
    assert main(["--no-capacity", "--out-dir", str(tmp_path)]) == 0
    assert seen[UNPACED][0] == [1, 32]
    assert seen[NPU_PACED][0] == [1, 8, 32, 64]
    (key,) = set(seen[UNPACED][1].values()) | set(seen[NPU_PACED][1].values())
    assert key  # the same key in all three, in both regimes
    assert all(os.environ.get(name) is None for name in keys)  # and gone after the run
    assert main(["--no-capacity", "--concurrency", "8", "--out-dir", str(tmp_path)]) == 0
    assert seen[UNPACED][0] == seen[NPU_PACED][0] == [8]
