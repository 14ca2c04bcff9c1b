"""The rule files are data the checker and the docs can trust."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from checker_data import ROOT

from ray_serve_npu.check import run_rules
from ray_serve_npu.check.checks import CHECKS
from ray_serve_npu.check.model import ParsedFile
from ray_serve_npu.check.rules import (
    BASE_FILE,
    RELEASE_TOKEN,
    RULES_DIR,
    available_releases,
    load_rules,
)
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


def _planted(tmp_path: Path, release: str, old: str, new: str, name: str) -> Path:
    """The base and ``release``'s file, copied to ``tmp_path`` (the release's as ``name``),
    with ``old`` replaced by ``new`` in the one of them that holds it."""
    files = {BASE_FILE: BASE_FILE, f"{release}.yaml": f"{name}.yaml"}
    holders = [source for source in files if old in (RULES_DIR / source).read_text()]
    assert len(holders) == 1, (old, holders)
    for source, target in files.items():
        text = (RULES_DIR / source).read_text()
        (tmp_path / target).write_text(text.replace(old, new) if source in holders else text)
    return tmp_path


@pytest.mark.parametrize("mistake", list(PLANTED_MISTAKES))
def test_a_rule_file_with_a_planted_mistake_is_refused(tmp_path: Path, mistake: str) -> None:
    release, old, new, name, says = PLANTED_MISTAKES[mistake]
    rules_dir = _planted(tmp_path, release, old, new, name)
    with pytest.raises(ValueError, match=re.escape(says)):
        load_rules(name, rules_dir)


#: Mistakes of the layout itself: (text of v0.23.0.yaml, its replacement, what the
#: refusal says).
LAYOUT_MISTAKES = {
    "rule-not-in-base": (
        "  vllm-invalid-value:\n",
        "  vllm-invalid-valu:\n",
        "rules vllm-invalid-valu are not in base.yaml",
    ),
    "check-set-per-release": (
        "  vllm-invalid-value:\n    source:\n",
        "  vllm-invalid-value:\n    check: vllm_flags\n    source:\n",
        "rules.vllm-invalid-value: check can't differ per release; set them in base.yaml",
    ),
}


@pytest.mark.parametrize("mistake", list(LAYOUT_MISTAKES))
def test_a_release_file_sets_only_what_may_differ_for_rules_of_the_base(
    tmp_path: Path, mistake: str
) -> None:
    old, new, says = LAYOUT_MISTAKES[mistake]
    rules_dir = _planted(tmp_path, "v0.23.0", old, new, "v0.23.0")
    with pytest.raises(ValueError, match=re.escape(says)):
        load_rules("v0.23.0", rules_dir)


def test_a_rule_a_release_leaves_out_is_refused(tmp_path: Path) -> None:
    text = (RULES_DIR / "v0.23.0.yaml").read_text()
    start = text.index("  vllm-invalid-value:\n")
    end = text.index("\n  additional-config-unknown-key:\n")
    rules_dir = _planted(tmp_path, "v0.23.0", text[start:end], "", "v0.23.0")
    with pytest.raises(ValueError, match="no entry for vllm-invalid-value; every rule needs"):
        load_rules("v0.23.0", rules_dir)


@pytest.mark.parametrize("release", available_releases())
def test_a_release_file_holds_only_what_differs_from_the_base(release: str) -> None:
    base = {
        rule["id"]: rule for rule in yaml.safe_load((RULES_DIR / BASE_FILE).read_text())["rules"]
    }
    own = yaml.safe_load((RULES_DIR / f"{release}.yaml").read_text())["rules"]
    repeated = []
    for rule_id, fields in own.items():
        for field, value in fields.items():
            held = base[rule_id].get(field)
            if field == "params":
                repeated += [
                    f"{rule_id}.params.{key}"
                    for key, param in value.items()
                    if (held or {}).get(key) == param
                ]
            elif isinstance(held, str) and held.replace(RELEASE_TOKEN, release) == value:
                repeated.append(f"{rule_id}.{field}")
            elif held == value:
                repeated.append(f"{rule_id}.{field}")
    assert repeated == [], f"{release}.yaml repeats what {BASE_FILE} holds"


def test_the_base_names_the_release_where_a_text_says_which() -> None:
    (base,) = [
        rule
        for rule in yaml.safe_load((RULES_DIR / BASE_FILE).read_text())["rules"]
        if rule["id"] == "env-flashcomm1-deprecated"
    ]
    assert f"still works in {RELEASE_TOKEN}" in base["what"]
    assert "still works in v0.23.0 " in load_rules("v0.23.0").rule(base["id"]).what
