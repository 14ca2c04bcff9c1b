"""recipes/serve_model.py without Ray: it lists the CI's runs, prints a run's LLMConfig
arguments or a Compose file that serves it, and refuses a run it doesn't know or a
missing MODEL_PATH with the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ray_serve_npu.model_compose import compose_for
from ray_serve_npu.model_recipes import find_run, recipe_for
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.runs import serve_runs

SCRIPT = Path(__file__).resolve().parents[2] / "recipes" / "serve_model.py"
RUN = "Qwen3-32B-W8A8-single-a2"


def _run(
    *args: str, model_path: str | None = "/models/Qwen3-32B-W8A8"
) -> subprocess.CompletedProcess:
    # Neither variable from the host: with them, a run would reach Ray and start serving.
    env = {k: v for k, v in os.environ.items() if k not in {"MODEL_PATH", "MODELS_DIR"}}
    if model_path is not None:
        env["MODEL_PATH"] = model_path
    return subprocess.run(
        [sys.executable, SCRIPT, *args], env=env, capture_output=True, text=True, check=False
    )


def test_list_names_every_run_of_the_pinned_release() -> None:
    listed = _run("--list", model_path=None)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == len(serve_runs(SERVE_LLM_RELEASE.tag))
    assert f"{RUN}: vllm-ascend/Qwen3-32B-W8A8, 4 NPUs" in listed.stdout.splitlines()


def test_show_prints_the_llm_config_the_app_is_built_from() -> None:
    shown = _run("--show", RUN)
    assert shown.returncode == 0, shown.stderr
    assert "serve_model.py: leaves out port: " in shown.stderr
    expected = recipe_for(find_run(RUN, SERVE_LLM_RELEASE.tag), "/models/Qwen3-32B-W8A8")
    assert json.loads(shown.stdout) == expected.llm_config
    # Without MODEL_PATH, it shows where the config would read the weights from.
    unset = json.loads(_run("--show", RUN, model_path=None).stdout)
    assert unset["model_loading_config"]["model_source"] == "$MODEL_PATH"


def test_bad_input_gets_the_fix_not_a_traceback() -> None:
    unknown = _run("Qwen3-32B", model_path=None)
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert "no run named 'Qwen3-32B'" in unknown.stderr and "--list" in unknown.stderr
    no_path = _run(RUN, model_path=None)
    assert no_path.returncode == 1 and "Traceback" not in no_path.stderr
    assert (
        "set MODEL_PATH to the directory of vllm-ascend/Qwen3-32B-W8A8's weights" in no_path.stderr
    )


def test_a_multi_node_run_is_listed_with_its_nodes_and_shown_as_a_data_parallel_gang() -> None:
    listed = _run("--list", model_path=None).stdout.splitlines()
    assert "Kimi-K2_5-W4A8-A2-dual-nodes: Eco-Tech/Kimi-K2.5-W4A8, 16 NPUs on 2 nodes" in listed
    shown = _run("--show", "Kimi-K2_5-W4A8-A2-dual-nodes")
    assert shown.returncode == 0, shown.stderr
    engine = json.loads(shown.stdout)["engine_kwargs"]
    assert (engine["data_parallel_size"], engine["tensor_parallel_size"]) == (2, 8)
    # Each node's own rank, address and port are Ray Serve LLM's to give.
    assert "serve_model.py: leaves out data_parallel_address: " in shown.stderr
    assert "data_parallel_size_local" not in engine


def test_a_multi_node_config_of_no_one_engine_is_refused_with_why() -> None:
    refused = _run("Qwen3-235B-disagg-pd", model_path=None)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    where = "Qwen3-235B-disagg-pd (tests/e2e/nightly/multi_node/internal_dp/config/"
    assert where in refused.stderr
    assert "separates prefill and decode engines, joined by MooncakeConnectorV1" in refused.stderr


def test_a_run_the_checker_refuses_is_not_started_and_the_errors_are_named() -> None:
    # The DeepSeek-V4-Pro tutorial's A2 command, as it writes it.
    refused = _run("DeepSeek-V4-Pro-A2", model_path="/models/DeepSeek-V4-Pro-w4a8-mtp")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "serve_model.py: load-strategy-with-multithread-load: DeepSeek-V4-Pro-A2" in (
        refused.stderr
    )
    assert "serve_model.py: multithread-load-not-boolean: " in refused.stderr
    assert "--show DeepSeek-V4-Pro-A2" in refused.stderr.splitlines()[-1]
    # Its further nodes' shell variables are left out, each with why.
    assert "serve_model.py: leaves out HCCL_IF_IP: its value holds $local_ip" in refused.stderr


def test_the_refusal_holds_without_the_check_extra(tmp_path: Path) -> None:
    # The vLLM-Ascend image installs ray-serve-npu without the `check` extra: no Markdown
    # parser, no JSON Schema library. serve_model.py still checks the run it builds.
    wrapper = tmp_path / "without_check_extra.py"
    wrapper.write_text(
        "import importlib.abc, runpy, sys\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ('markdown_it', 'mdit_py_plugins', 'jsonschema'):\n"
        "            raise ImportError(name, name=name)\n"
        "sys.meta_path.insert(0, Missing())\n"
        f"sys.argv = [{str(SCRIPT)!r}, 'DeepSeek-V4-Pro-A2']\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
    )
    env = {**os.environ, "MODEL_PATH": "/models/DeepSeek-V4-Pro-w4a8-mtp"}
    done = subprocess.run(
        [sys.executable, wrapper], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "serve_model.py: DeepSeek-V4-Pro-A2 would stop at start-up" in done.stderr


TWO = ("Qwen3-32B-W8A8-single-a3", "Qwen3-30B-A3B-W8A8-TP1")


def test_several_runs_are_shown_as_one_app_each_from_its_folder_of_models_dir() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"MODEL_PATH", "MODELS_DIR"}}
    shown = subprocess.run(
        [sys.executable, SCRIPT, "--show", *TWO],
        env={**env, "MODELS_DIR": "/models"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    configs = json.loads(shown.stdout)
    assert [c["model_loading_config"]["model_source"] for c in configs] == [
        "/models/Qwen3-32B-W8A8",
        "/models/Qwen3-30B-A3B-W8A8",
    ]
    # Each left-out line names its run.
    assert f"serve_model.py: {TWO[1]} leaves out port: " in shown.stderr


def test_several_runs_without_models_dir_or_with_a_data_parallel_one_get_the_fix() -> None:
    no_dir = _run(*TWO)
    assert no_dir.returncode == 1 and "Traceback" not in no_dir.stderr
    assert "set MODELS_DIR to the directory that holds each run's weights" in no_dir.stderr
    with_dp = _run(TWO[0], "DeepSeek-R1-0528-W8A8-single")
    assert with_dp.returncode == 1 and "Traceback" not in with_dp.stderr
    assert "serve DeepSeek-R1-0528-W8A8-single on its own" in with_dp.stderr
    # Two runs of one model would be one model id twice, and one folder of MODELS_DIR.
    same = _run(TWO[0], "Qwen3-32B-W8A8-aclgraph-a3")
    assert same.returncode == 1 and "Traceback" not in same.stderr
    assert (
        "Qwen3-32B-W8A8-aclgraph-a3, Qwen3-32B-W8A8-single-a3 serve the same model" in same.stderr
    )


def test_compose_prints_a_compose_file_that_serves_the_run() -> None:
    shown = _run("--compose", RUN, model_path=None)
    assert shown.returncode == 0, shown.stderr
    compose = compose_for(find_run(RUN, SERVE_LLM_RELEASE.tag))
    assert yaml.safe_load(shown.stdout) == compose.compose
    assert shown.stdout.startswith(f"# {RUN}: vllm-ascend/Qwen3-32B-W8A8 with `vllm serve`")
    assert f"docker compose -f {compose.file_name} up -d" in shown.stdout
    assert "serve_model.py: leaves out port: the service listens on port 8000" in shown.stderr


def test_compose_of_what_one_service_cant_serve_gets_the_fix_not_a_traceback() -> None:
    multi = _run("--compose", "DeepSeek-V4-Pro-A3", model_path=None)
    assert multi.returncode == 1 and "Traceback" not in multi.stderr
    assert "spans 2 nodes" in multi.stderr and "python serve_model.py DeepSeek-V4-Pro-A3" in (
        multi.stderr
    )
    two = _run("--compose", *TWO, model_path=None)
    assert two.returncode == 1 and "serves one run; name one" in two.stderr
    stray = _run("--node-kind", "A3", RUN, model_path=None)
    assert stray.returncode == 2 and "--node-kind goes with --compose" in stray.stderr
    assert stray.stdout == ""
    both = _run("--show", "--compose", RUN, model_path=None)
    assert both.returncode == 2 and "each print one thing; pass one of them" in both.stderr
    no_run = _run("--compose", model_path=None)
    assert no_run.returncode == 2 and "--compose needs the RUN" in no_run.stderr
