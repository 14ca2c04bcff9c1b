"""The A3 Compose file (recipes/docker-compose-a3.yaml): the release data's A3 run, the A2
file's security settings, a clean check; and the checker on A2/A3 images and layouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from checker_data import ROOT

from ray_serve_npu.check import check_file
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.hardware import A2, A3, NODE_KINDS
from ray_serve_npu.releases import COMPOSE_RELEASE, SERVE_LLM_RELEASE
from ray_serve_npu.vllm_cli import vllm_serve_service

COMPOSE = {
    "A2": ROOT / "recipes" / "docker-compose.yaml",
    "A3": ROOT / "recipes" / "docker-compose-a3.yaml",
}

#: What the Compose files set differently from the tutorial's run, on purpose, and
#: where the file or docs/tuning.md says why. Everything else must be the data's.
OURS_ARGS = {
    # Our served name, loopback host and port: the same clients work on both paths.
    "served-model-name": "deepseek-v4-flash",
    "host": "127.0.0.1",
    "port": 8000,
    # A JSON Boolean where the tutorial writes the string "true" (docs/tuning.md).
    "model-loader-extra-config": {"enable_multithread_load": True, "num_threads": 128},
}
#: Tutorial flags the Compose files leave out: with enable_multithread_load the strategy
#: does nothing, and vLLM 0.25 refuses the pair (rule load-strategy-with-multithread-load).
LEFT_OUT = {"safetensors-load-strategy"}
#: FlashComm1 through additional_config instead of its deprecated variable
#: (rule env-flashcomm1-deprecated).
OURS_ADDITIONAL = {"enable_flashcomm1": True}
#: Prefix caching on explicitly on A3: vLLM's default in the tutorial's A3 run, and the
#: nightly A3 case's first flag.
OURS_BY_KIND: dict[str, dict[str, Any]] = {"A2": {}, "A3": {"enable-prefix-caching": True}}


def _value(text: str | None) -> Any:
    """A flag's value as the release data writes it: a switch is true, JSON is decoded."""
    if text is None:
        return True
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _service(kind: str) -> dict[str, Any]:
    (service,) = yaml.safe_load(COMPOSE[kind].read_text())["services"].values()
    return service


@pytest.mark.parametrize("kind", sorted(COMPOSE))
def test_compose_runs_the_tutorials_flags_for_its_node_kind(kind: str) -> None:
    run = COMPOSE_RELEASE.run(kind)
    command = vllm_serve_service(COMPOSE[kind]).command
    flags = {flag.removeprefix("--"): _value(value) for flag, value in command}
    additional = flags.pop("additional-config")
    tutorial = {flag: value for flag, value in run.args.items() if flag not in LEFT_OUT}
    assert LEFT_OUT <= set(run.args), "a flag left out must be the tutorial's"
    expected = {**tutorial, **OURS_ARGS, **OURS_BY_KIND[kind]}
    # The tutorial's --api-server-count stays in the Compose file (one API server).
    assert flags == expected
    assert additional == {**run.additional_config, **OURS_ADDITIONAL}


@pytest.mark.parametrize("kind", sorted(COMPOSE))
def test_compose_sets_the_tutorials_environment(kind: str) -> None:
    run = COMPOSE_RELEASE.run(kind)
    environment = dict(_service(kind)["environment"])
    assert environment.pop("VLLM_API_KEY").startswith("${OPENAI_API_KEY:?")
    expected = dict(run.env)
    # Replaced by additional_config's enable_flashcomm1 (OURS_ADDITIONAL).
    assert expected.pop("VLLM_ASCEND_ENABLE_FLASHCOMM1") == "1"
    # The container starts with no LD_PRELOAD of its own to append to.
    expected["LD_PRELOAD"] = expected["LD_PRELOAD"].removesuffix(":$LD_PRELOAD")
    assert environment == expected


