"""The checker judges a file by the rules of the vLLM-Ascend release its image names.

The community guide's Compose file sets ``VLLM_ASCEND_BALANCE_SCHEDULING=1``. At
v0.22.1rc1 the scheduler patch ignores the variable (an error); at v0.23.0 it turns
balance scheduling on (the rule says it does not apply); at v0.25.1rc1 and v0.26.0rc1
only the engine-core entry's fallback ignores it (a warning). ``enable_sparse_c8`` is a
key v0.22.1rc1 and v0.25.1rc1 read and v0.23.0 and v0.26.0rc1 do not: there it is taken
for a misspelling of ``enable_sparse_li_c8``, an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from checker_data import DATA, line_of

from ray_serve_npu.check import InputError, check_file, check_paths, run_rules
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.check.model import Deployment, ParsedFile, Setting
from ray_serve_npu.check.rules import available_releases, load_rules

GUIDE = DATA / "community-guide-compose.yaml"
IMAGE = "quay.io/ascend/vllm-ascend:v0.22.1rc1"
RELEASES = ("v0.22.1rc1", "v0.23.0", "v0.25.1rc1", "v0.26.0rc1")
BALANCE = "env-balance-scheduling-ignored"
UNKNOWN_KEY = "additional-config-unknown-key"
#: The key v0.23.0 and v0.26.0rc1 do not read (and the two others do), written into the guide's
#: --additional-config.
SPARSE_C8 = '"enable_cpu_binding":true,'


def _guide_of(release: str, tmp_path: Path, extra_key: bool = False) -> Path:
    text = GUIDE.read_text().replace(IMAGE, f"quay.io/ascend/vllm-ascend:{release}")
    if extra_key:
        assert SPARSE_C8 in text, "test setup: the guide's additional_config changed"
        text = text.replace(SPARSE_C8, SPARSE_C8 + '"enable_sparse_c8":true,')
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


def test_a_key_one_release_does_not_read_is_an_error_there_only(tmp_path: Path) -> None:
    judged = {
        release: _by_rule(check_file(_guide_of(release, tmp_path, extra_key=True)), UNKNOWN_KEY)
        for release in RELEASES
    }
    assert judged["v0.22.1rc1"] == [] and judged["v0.25.1rc1"] == []
    for release in ("v0.23.0", "v0.26.0rc1"):
        (finding,) = judged[release]
        assert finding.severity is Severity.ERROR
        assert "enable_sparse_c8" in finding.message and release in finding.message
        assert "enable_sparse_li_c8" in finding.fix


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
# says why from the data, and applies no other release's.
@pytest.mark.parametrize(
    ("unknown", "why"),
    [
        ("v0.24.0rc1", "no rules for vLLM-Ascend 'v0.24.0rc1'; it has rules for"),
        ("v0.30.0", "its files can't be read here: the copy of github:vllm-project/vllm-ascend"),
        ("v0.27.1rc1", "its facts are read, its rules are not written"),
    ],
)
def test_an_image_of_an_unsupported_release_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], unknown: str, why: str
) -> None:
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
    ],
)
def test_a_load_strategy_beside_multithread_load_is_an_error_only_where_vllm_refuses_it(
    tmp_path: Path, release: str, severity: Severity
) -> None:
    # The guide sets --safetensors-load-strategy prefetch and enable_multithread_load:
    # vLLM 0.22.1 and 0.23.0 ignore the strategy, vLLM 0.25.1 and 0.26.0 stop at start-up.
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
    # vLLM 0.22.1 and 0.23.0 test the value's truth; vLLM 0.25.1 and 0.26.0 want a bool
    # (isinstance).
    assert by_release == {
        "v0.22.1rc1": [],
        "v0.23.0": [],
        "v0.25.1rc1": [Severity.ERROR],
        "v0.26.0rc1": [Severity.ERROR],
    }
    assert not load_rules("v0.23.0").rule(MULTITHREAD_BOOLEAN).applies
    # The guide as written, a JSON Boolean, passes everywhere.
    assert _by_rule(check_file(_guide_of("v0.25.1rc1", tmp_path)), MULTITHREAD_BOOLEAN) == []
