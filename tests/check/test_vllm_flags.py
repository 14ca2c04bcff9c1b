"""The checker judges `vllm serve` flags by the stored flags of the release's own vLLM,
and imports neither vLLM nor Ray to do it."""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from checker_data import ROOT
from ray_serve_npu_tooling import vllm_flags as tool

from ray_serve_npu.check import check_file
from ray_serve_npu.check.arguments import apply_serve_argv, judge_arguments
from ray_serve_npu.check.model import Deployment, Setting
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.vllm_flags import ParseError, StoredFlags, stored_flags, stored_versions

#: vLLM's config types validate their fields with pydantic, and its own actions
#: (LoRAParserAction) their words, neither of which the stored file carries: there the
#: stored parser may accept what vLLM refuses, never the reverse.
LOOSER = ("config_json", "optional:config_json")


#: Values the tool never tried when it chose each flag's converter: agreement on these
#: is not agreement by construction.
UNSEEN_PROBES = ("0x10", "1.5e2", " ", "[1,", "-0", "3.0", "2 k", "1G", "1.0k", "4T", "NONE", "{}")


def _parse(parser: argparse.ArgumentParser, argv: list[str], dest: str) -> tuple[bool, Any]:
    try:
        return True, getattr(parser.parse_args(argv), dest)
    except (ParseError, SystemExit, argparse.ArgumentError):
        return False, None


def _argvs(option: Any) -> list[list[str]]:
    flag = option.flags[0]
    if option.dest == "config":
        # vLLM's parser opens the file it names; the checker refuses the flag before.
        return []
    if option.action in ("store", "append"):
        probes = [*tool.PROBES, *UNSEEN_PROBES]
        return [[flag, probe] for probe in probes] + ([[flag]] if option.nargs == "?" else [])
    if option.action == "boolean_optional":
        return [[flag], ["--no-" + flag.removeprefix("--")]]
    return [[flag]] if option.action != "help" else []


@pytest.fixture(scope="module")
def live() -> tuple[argparse.ArgumentParser, StoredFlags]:
    pytest.importorskip("vllm")
    parser = tool.live_parser()
    return parser, tool.stored_flags("test")


def test_the_stored_parser_parses_as_vllms_own_on_every_probe(
    live: tuple[argparse.ArgumentParser, StoredFlags],
) -> None:
    """At the installed vLLM: every option, every probe, the same value or the same refusal."""
    parser, flags = live
    stored = flags.parser()
    compared = 0
    for option in flags.options:
        for argv in _argvs(option):
            want, got = _parse(parser, argv, option.dest), _parse(stored, argv, option.dest)
            if option.type in LOOSER or option.vllm_action:
                assert got[0] or not want[0], (argv, want, got)
                continue
            assert got == want, argv
            compared += 1
    assert compared > 2000, compared


def test_a_type_no_converter_matches_stops_the_tool() -> None:
    with pytest.raises(SystemExit, match="--odd: .*matches no converter"):
        tool.type_name(lambda text: text[::-1], "--odd")


def test_every_release_with_rules_has_its_vllms_flags_and_no_file_is_unused() -> None:
    wanted = {RELEASES[release].vllm for release in available_releases()}
    assert wanted == set(stored_versions())
    for version in wanted:
        assert stored_flags(version).vllm == version


def test_a_vllm_without_stored_flags_names_the_command_that_stores_them() -> None:
    with pytest.raises(LookupError, match=r"nox -s vllm-flags -- 0\.1\.0"):
        stored_flags("0.1.0")