def test_a3_compose_uses_the_a3_image_and_maps_every_a3_device() -> None:
    service = _service("A3")
    assert service["image"] == COMPOSE_RELEASE.image("A3")
    davinci = [d for d in service["devices"] if d.removeprefix("/dev/davinci").isdigit()]
    assert davinci == [f"/dev/davinci{i}" for i in range(A3.devices_per_node)]
    run = COMPOSE_RELEASE.run("A3")
    assert run.data_parallel_size * run.tensor_parallel_size == A3.devices_per_node


def test_a3_compose_keeps_the_a2_files_security_settings() -> None:
    """Loopback port, the key from the environment, no privileges, read-only mounts:
    everything but the image, the name, the NPUs and the engine flags is the A2 file's."""
    a2, a3 = _service("A2"), _service("A3")
    differ = {"image", "container_name", "devices", "command"}
    assert {k: v for k, v in a3.items() if k not in differ} == {
        k: v for k, v in a2.items() if k not in differ
    }

    def others(service: dict[str, Any]) -> list[str]:
        return [d for d in service["devices"] if not d.removeprefix("/dev/davinci").isdigit()]

    assert others(a3) == others(a2)
    hosts = {kind: vllm_serve_service(COMPOSE[kind]).command.get("--host") for kind in COMPOSE}
    assert hosts == {"A2": "127.0.0.1", "A3": "127.0.0.1"}
    assert "privileged" not in a3 and "cap_add" not in a3


@pytest.mark.parametrize("kind", sorted(COMPOSE))
def test_compose_file_is_clean(kind: str) -> None:
    assert check_file(COMPOSE[kind]) == []


# Planted inputs: the A3 file and the A2 file, each with one thing wrong.
A3_IMAGE = COMPOSE_RELEASE.image("A3")
A2_IMAGE = COMPOSE_RELEASE.image("A2")


def _planted(tmp_path: Path, kind: str, old: str, new: str) -> Path:
    text = COMPOSE[kind].read_text()
    assert old in text, f"test setup: {old!r} is not in {COMPOSE[kind].name}"
    path = tmp_path / COMPOSE[kind].name
    path.write_text(text.replace(old, new, 1))
    return path


def _errors(path: Path) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for finding in check_file(path):
        assert finding.severity is Severity.ERROR, finding
        found.setdefault(finding.rule_id, []).append(finding)
    return found


def _lines(out: str, rule_id: str) -> list[str]:
    """The printed findings of one rule."""
    return [line for line in out.splitlines() if f" {rule_id}: " in line]


def test_a2_image_on_the_a3_service_names_the_image_and_the_a3_tag(tmp_path: Path) -> None:
    path = _planted(tmp_path, "A3", f"image: {A3_IMAGE}\n", f"image: {A2_IMAGE}\n")
    found = _errors(path)
    # One finding: the image, not the layout (the A3 layout fits the A3 node).
    assert list(found) == ["image-node-kind-mismatch"]
    (finding,) = found["image-node-kind-mismatch"]
    assert finding.line == path.read_text().splitlines().index(f"    image: {A2_IMAGE}") + 1
    assert f"`image` {A2_IMAGE} is built for A2 nodes ({A2.devices_per_node} NPUs)" in (
        finding.message
    )
    assert "maps /dev/davinci15, which needs an A3 node (16 NPUs)" in finding.message
    assert finding.fix.startswith(f"image: {A3_IMAGE} on an A3 node")


def test_a2_image_with_dp_times_tp_beyond_eight(tmp_path: Path) -> None:
    path = _planted(
        tmp_path,
        "A2",
        '--tensor-parallel-size\n      - "8"\n      - --data-parallel-size\n      - "1"',
        '--tensor-parallel-size\n      - "4"\n      - --data-parallel-size\n      - "4"',
    )
    found = _errors(path)
    (image,) = found.pop("image-node-kind-mismatch")
    assert "--tensor-parallel-size 4 x --data-parallel-size 4 x --pipeline-parallel-size 1" in (
        image.message
    )
    assert "= 16 NPUs, which needs an A3 node" in image.message
    assert image.fix.startswith(f"image: {A3_IMAGE} on an A3 node")
    # And the A2 file maps eight devices: the layout names the devices to map.
    (layout,) = found.pop("parallel-exceeds-node")
    assert "but the container maps 8 davinci devices" in layout.message
    assert layout.fix.startswith("Map /dev/davinci0 to /dev/davinci15 under `devices`")
    assert not found


