"""Reading `vllm serve` command lines and the Compose services that run them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ray_serve_npu.vllm_cli import (
    VLLMServe,
    engine_kwarg_argv,
    find_compose_file,
    interpolate_compose,
    vllm_serve_service,
)


def test_parse_keeps_model_flags_values_and_switches_in_order() -> None:
    command = VLLMServe.parse(
        ["vllm", "serve", "/models/m", "--port", "8000", "--enforce-eager", "--max-model-len=2048"]
    )
    assert command.model == "/models/m"
    assert list(command) == [
        ("--port", "8000"),
        ("--enforce-eager", None),
        ("--max-model-len", "2048"),
    ]
    assert command.get("--port") == "8000"
    assert command.get("--missing", "default") == "default"


def test_parse_takes_the_last_value_of_a_repeated_flag() -> None:
    command = VLLMServe.parse(["vllm", "serve", "m", "--port", "1", "--port", "2"])
    assert command.get("--port") == "2"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["python", "-m", "vllm"], "not a `vllm serve` command"),
        (["vllm", "serve", "m", "stray"], "`stray` in `vllm serve` follows no flag"),
    ],
)
def test_parse_refuses_what_is_not_vllm_serve(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VLLMServe.parse(argv)


def test_compose_service_argv_list_and_environment(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yaml").write_text(
        "services:\n"
        "  web:\n    image: nginx\n"
        "  llm:\n"
        "    command: [vllm, serve, /w, --served-model-name, m, --port, '8100']\n"
        "    environment: [A=1, B=two]\n"
    )
    service = vllm_serve_service(find_compose_file(tmp_path))
    assert service.name == "llm"
    assert service.command.get("--served-model-name") == "m"
    assert service.environment == {"A": "1", "B": "two"}


def test_compose_service_in_a_shell_string(tmp_path: Path) -> None:
    file = tmp_path / "compose.yaml"
    file.write_text("services:\n  llm:\n    command: bash -c 'vllm serve /w --port 9'\n")
    assert vllm_serve_service(file).command.get("--port") == "9"


def test_compose_file_missing_or_without_vllm(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no Compose file"):
        find_compose_file(tmp_path)
    file = tmp_path / "compose.yaml"
    file.write_text("services:\n  web:\n    image: nginx\n")
    with pytest.raises(ValueError, match="no service runs `vllm serve`"):
        vllm_serve_service(file)


_SHELL = {"SET": "value", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${SET}", "value"),
        ("$SET/x", "value/x"),
        ("${UNSET:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY-fallback}", ""),
        ("${SET:?unused}", "value"),
        ("$$SET", "$SET"),
        ("plain", "plain"),
    ],
)
def test_compose_interpolation_follows_compose(text: str, expected: str) -> None:
    assert interpolate_compose(text, _SHELL) == expected


@pytest.mark.parametrize("text", ["${UNSET:?set UNSET first}", "${EMPTY:?set UNSET first}"])
def test_compose_interpolation_refuses_a_missing_required_variable(text: str) -> None:
    with pytest.raises(ValueError, match=r"required variable (UNSET|EMPTY) .*: set UNSET first"):
        interpolate_compose(text, _SHELL)


def test_compose_interpolation_refuses_a_form_it_does_not_read() -> None:
    with pytest.raises(ValueError, match=r"unsupported `\$` form at 0; use \$NAME"):
        interpolate_compose("${SET:+other}", _SHELL)


def test_an_engine_kwarg_becomes_the_words_vllm_serve_parses() -> None:
    assert engine_kwarg_argv("enforce_eager", True) == ["--enforce-eager"]
    assert engine_kwarg_argv("enable_prefix_caching", False) == ["--no-enable-prefix-caching"]
    assert engine_kwarg_argv("max_num_seqs", 32) == ["--max-num-seqs", "32"]
    # vLLM reads a dict flag as JSON: Python's repr ({'a': True}) is refused.
    assert engine_kwarg_argv("model_loader_extra_config", {"enable_multithread_load": True}) == [
        "--model-loader-extra-config",
        '{"enable_multithread_load": true}',
    ]