def _compose(folder: Path, tag: str, flag: str) -> Path:
    path = folder / "compose.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        services:
          vllm:
            image: quay.io/ascend/vllm-ascend:{tag}
            command: ["vllm", "serve", "/models/m", "{flag}", "64"]
        """)
    )
    return path


def test_a_flag_is_judged_by_the_vllm_of_the_files_release(tmp_path: Path) -> None:
    """`--max-num-scheduled-tokens` came after vLLM 0.23.0 (stored at 0.26.0 only)."""
    flag = "--max-num-scheduled-tokens"
    newer = check_file(_compose(tmp_path, "v0.26.0rc1", flag))
    assert "vllm-unknown-flag" not in {f.rule_id for f in newer}
    older = check_file(_compose(tmp_path, "v0.23.0", flag))
    (unknown,) = [f for f in older if f.rule_id == "vllm-unknown-flag"]
    assert unknown.line == 4
    assert f"`{flag}` is not an option of vLLM 0.23.0, the vLLM v0.23.0 carries" in unknown.message


@pytest.mark.parametrize(
    "target",
    [
        "recipes/docker-compose.yaml",
        "docs/vllm-ascend-compose.md",
        "recipes/serve_npu.py",
        "recipes/kuberay/rayservice.yaml",
    ],
)
def test_the_checker_imports_neither_vllm_nor_ray(target: str) -> None:
    probe = (
        "import sys\n"
        "from ray_serve_npu.check.cli import main\n"
        f"code = main([{str(ROOT / target)!r}])\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'vllm', 'ray', 'torch'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def _judged(words: list[str], flags: StoredFlags | None = None) -> Deployment:
    """The words after `vllm serve`, one line each, judged by ``flags`` (by default the
    stored flags of v0.25.1rc1's vLLM)."""
    deployment = Deployment(file="x", line=1)
    apply_serve_argv([Setting(value=w, line=n) for n, w in enumerate(words, 1)], deployment)
    judge_arguments(deployment, flags or stored_flags(RELEASES["v0.25.1rc1"].vllm))
    return deployment


def test_flags_are_read_as_vllms_parser_reads_them() -> None:
    """vLLM's parser turns underscores before the first `.` into dashes, and merges
    `--config.key value` into the config's JSON object (argparse_utils.py at 0.25.1)."""
    deployment = _judged(
        [
            "/models/m",
            "--max_model_len=4k",
            "--compilation_config.mode",
            "3",
            "--compilation-config.pass_config.fuse_norm=true",
            "--tokenizr_mode",
            "auto",
        ]
    )
    engine = {key: setting.value for key, setting in deployment.engine.items()}
    assert engine == {
        "max_model_len": 4000,
        "compilation_config": {"mode": 3, "pass_config": {"fuse_norm": True}},
    }
    assert deployment.engine["compilation_config"].line == 3
    [(unknown, suggestion)] = deployment.unknown_flags
    assert (unknown.value, unknown.line, suggestion) == ("--tokenizr_mode", 6, "--tokenizer-mode")


#: `vllm serve` words, and the engine argument whose value the checker and vLLM's own
#: parser must agree on (or both refuse the words).
AS_VLLM_READS_THEM = [
    (["--additional-config", '{"a": true}', "--additional-config.b", "true"], "additional_config"),
    (["--additional-config.b", "true", "--additional-config", '{"a": 1}'], "additional_config"),
    (["--additional_config.x.y=1", "--additional-config.x.z", "2k"], "additional_config"),
    (
        ["--additional-config.shapes+", "1,2", "--additional-config.shapes+", "3"],
        "additional_config",
    ),
    (["--additional-config.mode", "3", "extra"], "additional_config"),
    (["--additional-config.mode"], "additional_config"),
    (
        ["-sc.method", "mtp", "--speculative-config.num_speculative_tokens", "1"],
        "speculative_config",
    ),
    (["--max-model-len.foo", "3"], "max_model_len"),
    (["--max_model_len=4k"], "max_model_len"),
    (["--max-model-len", "9" * 400 + ".5k"], "max_model_len"),
    (["--tensor-parallel-size=2", "extra"], "tensor_parallel_size"),
    (["-t", "2"], "tensor_parallel_size"),
    (["--tensor-parallel", "2"], "tensor_parallel_size"),
    (["-O3"], "optimization_level"),
    (["-O=2"], "optimization_level"),
    (["-O", "1"], "optimization_level"),
    (["--enable-expert-parallel", "--no-enable-expert-parallel"], "enable_expert_parallel"),
    (["--middleware", "a", "--middleware", "b"], "middleware"),
]


def _vllm_reads(parser: argparse.ArgumentParser, words: list[str], dest: str) -> Any:
    try:
        return getattr(parser.parse_args(["/models/m", *words]), dest)
    except Exception:  # noqa: BLE001 - any refusal: argparse's, or vLLM's own IndexError
        return "refused"


def _checker_reads(flags: StoredFlags, words: list[str], dest: str) -> Any:
    deployment = _judged(["/models/m", *words], flags)
    if deployment.unknown_flags or deployment.invalid_values:
        return "refused"
    return deployment.engine[dest].value


@pytest.mark.parametrize(("words", "dest"), AS_VLLM_READS_THEM)
def test_the_checker_reads_a_command_line_as_vllms_parser_does(
    live: tuple[argparse.ArgumentParser, StoredFlags], words: list[str], dest: str
) -> None:
    """At the installed vLLM, through the checker's own reading of the words (its flag
    groups, vLLM's rewrites of -O and of underscores, config keys, prefixes)."""
    parser, flags = live
    assert _checker_reads(flags, words, dest) == _vllm_reads(parser, words, dest)