def test_dp_times_tp_beyond_the_a3_node(tmp_path: Path) -> None:
    path = _planted(
        tmp_path, "A3", '--data-parallel-size\n      - "4"', '--data-parallel-size\n      - "8"'
    )
    found = _errors(path)
    (finding,) = found.pop("parallel-exceeds-node")
    largest = max(kind.devices_per_node for kind in NODE_KINDS.values())
    assert finding.message == (
        "--tensor-parallel-size 4 x --data-parallel-size 8 x --pipeline-parallel-size 1 = 32 "
        f"NPUs, but one A3 node has {A3.devices_per_node}"
    )
    assert finding.fix.startswith(f"Fit the product in {largest}: lower --tensor-parallel-size")
    assert "--data-parallel-size" in finding.fix
    assert not found


def test_a3_image_on_the_a2_layout_is_half_an_a3_node(tmp_path: Path) -> None:
    # Eight of an A3 node's sixteen NPUs with TP 8: a layout an A3 node runs, so the A3
    # image is right for it; nothing in a Compose file says the node is an A2
    # (check --node-kind does, below).
    path = _planted(tmp_path, "A2", f"image: {A2_IMAGE}\n", f"image: {A3_IMAGE}\n")
    assert check_file(path) == []


@pytest.mark.parametrize("kind", sorted(COMPOSE))
def test_node_kind_option_passes_each_compose_file_on_its_own_kind(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--node-kind", kind, str(COMPOSE[kind])]) == 0
    assert capsys.readouterr().out == "1 file(s) checked: 0 finding(s)\n"


@pytest.mark.parametrize(
    ("file_kind", "node", "image", "other"),
    [("A2", A3, A2_IMAGE, A3_IMAGE), ("A3", A2, A3_IMAGE, A2_IMAGE)],
    ids=["a2-file-on-an-a3-node", "a3-file-on-an-a2-node"],
)
def test_node_kind_option_flags_the_other_kinds_image(
    file_kind: str, node, image: str, other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--node-kind", node.name, str(COMPOSE[file_kind])]) == 1
    out = capsys.readouterr().out
    (line,) = _lines(out, "image-node-kind-mismatch")
    assert f"`image` {image} is built for {NODE_KINDS[file_kind].name} nodes" in line
    assert f"but --node-kind {node.name} says the node is an {node.name}" in line
    assert line.endswith(f"(fix: image: {other})")


def test_node_kind_option_flags_the_a3_layout_on_an_a2_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--node-kind", "A2", str(COMPOSE["A3"])]) == 1
    (line,) = _lines(capsys.readouterr().out, "parallel-exceeds-node")
    assert f"= {A3.devices_per_node} NPUs, but one A2 node has {A2.devices_per_node}" in line


def test_node_kind_option_refuses_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--node-kind", "A5", str(COMPOSE["A2"])]) == 2
    assert "argument --node-kind: invalid choice: 'A5' (choose from 'A2', 'A3')" in (
        capsys.readouterr().err
    )


SERVE_CONFIG = """\
applications:
  - name: llm
    import_path: ray_serve_npu:build_openai_app
    args:
      llm_configs:
        - model_loading_config:
            model_id: deepseek-v4-flash
          accelerator_type: {soc}
          runtime_env:
            image_uri: {image}
          engine_kwargs:
            tensor_parallel_size: 8
"""


@pytest.mark.parametrize(
    ("declared", "image", "other"),
    [(A2, A3_IMAGE, A2_IMAGE), (A3, A2_IMAGE, A3_IMAGE)],
    ids=["a3-image-on-a2", "a2-image-on-a3"],
)
def test_image_against_the_declared_accelerator_type(
    tmp_path: Path, declared, image: str, other: str
) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(SERVE_CONFIG.format(soc=declared.soc_names[0], image=image))
    (finding,) = [f for f in check_file(path) if f.rule_id == "image-node-kind-mismatch"]
    assert f"`accelerator_type` {declared.soc_names[0]} is an {declared.name} device" in (
        finding.message
    )
    assert finding.fix == f"image: {other}"


DP_SERVE_CONFIG = """\
applications:
  - name: llm
    import_path: ray_serve_npu:build_dp_openai_app
    args:
      llm_config:
        model_loading_config:
          model_id: deepseek-v4-flash
        accelerator_type: {soc}
        engine_kwargs:
          data_parallel_size: 4
          tensor_parallel_size: 4
"""


def test_node_kind_option_against_the_declared_accelerator_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An A3 device declared, an A2 node named: the conflict, and the layout judged on the
    # node named (sixteen NPUs do not fit one A2 node).
    path = tmp_path / "serve.yaml"
    path.write_text(DP_SERVE_CONFIG.format(soc=A3.soc_names[0]))
    assert main(["--node-kind", "A2", str(path)]) == 1
    out = capsys.readouterr().out
    (conflict,) = _lines(out, "node-kind-conflict")
    assert f"`accelerator_type` {A3.soc_names[0]} is an A3 device and --node-kind A2" in conflict
    (layout,) = _lines(out, "parallel-exceeds-node")
    assert f"= 16 NPUs, but one A2 node has {A2.devices_per_node}" in layout
    # The same file on the node it declares: clean.
    assert main(["--node-kind", "A3", str(path)]) == 0


def test_one_image_finding_when_both_declarations_name_the_same_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(SERVE_CONFIG.format(soc=A2.soc_names[0], image=A3_IMAGE))
    assert main(["--node-kind", "A2", str(path)]) == 1
    (line,) = _lines(capsys.readouterr().out, "image-node-kind-mismatch")
    assert "is an A2 device and --node-kind A2 says the node is an A2" in line
    assert line.endswith(f"(fix: image: {A2_IMAGE})")


SPAN_RECIPE = ROOT / "recipes" / "serve_span_nodes.py"


def test_a_layout_ray_may_spread_over_nodes_is_not_one_nodes(tmp_path: Path) -> None:
    # serve_span_nodes.py runs TP 16 over two A2 nodes, its bundles placed with PACK.
    assert check_file(SPAN_RECIPE, node_kind="A2") == []
    text = SPAN_RECIPE.read_text()
    assert '"strategy": "PACK"' in text
    packed = tmp_path / SPAN_RECIPE.name
    packed.write_text(text.replace('"strategy": "PACK"', '"strategy": "STRICT_PACK"'))
    # serve_span_nodes.py imports serve_npu.py's config from its own directory.
    (tmp_path / "serve_npu.py").write_text((ROOT / "recipes" / "serve_npu.py").read_text())
    (finding,) = check_file(packed, node_kind="A2")
    assert finding.rule_id == "parallel-exceeds-node"
    assert f"= 16 NPUs, but one A2 node has {A2.devices_per_node}" in finding.message


DOCKERFILE = ROOT / "recipes" / "Dockerfile"


def test_a_dockerfiles_image_is_fixed_where_it_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # recipes/Dockerfile takes its base image from a build argument: the fix is the
    # build's, not an edit of the file.
    assert main(["--node-kind", "A3", str(DOCKERFILE)]) == 1
    (line,) = _lines(capsys.readouterr().out, "image-node-kind-mismatch")
    # The Dockerfile builds the Ray Serve LLM path's image, of that path's release.
    fix = f"VLLM_ASCEND_IMAGE={SERVE_LLM_RELEASE.image('A3')})"
    assert line.endswith(f"(fix: docker build --build-arg {fix}")
    # A FROM that names the image itself is fixed in the file.
    literal = tmp_path / "Dockerfile"
    literal.write_text(f"FROM {A2_IMAGE}\n")
    assert main(["--node-kind", "A3", str(literal)]) == 1
    (line,) = _lines(capsys.readouterr().out, "image-node-kind-mismatch")
    assert line.endswith(f"(fix: image: {A3_IMAGE})")
