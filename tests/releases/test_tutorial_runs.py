"""The runs of vLLM-Ascend's model tutorials at a release (#39): read from the stored pages
by the tooling into the runs file the package reads, with their node kind from the tab
a command sits in and their nodes from their data-parallel layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_serve_npu_tooling.tutorial_runs import page_runs, runs_file_text

from ray_serve_npu.model_recipes import ENVS_LEFT_OUT, find_run, recipe_for
from ray_serve_npu.releases import RELEASES, SERVE_LLM_RELEASE
from ray_serve_npu.releases.tutorials import (
    RUNS_FILE,
    TUTORIALS_DIR,
    tutorial_runs,
    tutorial_set_aside,
)
from ray_serve_npu.vllm_flags import stored_flags

TAG = SERVE_LLM_RELEASE.tag


@pytest.mark.parametrize("folder", sorted(p.name for p in TUTORIALS_DIR.iterdir() if p.is_dir()))
def test_the_stored_runs_file_is_what_its_pages_give(folder: str) -> None:
    # Regenerate with `python -m ray_serve_npu_tooling.tutorial_runs`.
    assert (TUTORIALS_DIR / folder / RUNS_FILE).read_text() == runs_file_text(folder)


def test_deepseek_v4_pro_runs_on_four_a2_nodes_or_two_a3_nodes() -> None:
    runs = {run.name: run for run in tutorial_runs(TAG)}
    a2, a3 = runs["DeepSeek-V4-Pro-A2"], runs["DeepSeek-V4-Pro-A3"]
    assert (a2.node_kind, a2.nodes, a2.data_parallel, a2.tensor_parallel) == ("A2", 4, 4, 8)
    assert (a3.node_kind, a3.nodes, a3.data_parallel, a3.tensor_parallel) == ("A3", 2, 2, 16)
    # Each read with its further nodes' command, which sets what the first node sets.
    assert len(a2.other_nodes_argv) == len(a3.other_nodes_argv) == 1
    assert a2.model == "vllm-ascend/DeepSeek-V4-Pro-w4a8-mtp" and a2.speculative_method == "mtp"
    # Read from the page's own line: the first node's `vllm serve`.
    page = (TUTORIALS_DIR / TAG / "DeepSeek-V4-Pro.md").read_text().splitlines()
    assert page[a2.line - 1].strip().startswith("vllm serve ")
    assert a2.envs["HCCL_BUFFSIZE"] == "512"


def test_a_page_without_a_node_kinds_tab_gives_a_run_of_no_node_kind() -> None:
    (kimi,) = [run for run in tutorial_runs(TAG) if run.name == "Kimi-K2.6"]
    assert (kimi.node_kind, kimi.nodes, kimi.npus) == (None, 1, 16)
    assert kimi.other_nodes_argv == ()


def test_prefill_decode_commands_set_their_page_aside_once_with_the_connector() -> None:
    configs = {c.name: c for c in tutorial_set_aside(TAG)}
    # Named apart from the runs: `Kimi-K2.6` is the page's single-node run.
    assert set(configs) == {"DeepSeek-V4-Pro-PD", "Kimi-K2.6-PD"}
    assert configs["DeepSeek-V4-Pro-PD"].connector == "MooncakeHybridConnector"
    assert configs["DeepSeek-V4-Pro-PD"].layout == "prefill_decode"
    assert configs["DeepSeek-V4-Pro-PD"].nodes is None


def _planted(tmp_path: Path, second_node: str, tab: str = "A3 series") -> Path:
    page = tmp_path / "Planted.md"
    page.write_text(
        '=== "A3 series"\n\n'
        "    ```bash\n"
        "    export OMP_NUM_THREADS=10\n"
        "    vllm serve org/Planted --data-parallel-size 2 --data-parallel-size-local 1 \\\n"
        "      --tensor-parallel-size 16 --max-model-len 4096 --additional-config '{\n"
        '        "enable_cpu_binding": true\n'
        "      }'\n"
        "    ```\n\n"
        f'=== "{tab}"\n\n'
        "    ```bash\n"
        "    export OMP_NUM_THREADS=10\n"
        f"    vllm serve org/Planted --headless --data-parallel-size 2 {second_node} \\\n"
        "      --data-parallel-start-rank 1 --tensor-parallel-size 16\n"
        "    ```\n"
    )
    return page


def test_a_further_nodes_command_joins_the_first_nodes_run(tmp_path: Path) -> None:
    page = _planted(
        tmp_path,
        "--data-parallel-size-local 1 --max-model-len 4096 "
        "--additional-config '{\"enable_cpu_binding\": true}'",
    )
    found = page_runs(TAG, page)
    (run,) = found["runs"]
    assert (run["name"], run["line"], run["node_kind"], run["nodes"]) == ("Planted-A3", 5, "A3", 2)
    assert run["envs"] == {"OMP_NUM_THREADS": "10"} and found["set_aside"] == []
    (other,) = run["other_nodes_argv"]
    assert "--headless" in other and "--additional-config" in run["argv"]


def test_a_further_node_that_sets_a_setting_its_own_way_stops_the_read(tmp_path: Path) -> None:
    page = _planted(tmp_path, "--data-parallel-size-local 1 --max-model-len 8192")
    with pytest.raises(ValueError, match=r"Planted.md:5: the nodes of Planted-A3 set "):
        page_runs(TAG, page)


def test_a_further_node_with_no_first_node_of_its_kind_stops_the_read(tmp_path: Path) -> None:
    page = _planted(tmp_path, "--data-parallel-size-local 1", tab="Node 1")
    with pytest.raises(ValueError, match=r"Planted.md:15: a further node's command"):
        page_runs(TAG, page)


def test_a_value_the_shell_fills_stops_the_read_naming_the_line(tmp_path: Path) -> None:
    page = tmp_path / "Script.md"
    page.write_text("```bash\nvllm serve org/M \\\n  --tensor-parallel-size $7\n```\n")
    with pytest.raises(ValueError, match=r"Script.md:2: argument --tensor-parallel-size"):
        page_runs(TAG, page)


def test_the_recipe_leaves_out_what_each_node_or_ray_sets_with_why() -> None:
    recipe = recipe_for(find_run("DeepSeek-V4-Pro-A3", TAG), "/models/DeepSeek-V4-Pro-w4a8-mtp")
    dropped = {d.name: d.why for d in recipe.dropped}
    env_vars = recipe.llm_config["runtime_env"]["env_vars"]
    assert dropped["HCCL_IF_IP"].startswith("its value holds $local_ip")
    assert "HCCL_IF_IP" not in env_vars and "LD_PRELOAD" not in env_vars
    assert env_vars["HCCL_BUFFSIZE"] == "2048"
    engine = recipe.llm_config["engine_kwargs"]
    assert (engine["data_parallel_size"], engine["tensor_parallel_size"]) == (2, 16)
    assert "data_parallel_address" not in engine
    a2 = recipe_for(find_run("DeepSeek-V4-Pro-A2", TAG), "/w")
    assert {d.name: d.why for d in a2.dropped}["ASCEND_RT_VISIBLE_DEVICES"] == (
        ENVS_LEFT_OUT["ASCEND_RT_VISIBLE_DEVICES"]
    )


def test_the_release_datas_deepseek_v4_flash_runs_are_what_the_page_gives() -> None:
    # The release data transcribes the tutorial by hand; the reader reads the page itself.
    page = Path(__file__).parent / "data" / TAG / "DeepSeek-V4-Flash.md"
    read = {run["node_kind"]: run for run in page_runs(TAG, page)["runs"]}
    tutorial = RELEASES[TAG].deepseek_v4_flash
    assert set(read) == set(tutorial.runs) == {"A2", "A3"}
    flags = stored_flags(RELEASES[TAG].vllm)
    for kind, run in tutorial.runs.items():
        first, last = (int(n) for n in run.lines.split("-"))
        assert first <= read[kind]["line"] <= last, kind
        assert flags.given(read[kind]["argv"]) == flags.given(run.serve_words()), kind
        assert read[kind]["envs"] == run.env, kind
