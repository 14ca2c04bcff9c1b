"""The benchmarks page's server command is the Compose service's, less the swept flags.

That block starts DeepSeek-V4-Flash servers on an Ascend node, so the harness
skips it; this test keeps its copy of the Compose command from drifting.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from ray_serve_npu_tooling.bench.compare import Comparison, ratio_tables, targets
from ray_serve_npu_tooling.docs.pages import read_page

from ray_serve_npu.vllm_cli import VLLMServe, vllm_serve_service

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
COMPOSE = ROOT / "recipes" / "docker-compose.yaml"
#: The flags the page sweeps with --serve-param, so its command leaves them out.
SWEPT = {"--max-num-seqs", "--max-num-batched-tokens"}
MODEL_PATH = "/models/DeepSeek-V4-Flash-w8a8-mtp"


def _page_serve_cmd() -> list[str]:
    """SERVE_CMD as bash sets it in the page's block, split into argv."""
    (block,) = [
        "\n".join(fence.body)
        for fence in read_page(PAGE).fences
        if fence.language == "bash" and "SERVE_CMD=" in "".join(fence.body)
    ]
    setup = block.split("python -m bench.sweep")[0]
    printed = subprocess.run(
        ["bash", "-c", f'{setup}\nprintf "%s" "$SERVE_CMD"'],
        env={"MODEL_PATH": MODEL_PATH, "OPENAI_API_KEY": "key", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return shlex.split(printed)


def test_the_page_serves_what_the_compose_file_serves_but_the_swept_flags() -> None:
    page = VLLMServe.parse(_page_serve_cmd())
    compose = vllm_serve_service(COMPOSE).command

    assert page.model == compose.model == MODEL_PATH
    assert list(page) == [option for option in compose if option[0] not in SWEPT]


STATIC = ROOT / "docs" / "_static" / "bench"


def test_the_pages_tables_are_one_runs_files_and_their_verdicts_its_json() -> None:
    import json

    from ray_serve_npu_tooling.bench.capacity import CapacityPoint, capacity_table

    points = [
        CapacityPoint.model_validate(p) for p in json.loads((STATIC / "capacity.json").read_text())
    ]
    comparison = (STATIC / "comparison.md").read_text()
    assert comparison.startswith("Fake-NPU tier, ")
    # The capacity table the page shows is the one the run's points give.
    assert f"## Request path, mock engine\n\n{capacity_table(points)}" in comparison
    page = PAGE.read_text()
    # Each regime's tables and verdicts are the ones its comparison.json gives, and the
    # page's reading of it is generated from the same file (docs/_ext/bench_readings.py).
    for regime in ("unpaced", "npu-paced"):
        run = committed_run(STATIC / regime / "comparison.json")
        section = comparison.split(f"\n## {regime}\n", 1)[1].split("\n## ", 1)[0]
        assert ratio_tables(run) in section
        assert targets(run, paced=regime == "npu-paced") in section
        directive = f"```{{bench-readings}} _static/bench/{regime}/comparison.json\n"
        assert f"{directive}:against: direct\n" in page
    # The page's command is the one that made the run.
    rounds = len({point.round for point in points})
    assert f"nox -s bench -- --rounds {rounds}\n" in page
    for image in ("unpaced.png", "npu-paced.png"):
        assert f"_static/bench/{image}" in page and (STATIC / image).is_file()


def test_the_pages_profile_is_one_runs_files_and_its_reading_holds_for_them() -> None:
    import json

    from ray_serve_npu_tooling.bench.profile import ServePathProfile

    folder = STATIC / "profile"
    profile = ServePathProfile.model_validate_json((folder / "profile.json").read_text())
    # The table the page includes is the one the run's JSON gives.
    assert profile.markdown() in (folder / "profile.md").read_text()
    page = PAGE.read_text()
    assert "nox -s bench -- --profile\n" in page
    roles = {process.role: process for process in profile.processes}
    # One flame graph a process, each on the page.
    images = sorted(f.name for f in folder.glob("flame-*.png"))
    assert len(images) == len(roles) == 3
    for image in images:
        assert f"_static/bench/profile/{image}" in page
    # What the page reads from it: the engine's replica spends most on vLLM's code,
    # the two processes direct vLLM lacks hardly any.
    (engine,) = [p for role, p in roles.items() if role.startswith("LLMServer")]
    assert max(engine.self_by_package, key=engine.self_by_package.get) == "vllm"
    hops = [p for role, p in roles.items() if not role.startswith("LLMServer")]
    assert {p.role for p in hops} == {"ProxyActor", "OpenAiIngress"}
    for process in hops:
        assert process.self_by_package.get("vllm", 0) < 0.05 * process.samples
    ingress = roles["OpenAiIngress"].self_by_package
    assert ingress.get("anyio", 0) and ingress.get("starlette", 0)
    assert json.loads((folder / "profile.json").read_text())["app"] == "serve-npu"


TUNING = ROOT / "docs" / "tuning.md"
#: The page that shows the lever runs and reads them (the tuning page advises from them).
BENCHMARKS = ROOT / "docs" / "benchmarks.md"


def committed_run(path: Path) -> list[Comparison]:
    """A committed run's comparisons: a lever run's ``levers.json``, or a regime's
    ``comparison.json`` of the paths' comparison."""
    import json

    return [Comparison.model_validate(c) for c in json.loads(path.read_text())]


def test_the_lever_table_is_one_runs_files_and_its_readings_are_generated() -> None:
    import runpy

    from ray_serve_npu_tooling.bench.compare import DEFAULT
    from ray_serve_npu_tooling.bench.levers import LEVERS, lever_table

    folder = STATIC / "levers"
    comparisons = committed_run(folder / "levers.json")
    # The table the page includes is the one the run's JSON gives.
    assert lever_table(comparisons) in (folder / "levers.md").read_text()
    text = BENCHMARKS.read_text()
    page = " ".join(text.split())
    assert "_static/bench/levers/levers.md" in page
    # The page's command is the one that made the run: its levers by name, or `all`.
    named = dict.fromkeys(c.target for c in comparisons if c.target != DEFAULT)
    levers = "all" if set(named) == set(LEVERS) - {DEFAULT} else ",".join(named)
    levels = ",".join(str(level) for level in sorted({c.concurrency for c in comparisons}))
    rounds = len(comparisons[0].output_tokens_per_s)
    assert f"nox -s bench -- --levers {levers} --concurrency {levels} --rounds {rounds} " in page
    # Its reading of the run is generated from the same file (docs/_ext/bench_readings.py).
    assert "```{bench-readings} _static/bench/levers/levers.json\n```" in text
    # The counts the prose around it cites (docs/conf.py) are the run's.
    substitutions = runpy.run_path(str(ROOT / "docs" / "conf.py"))["myst_substitutions"]
    assert substitutions["lever_rounds"] == str(rounds)
    assert substitutions["lever_chance"] == str(2 ** (rounds - 1))
    figures = 2 * len(named) * len(levels.split(","))
    assert substitutions["lever_figures"] == str(figures)
    assert substitutions["lever_chance_figures"] == f"{figures / 2 ** (rounds - 1):.1f}"


#: The benchmarks page's runs of direct streaming against direct vLLM, one per regime.
AGAINST_DIRECT = STATIC / "direct-streaming"


@pytest.mark.parametrize("regime", ["unpaced", "npu-paced"])
def test_the_runs_against_direct_are_their_files_and_read_by_the_directive(
    regime: str,
) -> None:
    import runpy

    from ray_serve_npu_tooling.bench.compare import DEFAULT, DIRECT
    from ray_serve_npu_tooling.bench.levers import levers_markdown

    folder = AGAINST_DIRECT / regime
    comparisons = committed_run(folder / "levers.json")
    # The file the page includes is the one the run's JSON gives, below its provenance.
    first, rest = (folder / "levers.md").read_text().split("\n\n", 1)
    assert first.startswith("Fake-NPU tier, ") and first.endswith("not NPU figures.")
    paced = regime == "npu-paced"
    assert rest == f"Engine: {regime}.\n\n{levers_markdown(comparisons, paced=paced)}"
    text = BENCHMARKS.read_text()
    page = " ".join(text.split())
    assert f"_static/bench/direct-streaming/{regime}/levers.md" in page
    # The page's command is the one that made the run.
    arms = [t for t in dict.fromkeys(c.target for c in comparisons) if t not in {DIRECT, DEFAULT}]
    levels = ",".join(str(level) for level in sorted({c.concurrency for c in comparisons}))
    rounds = len(comparisons[0].ttft_p50_ms)
    regimes = " --regimes npu-paced" if paced else ""
    command = (
        f"nox -s bench -- --levers {','.join(arms)} --against-direct{regimes} "
        f"--concurrency {levels} --rounds {rounds} "
    )
    assert command in page
    # Its reading is generated from the same file, with the regime's targets.
    directive = (
        f"```{{bench-readings}} _static/bench/direct-streaming/{regime}/levers.json\n"
        ":against: direct\n" + (":paced:\n" if paced else "") + "```"
    )
    assert directive in text
    if paced:
        substitutions = runpy.run_path(str(ROOT / "docs" / "conf.py"))["myst_substitutions"]
        assert substitutions["vs_direct_npu_paced_rounds"] == str(rounds)
        for c in comparisons:
            if c.target == DIRECT:
                key = f"vs_direct_npu_paced_direct_{c.concurrency}_ttft"
                assert substitutions[key] == f"{c.ttft:.0f}"


def test_what_the_tuning_page_advises_rests_on_its_lever_run() -> None:
    # "What to set" reads the lever run: keep the stream batching interval and one
    # ingress replica (neither raised throughput), and direct ingress cut the time to
    # first token at 32. Each in every round, by the readings the page generates.
    from ray_serve_npu_tooling.bench.compare import DEFAULT
    from ray_serve_npu_tooling.bench.readings import Lean, readings

    found = readings(committed_run(STATIC / "levers" / "levers.json"), DEFAULT, paced=False)
    by = {(r.arm, r.concurrency): {f.name: f.lean for f in r.figures} for r in found}
    for arm in ("stream-batching-0ms", "ingress-replicas-2"):
        leans = [figures["throughput"] for (name, _), figures in by.items() if name == arm]
        assert leans and Lean.HIGHER not in leans, arm
    assert by["direct-ingress", 32]["ttft"] is Lean.LOWER
    # The advice links to the run it rests on, which the benchmarks page shows.
    advice = TUNING.read_text().split("### What to set", 1)[1].split("\n## ", 1)[0]
    assert advice.count("{ref}`benchmarks-levers`") >= 2
    assert "(benchmarks-levers)=" in BENCHMARKS.read_text()


def test_the_benchmarks_page_names_the_run_of_each_set_of_figures() -> None:
    # The comparison's tables are included without their first line, which names the run;
    # the page names it from the same file (docs/conf.py), and the lever run's too.
    import runpy

    substitutions = runpy.run_path(str(ROOT / "docs" / "conf.py"))["myst_substitutions"]
    comparison = (STATIC / "comparison.md").read_text().splitlines()[0]
    levers = (AGAINST_DIRECT / "npu-paced" / "levers.md").read_text().splitlines()[0]
    assert f", {substitutions['bench_run_when']}: " in comparison
    assert f", {substitutions['vs_direct_npu_paced_when']}: " in levers
    page = BENCHMARKS.read_text()
    assert "the run of {{ bench_run_when }}" in page
    assert "lever run of {{ vs_direct_npu_paced_when }}" in page
