"""`ray-serve-npu check` on recipes/serve_model.py (#39): the recipe serves whichever run
of vLLM-Ascend's CI its command line names, so the checker judges every run of the
release it reads, each finding naming the run and its line in the CI's config."""

from __future__ import annotations

import re
from pathlib import Path

from ray_serve_npu.check import check_paths, parse_file
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.nightly import nightly_runs

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "serve_model.py"
#: ``RUN (tests/e2e/nightly/single_node/models/configs/FILE.yaml:LINE at TAG): ...``
LABELLED = re.compile(
    r"^\S+ \(tests/e2e/nightly/single_node/models/configs/\S+\.yaml:\d+ at v\S+\): "
)


def test_every_run_the_recipe_serves_is_judged() -> None:
    parsed = parse_file(RECIPE)
    runs = nightly_runs(SERVE_LLM_RELEASE.tag)
    assert len(parsed.deployments) == len(runs)
    assert {d.model.value for d in parsed.deployments if d.model} == {r.model for r in runs}


def test_the_ci_runs_hold_no_error_under_their_releases_rules_and_findings_name_the_run() -> None:
    report = check_paths([RECIPE], release=SERVE_LLM_RELEASE.tag)
    assert report.checked == 1 and report.unreadable == []
    assert [f for f in report.findings if f.severity is Severity.ERROR] == []
    assert report.findings, "the CI's configs have warnings the checker knows (the models page)"
    assert all(LABELLED.match(f.message) for f in report.findings), report.findings[:3]
