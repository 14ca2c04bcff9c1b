"""The Ascend runners' workflow runs the suite in the image recipes/Dockerfile builds,
with the Dockerfile's own pins, in a container started as docs/npu-ascend.md starts one.

The workflow is read with a YAML 1.2 parser (ruamel.yaml: ``on`` stays a key), and
its shell lines, like the page's, with the harness's own word splitter.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ray_serve_npu_tooling.harness.blocks import read_page
from ray_serve_npu_tooling.harness.server_config import commands
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ascend-recipes.yml"
DOCKERFILE = Path("recipes") / "Dockerfile"
PAGE = ROOT / "docs" / "npu-ascend.md"
#: The page's A2 container command, between these markers.
PAGE_MARKER = "% __container_a2_start__"

#: docker run options that take no value.
FLAGS = {"--rm", "-it", "-i", "-t", "-d", "--privileged", "--init"}
#: Options that widen what the container may do; the page uses none.
PRIVILEGE = {"--privileged", "--cap-add", "--security-opt", "--pid", "--ipc", "--userns"}

Option = tuple[str, str | None]

#: What the page's command has and a job can't use: a terminal, a fixed name, the
#: token file (the page's own blocks make it inside; the Ascend tier sets
#: RAY_AUTH_MODE), and the recipes mount (the image holds the checkout).
PAGE_ONLY: list[Option] = [
    ("-it", None),
    ("--name", "ray-serve-npu"),
    ("-e", "RAY_AUTH_MODE=token"),
    ("-v", "$HOME/.ray/auth_token:/root/.ray/auth_token:ro"),
    ("-v", "$HOME/.ray-serve-npu/api_key:/root/.ray-serve-npu/api_key:ro"),
    ("-v", "$PWD:/workspace/recipes"),
    ("-w", "/workspace/recipes"),
]
#: What the job adds: no usage reports from CI, and the checkout in the image.
WORKFLOW_ONLY: list[Option] = [
    ("-e", "RAY_USAGE_STATS_ENABLED=0"),
    ("-w", "/opt/ray-serve-npu"),
]


def _workflow() -> dict[str, Any]:
    return YAML(typ="safe").load(WORKFLOW.read_text())


def _job(workflow: dict[str, Any]) -> dict[str, Any]:
    (job,) = workflow["jobs"].values()
    return job


def _command(workflow: dict[str, Any], *start: str) -> list[str]:
    """The one command line of the job's steps whose argv starts with ``start``."""
    found = [
        argv
        for step in _job(workflow)["steps"]
        if "run" in step
        for argv in commands(step["run"])
        if argv[: len(start)] == list(start)
    ]
    assert len(found) == 1, f"{WORKFLOW.name}: {len(found)} `{' '.join(start)}` commands"
    return found[0]


def _run_options(argv: list[str]) -> tuple[list[Option], list[str]]:
    """``docker run``'s options, and what follows them: the image and its command."""
    assert argv[:2] == ["docker", "run"]
    options: list[Option] = []
    words = iter(argv[2:])
    for word in words:
        if not word.startswith("-"):
            return options, [word, *words]
        if word in FLAGS:
            options.append((word, None))
        elif word.startswith("--") and "=" in word:
            name, value = word.split("=", 1)
            options.append((name, value))
        else:
            options.append((word, next(words)))
    raise AssertionError(f"no image in {argv}")


def _build_args(argv: list[str]) -> dict[str, str]:
    values = [argv[i + 1] for i, word in enumerate(argv) if word == "--build-arg"]
    return dict(value.split("=", 1) for value in values)


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _page_command() -> list[str]:
    text = PAGE.read_text()
    marker_line = text.splitlines().index(PAGE_MARKER) + 1
    blocks = [item.block for item in read_page(text, PAGE, PAGE.parent) if item.block]
    block = next(block for block in blocks if block.line > marker_line)
    (argv,) = commands(block.text)
    return argv


def test_the_job_builds_the_dockerfile_with_its_own_pins() -> None:
    build = _command(_workflow(), "docker", "build")
    assert Path(_option(build, "-f")) == DOCKERFILE
    assert build[-1] == ".", "the build context is the checkout's root, as the Dockerfile says"
    # Only the test extra: the base image, Ray and fastapi stay the Dockerfile's.
    assert _build_args(build) == {"EXTRAS": "test"}
    dockerfile_args = [
        line.split()[1].split("=")[0]
        for line in (ROOT / DOCKERFILE).read_text().splitlines()
        if line.startswith("ARG ")
    ]
    assert "EXTRAS" in dockerfile_args
    # The harness the job runs is the repository's tooling, outside the product's wheel.
    assert "${EXTRAS:+/opt/ray-serve-npu/tooling}" in (ROOT / DOCKERFILE).read_text()


def test_the_suite_runs_in_the_image_the_job_built() -> None:
    workflow = _workflow()
    job = _job(workflow)
    # A job container would be another image, pulled from a registry.
    assert "container" not in job
    _, (image, *command) = _run_options(_command(workflow, "docker", "run"))
    assert image == _option(_command(workflow, "docker", "build"), "-t")
    # Every test of both tiers, the pages on the NPUs (ray_serve_npu_tooling.tiers).
    assert command[:6] == ["python3", "-m", "pytest", "--run-recipes", "--tier", "all"]
    # Nothing is installed outside the Dockerfile, which holds the image's vLLM.
    runs = [argv for step in job["steps"] if "run" in step for argv in commands(step["run"])]
    assert not [argv for argv in runs if "pip" in argv or argv[0].startswith("pip")]


def _container_options(workflow: dict[str, Any]) -> tuple[Counter[Option], Counter[Option]]:
    """The page's options and the job's, each less what only it may have."""
    page, _ = _run_options(_page_command())
    job, _ = _run_options(_command(workflow, "docker", "run"))
    assert not Counter(PAGE_ONLY) - Counter(page), "the page changed: update PAGE_ONLY"
    assert not Counter(WORKFLOW_ONLY) - Counter(job)
    return Counter(page) - Counter(PAGE_ONLY), Counter(job) - Counter(WORKFLOW_ONLY)


def test_the_container_starts_as_the_page_starts_it() -> None:
    # Same device nodes, read-only driver files, shared memory and network.
    page, job = _container_options(_workflow())
    assert sorted(job) == sorted(page)


def test_the_job_holds_least_privilege() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    assert "permissions" not in _job(workflow)
    (checkout,) = [
        s for s in _job(workflow)["steps"] if s.get("uses", "").startswith("actions/checkout")
    ]
    assert checkout["with"]["persist-credentials"] is False
    options, _ = _run_options(_command(workflow, "docker", "run"))
    assert not [name for name, _ in options if name in PRIVILEGE]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("--shm-size=512g", "--shm-size=16g"),
        ("-v /etc/hccn.conf:/etc/hccn.conf:ro ", ""),
        ("lib64/:ro", "lib64/"),
        ("--device /dev/hisi_hdc", "--device /dev/hisi_hdc --privileged"),
    ],
)
def test_a_container_option_that_drifts_from_the_page_is_found(old: str, new: str) -> None:
    text = WORKFLOW.read_text()
    assert old in text
    page, job = _container_options(YAML(typ="safe").load(text.replace(old, new, 1)))
    assert sorted(job) != sorted(page)
