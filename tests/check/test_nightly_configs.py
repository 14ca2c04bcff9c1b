"""Every `vllm serve` command line of vLLM-Ascend's nightly CI at a release passes the
checker's flag judgment at that release's vLLM: the checker calls nothing an error that
vLLM-Ascend's own hardware CI serves (tests/data/vllm_ascend_nightly says where the
files come from)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from checker_data import ROOT

from ray_serve_npu.check.arguments import apply_serve_argv, judge_arguments
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.vllm_flags import stored_flags

NIGHTLY = ROOT / "tests" / "data" / "vllm_ascend_nightly"
#: The CI fills a port whose value is DEFAULT_PORT with a free one
#: (tests/e2e/nightly/single_node/models/scripts/GUIDE_AND_TEMPLATE.md:157 at v0.25.1rc1).
A_FREE_PORT = "8000"


def _argv(case: dict) -> list[str]:
    """The words after `vllm serve`, as the CI's runner builds them: server_cmd, then
    server_cmd_extra (single_node_config.py:165-167 at v0.25.1rc1), `$NAME` from envs."""
    envs = {k: A_FREE_PORT if v == "DEFAULT_PORT" else str(v) for k, v in case["envs"].items()}
    words = [str(w) for w in [*case["server_cmd"], *case.get("server_cmd_extra", [])]]
    return [case["model"], *(re.sub(r"\$(\w+)", lambda m: envs[m[1]], w) for w in words)]


def _cases(tag: str) -> list[tuple[Path, dict]]:
    return [
        (path, case)
        for path in sorted((NIGHTLY / tag).glob("*.yaml"))
        for case in yaml.safe_load(path.read_text())["test_cases"]
        if case.get("service_mode", "openai") == "openai"
    ]


def test_the_configs_of_every_release_with_rules_are_stored() -> None:
    assert {p.name for p in NIGHTLY.iterdir() if p.is_dir()} == set(available_releases())


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_every_nightly_command_line_passes_the_flag_judgment(tag: str) -> None:
    flags = stored_flags(RELEASES[tag].vllm)
    cases = _cases(tag)
    assert len(cases) >= 30, len(cases)
    refused = []
    for path, case in cases:
        deployment = Deployment(file=path.name, line=1)
        apply_serve_argv([Setting(value=w, line=1) for w in _argv(case)], deployment)
        judge_arguments(deployment, flags)
        refused += [(path.name, case["name"], s.value, why) for s, why in deployment.unknown_flags]
        refused += [(path.name, case["name"], s.value, m) for s, m in deployment.invalid_values]
    assert refused == []
