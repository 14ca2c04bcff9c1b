"""The rule files are data the checker and the docs can trust."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from checker_data import ROOT

from ray_serve_npu.check import run_rules
from ray_serve_npu.check.checks import CHECKS
from ray_serve_npu.check.model import ParsedFile
from ray_serve_npu.check.rules import available_releases, load_rules

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
        assert row.startswith(f"| `{rule.id}` | {rule.severity.value} |")
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
