"""The rule files are data the checker and the docs can trust."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from checker_data import ROOT

from ray_serve_npu.check import run_rules
from ray_serve_npu.check.checks import CHECKS
from ray_serve_npu.check.model import ParsedFile
from ray_serve_npu.check.rules import RULES_DIR, available_releases, load_rules
from ray_serve_npu.releases import RELEASES

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import checker_rules  # noqa: E402


@pytest.mark.parametrize("release", available_releases())
def test_rule_file_is_consistent(release: str) -> None:
    rules = load_rules(release)
    assert [r.id for r in rules.rules] == list(dict.fromkeys(r.id for r in rules.rules))
    for rule in rules.rules:
        assert rule.check in CHECKS, rule.id
        assert rule.source.file and rule.fix and rule.what, rule.id


def test_every_check_is_used() -> None:
    used = {r.check for release in available_releases() for r in load_rules(release).rules}
    assert used == set(CHECKS)


def test_unknown_release_names_the_field() -> None:
    with pytest.raises(FileNotFoundError, match="release: no rule file for vLLM-Ascend 'v0.0.0'"):
        load_rules("v0.0.0")


def test_unknown_check_names_the_field_and_fix() -> None:
    rules = load_rules("v0.22.1rc1").model_copy(deep=True)
    rules.rules[0].check = "no_such_check"
    with pytest.raises(ValueError, match="has check: 'no_such_check'.*add the check"):
        run_rules(ParsedFile(path="x"), rules)


def test_docs_table_lists_every_rule_with_its_source() -> None:
    table = checker_rules.render_rules("v0.22.1rc1")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    rules = load_rules("v0.22.1rc1").rules
    assert len(rows) == len(rules)
    for row, rule in zip(rows, rules, strict=True):
        # A rule that does not apply at this release is listed with no severity.
        severity = rule.severity.value if rule.applies else "none"
        assert row.startswith(f"| `{rule.id}` | {severity} |")
        assert rule.source.file in row
        assert row.count(" | ") == 4  # no unescaped pipe splits a cell
    assert "patch_balance_schedule.py:31-33, 58, 649" in table


def test_sphinx_hook_writes_every_release_table_for_the_checks_page(tmp_path: Path) -> None:
    class App:
        srcdir = str(tmp_path)

    checker_rules._write_tables(App())
    written = (tmp_path / "_generated" / "checker-rules.md").read_text()
    for release in available_releases():
        assert f"### vLLM-Ascend {release}\n\n{checker_rules.render_rules(release)}" in written


def test_every_release_has_every_rule() -> None:
    """A rule is re-traced at every release, or marked there as not applying: none is
    left out of a release's file (the seed release's order is kept)."""
    seed = [r.id for r in load_rules("v0.22.1rc1").rules]
    for release in available_releases():
        assert [r.id for r in load_rules(release).rules] == seed, release


@pytest.mark.parametrize("release", available_releases())
def test_tutorial_limits_are_the_release_datas_runs(release: str) -> None:
    """The context limits per node kind are the tutorial's runs that the release data
    transcribed from the same tag (ray_serve_npu.releases)."""
    (model,) = load_rules(release).rule("max-model-len-beyond-documented").params["models"]
    runs = RELEASES[release].deepseek_v4_flash.runs
    assert model["tutorial_max_per_node_kind"] == {
        kind: int(run.args["max-model-len"]) for kind, run in runs.items()
    }


#: A rule file planted with one mistake: (release, text in it, its replacement, the
#: file's name, what the refusal says). Each is refused at load, never run.
PLANTED_MISTAKES = {
    "unverified-source-without-note": (
        "v0.22.1rc1",
        "      note: Same parser as vllm-unknown-flag.\n",
        "",
        "v0.22.1rc1",
        "verified_at_tag is false and note is empty",
    ),
    "verified-at-another-tag": (
        "v0.23.0",
        "      ref: v0.23.0\n      file: vllm_ascend/utils.py\n",
        "      ref: main\n      file: vllm_ascend/utils.py\n",
        "v0.23.0",
        "'dsa-cp-requires-flashcomm1': source.ref is 'main'",
    ),
    # The rules' release must be one the release data holds: its vLLM and images are
    # read from there, never restated in the rule file.
    "release-without-release-data": (
        "v0.23.0",
        "release: v0.23.0\n",
        "release: v9.9.9\n",
        "v9.9.9",
        "release 'v9.9.9' has no release data; add src/",
    ),
    "misspelt-setting-path": (
        "v0.22.1rc1",
        "{path: additional_config.enable_dsa_cp, default: false}",
        "{path: config.enable_dsa_cp, default: false}",
        "v0.22.1rc1",
        "setting path 'config.enable_dsa_cp': write it as one of",
    ),
    # A bare value would make `in` a substring test.
    "in-without-a-list": (
        "v0.25.1rc1",
        "default: lazy, in: [lazy, null]}",
        "default: lazy, in: lazy}",
        "v0.25.1rc1",
        "`in` of engine.safetensors_load_strategy must be a list of values",
    ),
}


@pytest.mark.parametrize("mistake", list(PLANTED_MISTAKES))
def test_a_rule_file_with_a_planted_mistake_is_refused(tmp_path: Path, mistake: str) -> None:
    release, old, new, name, says = PLANTED_MISTAKES[mistake]
    text = (RULES_DIR / f"{release}.yaml").read_text()
    assert old in text
    (tmp_path / f"{name}.yaml").write_text(text.replace(old, new))
    with pytest.raises(ValueError, match=re.escape(says)):
        load_rules(name, tmp_path)
