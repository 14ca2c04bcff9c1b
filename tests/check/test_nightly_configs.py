"""Every `vllm serve` command line of vLLM-Ascend's nightly CI at a release passes the
checker's flag judgment at that release's vLLM: the checker calls nothing an error that
vLLM-Ascend's own hardware CI serves (ray_serve_npu.releases.nightly)."""

from __future__ import annotations

import pytest

from ray_serve_npu.check.arguments import apply_serve_argv, judge_arguments
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.releases.nightly import nightly_runs
from ray_serve_npu.vllm_flags import stored_flags


@pytest.mark.parametrize("tag", sorted(available_releases()))
def test_every_nightly_command_line_passes_the_flag_judgment(tag: str) -> None:
    flags = stored_flags(RELEASES[tag].vllm)
    runs = nightly_runs(tag)
    assert len(runs) >= 30, len(runs)
    refused = []
    read = 0
    for run in runs:
        # Every node's command line: a multi-node run's further nodes too.
        for argv in (run.argv, *run.other_nodes_argv):
            deployment = Deployment(file=run.path, line=run.line)
            words = [run.model, *argv]
            apply_serve_argv([Setting(value=w, line=run.line) for w in words], deployment)
            judge_arguments(deployment, flags)
            refused += [(run.name, s.value, why) for s, why in deployment.unknown_flags]
            refused += [(run.name, s.value, message) for s, message in deployment.invalid_values]
            read += 1
    assert read > len(runs), "no multi-node run's further nodes were read"
    assert refused == []
