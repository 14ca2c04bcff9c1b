"""Bad input stops the sweep at once with an error that names the flag and the fix."""

from __future__ import annotations

import socket
import time

import pytest
from bench.config import SweepConfig
from bench.sweep import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


BASE = ("--model", "m", "--tokenizer", "gpt2")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (("--base-url", "http://127.0.0.1:9/v1"), ["--base-url", "http://127.0.0.1:9"]),
        (("--base-url", "localhost:8000"), ["--base-url", "http://"]),
        (
            ("--base-url", "http://h:1", "--concurrency", "1,64", "--num-prompts", "10"),
            ["--num-prompts 10", "at least 64"],
        ),
        (("--base-url", "http://h:1", "--concurrency", "0"), ["--concurrency", "above zero"]),
        (
            ("--base-url", "http://h:1", "--serve-param", "max-num-seqs=8,16"),
            ["--serve-param needs --serve-cmd"],
        ),
        (
            ("--base-url", "http://h:1", "--serve-cmd", "vllm serve /m --port 2"),
            ["port 2", "--port 1"],
        ),
        (
            (
                "--base-url",
                "http://h:1",
                "--serve-cmd",
                "vllm serve /m --port 1 --max-num-seqs 8",
                "--serve-param",
                "max-num-seqs=16,32",
            ),
            ["--max-num-seqs is also in --serve-cmd"],
        ),
    ],  # fmt: skip
)
def test_bad_input_names_the_flag_and_the_fix(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], names: list[str]
) -> None:
    code, err = run(capsys, *argv, *BASE)
    assert code == 2
    for name in names:
        assert name in err


def test_a_missing_tokenizer_directory_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "--base-url", "http://h:1", "--model", "m", "--tokenizer", "/no/such")
    assert code == 2 and "--tokenizer '/no/such' is no directory" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--concurrency", "1,eight"), "--concurrency '1,eight': give comma-separated int values"),
        (("--serve-param", "max-num-seqs"), "--serve-param 'max-num-seqs': write NAME=V1,V2"),
    ],
)
def test_a_malformed_value_is_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--base-url", "http://h:1", *BASE, *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_server_that_is_not_there_fails_fast_not_a_hang(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    started = time.monotonic()
    code, err = run(
        capsys, "--base-url", f"http://127.0.0.1:{port}", *BASE,
        "--out-dir", str(tmp_path), "--no-plots",
    )  # fmt: skip
    assert code == 2 and time.monotonic() - started < 30
    assert f"--base-url http://127.0.0.1:{port}: GET /v1/models failed" in err
    assert "start the server first" in err


def test_the_grid_is_every_combination_of_server_settings_and_load() -> None:
    config = SweepConfig(
        base_url="http://127.0.0.1:1",
        model="m",
        tokenizer="gpt2",
        concurrency=[1, 8],
        input_len=[64, 128],
        serve_cmd=["vllm", "serve", "/m", "--port", "1"],
        serve_params={"--max-num-seqs": ["8", "16"], "--max-num-batched-tokens": ["4096"]},
    )
    servers = config.server_settings()
    assert servers == [
        {"--max-num-seqs": "8", "--max-num-batched-tokens": "4096"},
        {"--max-num-seqs": "16", "--max-num-batched-tokens": "4096"},
    ]
    assert config.serve_argv(servers[1])[-4:] == [
        "--max-num-seqs", "16", "--max-num-batched-tokens", "4096",
    ]  # fmt: skip
    points = config.points(servers[0])
    assert [(p.input_len, p.concurrency) for p in points] == [(64, 1), (64, 8), (128, 1), (128, 8)]
