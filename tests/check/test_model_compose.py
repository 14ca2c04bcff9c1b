"""A Compose service for each single-node run (#39 item 2): ``compose_for`` turns a run of
vLLM-Ascend's nightly CI or tutorials into a ``vllm serve`` service in the release's image.
The service passes the run's own words and variables, less what it sets itself; the
checker finds in it exactly what it finds in the run; and the readable Compose recipes
set up their container as the generated services do."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ray_serve_npu.check import check_file, check_serve_run
from ray_serve_npu.hardware import NODE_KINDS
from ray_serve_npu.model_compose import (
    API_KEY_ENV,
    CACHE_MOUNT,
    CONTAINER,
    CONTROL_DEVICES,
    DRIVER_MOUNTS,
    HOST,
    PORT,
    ComposeError,
    ModelCompose,
    compose_for,
)
from ray_serve_npu.model_recipes import find_run, run_key
from ray_serve_npu.releases import SERVE_LLM_RELEASE, release
from ray_serve_npu.releases.runs import serve_runs
from ray_serve_npu.vllm_cli import SHELL_EXPANSION, interpolate_compose
from ray_serve_npu.vllm_flags import stored_flags

TAG = SERVE_LLM_RELEASE.tag
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
#: Each single-node run on each node kind that holds it: the kind its source names, else both.
SERVED = [
    (run, kind)
    for run in serve_runs(TAG)
    if run.nodes == 1
    for kind in run.node_kinds or tuple(NODE_KINDS)
    if run.npus <= NODE_KINDS[kind].devices_per_node
]


def _ids(case: tuple[Any, str]) -> str:
    return f"{run_key(case[0])}-{case[1]}"


def _service(compose: ModelCompose) -> dict[str, Any]:
    (service,) = compose.compose["services"].values()
    return service


def test_every_single_node_run_and_node_kind_is_served() -> None:
    assert len(SERVED) >= 35
    assert {kind for _, kind in SERVED} == {"A2", "A3"}


@pytest.mark.parametrize(("run", "kind"), SERVED, ids=[_ids(c) for c in SERVED])
def test_the_checker_finds_in_the_service_what_it_finds_in_the_run(
    tmp_path: Path, run: Any, kind: str
) -> None:
    compose = compose_for(run, kind)
    path = tmp_path / compose.file_name
    path.write_text(compose.text())
    found = sorted((f.rule_id, f.severity) for f in check_file(path))
    # The container adds no finding: its mounts, devices, key and address pass.
    assert found == sorted((f.rule_id, f.severity) for f in check_serve_run(run))


@pytest.mark.parametrize(("run", "kind"), SERVED, ids=[_ids(c) for c in SERVED])
def test_the_service_passes_the_runs_own_words_and_variables(run: Any, kind: str) -> None:
    compose = compose_for(run, kind)
    service = _service(compose)
    command = service["command"]
    name = run.model.rsplit("/", 1)[-1]
    assert command[:3] == ["vllm", "serve", f"/models/{name}"]
    given = stored_flags(release(TAG).vllm).given(command[3:])
    dropped = {d.name for d in compose.dropped}
    ours = {"served_model_name": [name.lower()], "host": HOST, "port": PORT}
    expected = {k: v for k, v in run.settings.items() if k not in dropped}
    assert given == {**expected, **ours}
    # Each setting it doesn't pass is one the service sets itself or an unsafe one.
    assert dropped & set(run.settings) <= {*ours, "allowed_local_media_path", "profiler_config"}
    # Each variable it doesn't pass is the CI's port, vLLM's development mode, one whose
    # value a shell expands, or a name no program reads.
    left_out = {
        name
        for name, value in run.envs.items()
        if name in {"SERVER_PORT", "VLLM_SERVER_DEV_MODE"}
        or SHELL_EXPANSION.search(value)
        or not name.replace("_", "").isalnum()
    }
    assert dropped & set(run.envs) == left_out
    assert service["environment"] == {
        **{k: v for k, v in run.envs.items() if k not in dropped},
        **API_KEY_ENV,
    }
    assert service["image"] == release(TAG).image(kind)
    assert service["devices"][: run.npus] == [f"/dev/davinci{i}" for i in range(run.npus)]
    assert service["devices"][run.npus :] == list(CONTROL_DEVICES)


def test_a_dollar_reaches_vllm_as_written() -> None:
    run = find_run("Qwen3-32B-W8A8-single-a2", TAG)
    planted = run.model_copy(update={"argv": [*run.argv, "--chat-template", "/t/$HOME.jinja"]})
    (word,) = [w for w in _service(compose_for(planted))["command"] if "HOME" in w]
    assert interpolate_compose(word, {"HOME": "/root"}) == "/t/$HOME.jinja"


def test_a_variable_the_shell_expands_is_left_out_with_where_to_set_it() -> None:
    compose = compose_for(find_run("Kimi-K2.6", TAG))
    assert "LD_PRELOAD" not in _service(compose)["environment"]
    (why,) = [d.why for d in compose.dropped if d.name == "LD_PRELOAD"]
    assert why.endswith("set LD_PRELOAD in the service's environment to its value on the node")


def test_what_opens_vllms_server_past_its_api_key_is_left_out_with_why() -> None:
    dev_mode = compose_for(find_run("DeepSeek-V3.2-W8A8-DCP-replicated-indexer", TAG))
    assert "VLLM_SERVER_DEV_MODE" in dev_mode.run.envs
    assert "VLLM_SERVER_DEV_MODE" not in _service(dev_mode)["environment"]
    (why,) = [d.why for d in dev_mode.dropped if d.name == "VLLM_SERVER_DEV_MODE"]
    assert "/collective_rpc" in why and "does not guard" in why
    profiler = compose_for(find_run("Kimi-K2.6", TAG))
    assert "profiler_config" in profiler.run.settings
    assert "--profiler-config" not in _service(profiler)["command"]
    (why,) = [d.why for d in profiler.dropped if d.name == "profiler_config"]
    assert "/start_profile" in why and "does not guard" in why


@pytest.mark.parametrize(
    ("run_name", "kind", "message"),
    [
        ("DeepSeek-V4-Pro-A3", None, "spans 2 nodes, each running a `vllm serve` of its own"),
        ("Kimi-K2.6", "A2", "uses 16 NPUs and an A2 node has 8: pass --node-kind A3"),
        ("Qwen3-32B-W8A8-single-a2", "A3", "runs on A2, not A3: pass --node-kind A2, or leave"),
        (
            "Qwen3-32B-W8A8-single-a2",
            "A5",
            "not a node kind; pass --node-kind A2 or --node-kind A3",
        ),
    ],
)
def test_a_run_one_service_cant_serve_gets_why(
    run_name: str, kind: str | None, message: str
) -> None:
    with pytest.raises(ComposeError) as error:
        compose_for(find_run(run_name, TAG), kind)
    assert message in str(error.value)


def test_a_run_whose_source_names_no_node_kind_asks_for_one() -> None:
    # Kimi-K2.6's tutorial command names no node kind; only an A3 node holds its 16 NPUs.
    run = find_run("Kimi-K2.6", TAG)
    assert not run.node_kinds and run.npus == 16
    assert compose_for(run).node_kind == "A3"
    # On four NPUs, either node kind holds it.
    either = run.model_copy(update={"settings": {**run.settings, "data_parallel_size": 1}})
    with pytest.raises(ComposeError) as error:
        compose_for(either)
    assert "Kimi-K2.6: its source names none; pass --node-kind A2 or --node-kind A3" in str(
        error.value
    )
    # On more NPUs than any node holds, none does.
    too_many = run.model_copy(update={"settings": {**run.settings, "data_parallel_size": 8}})
    with pytest.raises(ComposeError) as error:
        compose_for(too_many)
    assert "uses 32 NPUs, more than one node of any kind holds (A2: 8, A3: 16)" in str(error.value)
    # A source that names a node kind too small for the run: only --node-kind chooses
    # one that holds it, and each refusal names that one.
    on_a2 = run.model_copy(update={"node_kind": "A2"})
    for kind in (None, "A2"):
        with pytest.raises(ComposeError) as error:
            compose_for(on_a2, kind)
        assert str(error.value).endswith("pass --node-kind A3"), error.value
    assert "whose node holds fewer than its 16 NPUs" in _message(on_a2, None)
    assert compose_for(on_a2, "A3").node_kind == "A3"


def _message(run: Any, kind: str | None) -> str:
    with pytest.raises(ComposeError) as error:
        compose_for(run, kind)
    return str(error.value)


def test_a_node_kind_the_release_publishes_no_image_for_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = find_run("Qwen3-32B-W8A8-single-a2", TAG)
    data = release(TAG)
    # The release with its A2 image taken away.
    a3_only = data.model_copy(
        update={"images": data.images.model_copy(update={"tags": {"A3": data.images.tags["A3"]}})}
    )
    monkeypatch.setattr("ray_serve_npu.model_compose.release", lambda tag: a3_only)
    assert "publishes no image for node kind 'A2'" in _message(run, None)


@pytest.mark.parametrize("recipe", ["docker-compose.yaml", "docker-compose-a3.yaml"])
def test_the_readable_compose_recipes_set_up_their_container_as_generated_ones(
    recipe: str,
) -> None:
    (service,) = yaml.safe_load((RECIPES / recipe).read_text())["services"].values()
    assert {key: service[key] for key in CONTAINER} == CONTAINER
    assert service["devices"][-len(CONTROL_DEVICES) :] == list(CONTROL_DEVICES)
    assert service["volumes"][1:] == [*(f"{p}:{p}:ro" for p in DRIVER_MOUNTS), CACHE_MOUNT]
    assert service["environment"]["VLLM_API_KEY"] == API_KEY_ENV["VLLM_API_KEY"]
    assert service["command"][service["command"].index("--host") + 1] == HOST
    assert service["command"][service["command"].index("--port") + 1] == str(PORT)


def _pages_compose_run() -> str:
    """The run the models page writes a Compose file for, read from its command."""
    page = (RECIPES.parent / "docs" / "models.md").read_text()
    (run,) = re.findall(r"python serve_model\.py --compose (\S+) > ", page)
    return run


def test_the_models_pages_file_passes_the_check_command(tmp_path: Path) -> None:
    # The section "Serve one of these models with Docker Compose": step 1 writes the file,
    # step 2 checks it and shows what the check prints.
    run_name = _pages_compose_run()
    printed = subprocess.run(
        [sys.executable, RECIPES / "serve_model.py", "--compose", run_name],
        capture_output=True,
        text=True,
        check=True,
    )
    path = tmp_path / compose_for(find_run(run_name, TAG)).file_name
    assert f"{run_name} > {path.name}" in (RECIPES.parent / "docs" / "models.md").read_text()
    path.write_text(printed.stdout)
    checked = subprocess.run(
        [sys.executable, "-m", "ray_serve_npu.cli", "check", path.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip() == "1 file(s) checked: 0 finding(s)"
