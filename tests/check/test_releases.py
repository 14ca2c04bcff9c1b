"""The checker judges a file by the rules of the vLLM-Ascend release its image names.

The community guide's Compose file sets ``VLLM_ASCEND_BALANCE_SCHEDULING=1``. At
v0.22.1rc1 the scheduler patch ignores the variable (an error); at v0.23.0 it turns
balance scheduling on (the rule says it does not apply); at v0.25.1rc1 and v0.26.0rc1
only the engine-core entry's fallback ignores it (a warning); at v0.27.1rc1 nothing reads
it (an error again). ``enable_sparse_c8`` is a key v0.22.1rc1 and v0.25.1rc1 read and
v0.23.0, v0.26.0rc1 and v0.27.1rc1 do not: there it is taken for a misspelling of
``enable_sparse_li_c8``, an error. From v0.27.1rc1 AscendConfig refuses any key it does
not take, so an unknown key is an error there, misspelt or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from checker_data import DATA, line_of

import ray_serve_npu.check as check_module
import ray_serve_npu.check.rules as rules_module
from ray_serve_npu.check import InputError, check_file, check_paths, run_rules
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.check.model import Deployment, ParsedFile, Setting
from ray_serve_npu.check.rules import available_releases, load_rules

GUIDE = DATA / "community-guide-compose.yaml"
IMAGE = "quay.io/ascend/vllm-ascend:v0.22.1rc1"
RELEASES = ("v0.22.1rc1", "v0.23.0", "v0.25.1rc1", "v0.26.0rc1", "v0.27.1rc1")
BALANCE = "env-balance-scheduling-ignored"
UNKNOWN_KEY = "additional-config-unknown-key"
#: Where a key is planted in the guide's --additional-config: after this one.
SPARSE_C8 = '"enable_cpu_binding":true,'


def _guide_of(
    release: str, tmp_path: Path, extra_key: bool = False, key: str = "enable_sparse_c8"
) -> Path:
    """The community guide with the release's image; with ``extra_key``, ``key`` set to
    true in its --additional-config (``enable_sparse_c8`` unless told: the key v0.23.0,
    v0.26.0rc1 and v0.27.1rc1 do not read, and the two others do)."""
    text = GUIDE.read_text().replace(IMAGE, f"quay.io/ascend/vllm-ascend:{release}")
    if extra_key:
        assert SPARSE_C8 in text, "test setup: the guide's additional_config changed"
        text = text.replace(SPARSE_C8, SPARSE_C8 + f'"{key}":true,')
    path = tmp_path / f"compose-{release}.yaml"
    path.write_text(text)
    return path


def _by_rule(findings: list, rule_id: str) -> list:
    return [f for f in findings if f.rule_id == rule_id]


def test_the_checker_has_rules_for_every_supported_release() -> None:
    assert set(RELEASES) <= set(available_releases())


def test_balance_variable_is_an_error_only_where_the_release_ignores_it(tmp_path: Path) -> None:
    line = line_of(GUIDE.read_text(), "VLLM_ASCEND_BALANCE_SCHEDULING")
    seed = _by_rule(check_file(_guide_of("v0.22.1rc1", tmp_path)), BALANCE)
    assert [(f.line, f.severity) for f in seed] == [(line, Severity.ERROR)]
    # v0.23.0 honours the variable: the rule is in the file, marked not applicable.
    assert _by_rule(check_file(_guide_of("v0.23.0", tmp_path)), BALANCE) == []
    assert not load_rules("v0.23.0").rule(BALANCE).applies
    for newer in ("v0.25.1rc1", "v0.26.0rc1"):
        newest = _by_rule(check_file(_guide_of(newer, tmp_path)), BALANCE)
        assert [(f.line, f.severity) for f in newest] == [(line, Severity.WARNING)]
        assert "scheduler_config" in newest[0].fix
    # v0.27.1rc1 reads the variable nowhere: an error again.
    (newest,) = _by_rule(check_file(_guide_of("v0.27.1rc1", tmp_path)), BALANCE)
    assert (newest.line, newest.severity) == (line, Severity.ERROR)
    assert "scheduler_config" in newest.fix


def test_a_key_one_release_does_not_read_is_an_error_there_only(tmp_path: Path) -> None:
    judged = {
        release: _by_rule(check_file(_guide_of(release, tmp_path, extra_key=True)), UNKNOWN_KEY)
        for release in RELEASES
    }
    assert judged["v0.22.1rc1"] == [] and judged["v0.25.1rc1"] == []
    for release in ("v0.23.0", "v0.26.0rc1", "v0.27.1rc1"):
        (finding,) = judged[release]
        assert finding.severity is Severity.ERROR
        assert "enable_sparse_c8" in finding.message and release in finding.message
        assert "enable_sparse_li_c8" in finding.fix
    # Before v0.27.1rc1 the key is dropped; from it, start-up refuses it.
    assert "ignored silently" in judged["v0.26.0rc1"][0].message
    assert "refuses it at start-up" in judged["v0.27.1rc1"][0].message


@pytest.mark.parametrize(
    ("key", "at_v0_26"),
    [
        # A key v0.26.0rc1 reads and v0.27.1rc1 no longer takes.
        ("enable_sleep_mode_extra_cleanup", None),
        # A key no release reads, and no misspelling of one.
        ("no_such_thing_at_all", Severity.WARNING),
    ],
)
def test_an_unknown_key_is_an_error_from_v0_27_1rc1_where_ascend_config_refuses_it(
    tmp_path: Path, key: str, at_v0_26: Severity | None
) -> None:
    """v0.27.1rc1's AscendConfig is a pydantic dataclass with extra="forbid": any key it does
    not take stops start-up, where v0.26.0rc1 dropped it without a word."""
    found = {
        release: _by_rule(check_file(_guide_of(release, tmp_path, True, key)), UNKNOWN_KEY)
        for release in ("v0.26.0rc1", "v0.27.1rc1")
    }
    assert [f.severity for f in found["v0.26.0rc1"]] == ([at_v0_26] if at_v0_26 else [])
    (finding,) = found["v0.27.1rc1"]
    assert finding.severity is Severity.ERROR
    assert key in finding.message and "refuses" in finding.message


def test_dsa_cp_without_flashcomm1_is_an_error_until_v0_27_1rc1_turns_it_on_itself(
    tmp_path: Path,
) -> None:
    """At v0.26.0rc1 enable_dsa_cp raises without FlashComm1; at v0.27.1rc1 AscendConfig
    turns sequence parallelism on for it, and the rule does not apply."""
    rule = "dsa-cp-requires-flashcomm1"
    found = {}
    for release in ("v0.26.0rc1", "v0.27.1rc1"):
        text = _guide_of(release, tmp_path).read_text()
        assert '"enable_dsa_cp":false' in text, "test setup: the guide's additional_config changed"
        path = tmp_path / f"dsa-cp-{release}.yaml"
        path.write_text(text.replace('"enable_dsa_cp":false', '"enable_dsa_cp":true'))
        found[release] = _by_rule(check_file(path), rule)
    assert [f.severity for f in found["v0.26.0rc1"]] == [Severity.ERROR]
    assert found["v0.27.1rc1"] == []
    assert not load_rules("v0.27.1rc1").rule(rule).applies


def test_release_option_overrides_the_image(tmp_path: Path, capsys) -> None:
    path = _guide_of("v0.22.1rc1", tmp_path, extra_key=True)
    assert _by_rule(check_file(path, release="v0.23.0"), UNKNOWN_KEY)
    assert not _by_rule(check_file(path, release="v0.23.0"), BALANCE)
    assert main(["--release", "v0.23.0", str(path)]) == 1
    assert "did you mean `enable_sparse_li_c8`" in capsys.readouterr().out


def test_an_unsupported_release_option_names_the_option_and_the_releases(capsys) -> None:
    assert main(["--release", "v0.24.0rc1", str(GUIDE)]) == 2
    err = capsys.readouterr().err
    assert "--release" in err and "'v0.24.0rc1'" in err
    assert all(release in err for release in RELEASES)
    assert main(["--release", "0.23.0", str(GUIDE)]) == 2
    assert "a tag starts with 'v': v0.23.0" in capsys.readouterr().err


# A release the data does not know, one whose files can't be read here (unread.yaml), and
# one whose facts are read but whose rules are not written: the checker has rules for none,
# says why from the data, and applies no other release's. Every release the data reads has
# rules now, so the last is v0.27.1rc1 with its rules file hidden from the checker.
@pytest.mark.parametrize(
    ("unknown", "why"),
    [
        ("v0.24.0rc1", "no rules for vLLM-Ascend 'v0.24.0rc1'; it has rules for"),
        ("v0.30.0", "its files can't be read here: the copy of github:vllm-project/vllm-ascend"),
        ("v0.27.1rc1", "its facts are read, its rules are not written"),
    ],
)
def test_an_image_of_an_unsupported_release_is_refused_at_its_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    unknown: str,
    why: str,
) -> None:
    if unknown in available_releases():
        without = [release for release in available_releases() if release != unknown]
        monkeypatch.setattr(check_module, "available_releases", lambda: without)
        monkeypatch.setattr(rules_module, "available_releases", lambda: without)
    path = _guide_of(unknown, tmp_path)
    with pytest.raises(InputError) as error:
        check_file(path)
    assert error.value.line == line_of(GUIDE.read_text(), IMAGE)
    message = str(error.value)
    assert f"image quay.io/ascend/vllm-ascend:{unknown}" in message and why in message
    assert all(release in message for release in RELEASES) and "--release" in message
    assert main([str(path)]) == 2
    printed = capsys.readouterr()
    assert all(release in printed.err for release in RELEASES)
    # With a release given, the image does not choose.
    assert check_file(path, release="v0.23.0")
    report = check_paths([path])
    assert report.checked == 0 and unknown in report.unreadable[0]


def test_images_of_two_releases_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(
        "services:\n"
        "  a:\n"
        f"    image: {IMAGE}\n"
        "  b:\n"
        "    image: quay.io/ascend/vllm-ascend:v0.23.0-a3\n"
    )
    with pytest.raises(
        InputError, match=r"more than one vLLM-Ascend release: v0\.22\.1rc1"
    ) as error:
        check_file(path)
    assert "v0.23.0 (line 5)" in str(error.value) and "--release" in str(error.value)
    assert check_file(path, release="v0.23.0") == []


@pytest.mark.parametrize(("release", "fires"), [("v0.22.1rc1", True), ("v0.23.0", False)])
def test_a_dockerfile_is_judged_by_its_base_image(
    tmp_path: Path, release: str, fires: bool
) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        f"ARG VLLM_ASCEND_IMAGE=quay.io/ascend/vllm-ascend:{release}\n"
        "FROM ${VLLM_ASCEND_IMAGE}\n"
        "ENV VLLM_ASCEND_BALANCE_SCHEDULING=1\n"
    )
    found = _by_rule(check_file(dockerfile), BALANCE)
    assert [f.line for f in found] == ([3] if fires else [])


def test_a_rule_marked_not_applicable_never_fires() -> None:
    rules = load_rules("v0.22.1rc1").model_copy(deep=True)
    parsed = ParsedFile(
        path="x",
        deployments=[
            Deployment(
                file="x", line=1, env={"VLLM_ASCEND_BALANCE_SCHEDULING": Setting(value="1", line=2)}
            )
        ],
    )
    assert _by_rule(run_rules(parsed, rules), BALANCE)
    rules.rule(BALANCE).not_applicable = "the release honours the variable"
    assert not _by_rule(run_rules(parsed, rules), BALANCE)


LOAD_STRATEGY = "load-strategy-with-multithread-load"


@pytest.mark.parametrize(
    ("release", "severity"),
    [
        ("v0.22.1rc1", Severity.WARNING),
        ("v0.23.0", Severity.WARNING),
        ("v0.25.1rc1", Severity.ERROR),
        ("v0.26.0rc1", Severity.ERROR),
        ("v0.27.1rc1", Severity.ERROR),
    ],
)
def test_a_load_strategy_beside_multithread_load_is_an_error_only_where_vllm_refuses_it(
    tmp_path: Path, release: str, severity: Severity
) -> None:
    # The guide sets --safetensors-load-strategy prefetch and enable_multithread_load:
    # vLLM 0.22.1 and 0.23.0 ignore the strategy, vLLM 0.25.1, 0.26.0 and 0.27.1 stop at
    # start-up.
    guide = _guide_of(release, tmp_path)
    line = line_of(guide.read_text(), "--model-loader-extra-config")
    found = _by_rule(check_file(guide), LOAD_STRATEGY)
    assert [(f.line, f.severity) for f in found] == [(line, severity)]


@pytest.mark.parametrize("strategy", [None, "lazy"])
def test_multithread_load_with_the_lazy_strategy_passes(
    tmp_path: Path, strategy: str | None
) -> None:
    text = _guide_of("v0.25.1rc1", tmp_path).read_text()
    flag = "      - --safetensors-load-strategy\n      - prefetch\n"
    assert flag in text, "test setup: the guide's load strategy changed"
    path = tmp_path / "lazy.yaml"
    path.write_text(
        text.replace(flag, "" if strategy is None else flag.replace("prefetch", strategy))
    )
    assert _by_rule(check_file(path), LOAD_STRATEGY) == []


MULTITHREAD_BOOLEAN = "multithread-load-not-boolean"


@pytest.mark.parametrize("written", ['"true"', '"false"', "1", '"no"'])
def test_a_multithread_load_that_is_no_boolean_is_an_error_only_where_vllm_demands_one(
    tmp_path: Path, written: str
) -> None:
    by_release = {}
    for release in RELEASES:
        text = _guide_of(release, tmp_path).read_text()
        assert '"enable_multithread_load":true' in text, "test setup: the guide's loader changed"
        path = tmp_path / f"written-{release}.yaml"
        path.write_text(
            text.replace('"enable_multithread_load":true', f'"enable_multithread_load":{written}')
        )
        by_release[release] = [f.severity for f in _by_rule(check_file(path), MULTITHREAD_BOOLEAN)]
    # vLLM 0.22.1 and 0.23.0 test the value's truth; vLLM 0.25.1, 0.26.0 and 0.27.1 want a
    # bool (isinstance).
    assert by_release == {
        "v0.22.1rc1": [],
        "v0.23.0": [],
        "v0.25.1rc1": [Severity.ERROR],
        "v0.26.0rc1": [Severity.ERROR],
        "v0.27.1rc1": [Severity.ERROR],
    }
    assert not load_rules("v0.23.0").rule(MULTITHREAD_BOOLEAN).applies
    # The guide as written, a JSON Boolean, passes everywhere.
    assert _by_rule(check_file(_guide_of("v0.25.1rc1", tmp_path)), MULTITHREAD_BOOLEAN) == []
