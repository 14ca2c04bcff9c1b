"""The sweep against a real server and a fake model: vLLM's CPU build, tiny random model."""

from __future__ import annotations

import json
import shlex
import socket
from pathlib import Path

import pytest
from bench.sweep import main

from ray_serve_npu.fake_npu.direct import vllm_server_argv
from ray_serve_npu.fake_npu.processes import free_port

pytestmark = pytest.mark.fake_npu

MODEL = "deepseek-v4-flash"


def sweep(base_url: str, tokenizer: Path, out: Path, *extra: str) -> int:
    return main(
        ["--base-url", base_url, "--model", MODEL, "--tokenizer", str(tokenizer),
         "--input-len", "32", "--output-len", "8", "--num-prompts", "8",
         "--out-dir", str(out), *extra]
    )  # fmt: skip


def test_tiny_model_sweep_measures_every_point_and_writes_json_markdown_and_png(
    direct_server: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    assert sweep(direct_server, tiny_model_dir, tmp_path, "--concurrency", "1,4") == 0

    points = json.loads((tmp_path / "results.json").read_text())
    assert [p["point"]["concurrency"] for p in points] == [1, 4]
    for point in points:
        assert (point["completed"], point["failed"], point["error"]) == (8, 0, None)
        # Eight requests of eight output tokens each (the random dataset ignores EOS).
        assert point["output_tokens_per_s"] * point["duration_s"] == pytest.approx(64, rel=0.01)
        assert point["requests_per_s"] * point["duration_s"] == pytest.approx(8, rel=0.01)
        for metric in ("ttft", "tpot", "itl", "e2el"):
            p = point["latency_ms"][metric]
            assert 0 <= p["p50"] <= p["p90"] <= p["p99"]
        assert point["latency_ms"]["ttft"]["p50"] < point["latency_ms"]["e2el"]["p50"]
        assert point["command"].startswith("vllm bench serve --backend openai-chat")
    rows = (tmp_path / "results.md").read_text().splitlines()[2:]
    assert [row.split(" | ")[1] for row in rows] == ["1", "4"]
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tiny_model_a_model_the_server_does_not_serve_is_named_with_the_ones_it_does(
    direct_server: str, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["--base-url", direct_server, "--model", "nope", "--tokenizer", str(tiny_model_dir),
         "--out-dir", str(tmp_path), "--no-plots"]
    )  # fmt: skip
    assert code == 2
    assert f"--model 'nope' is not served at {direct_server}; it serves ['{MODEL}']" in (
        capsys.readouterr().err
    )


def test_tiny_model_a_point_the_server_refuses_is_recorded_as_failed_and_the_sweep_goes_on(
    direct_server: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    # 2000 prompt tokens do not fit the fake tier's 1024-token context; 16 do.
    code = main(
        ["--base-url", direct_server, "--model", MODEL, "--tokenizer", str(tiny_model_dir),
         "--input-len", "2000,16", "--output-len", "4", "--concurrency", "2",
         "--num-prompts", "4", "--out-dir", str(tmp_path), "--no-plots"]
    )  # fmt: skip
    assert code == 1
    refused, served = json.loads((tmp_path / "results.json").read_text())
    assert (refused["completed"], refused["failed"]) == (0, 4)
    assert "Initial test run failed" in refused["error"]
    assert (served["completed"], served["failed"], served["error"]) == (4, 0, None)
    refused_row = (tmp_path / "results.md").read_text().splitlines()[2]
    assert refused_row.startswith("| in=2000 out=4 | 2 | - |") and refused_row.endswith("| 4/4 |")


def test_tiny_model_the_sweep_starts_one_server_per_setting_and_stops_it(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # the tiny model needs little
    # The settings are read from vLLM's INFO line "non-default args: {...}".
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "INFO")
    port = free_port()
    serve_cmd = shlex.join(
        vllm_server_argv(
            ["--model", str(tiny_model_dir), "--served-model-name", MODEL]
            + ["--host", "127.0.0.1", "--port", str(port), "--max-model-len", "1024"]
            + ["--enforce-eager"]
        )
    )
    code = sweep(
        f"http://127.0.0.1:{port}", tiny_model_dir, tmp_path,
        "--concurrency", "2", "--num-prompts", "4", "--no-plots",
        "--serve-cmd", serve_cmd, "--serve-param", "max-num-seqs=2,4",
    )  # fmt: skip
    assert code == 0
    points = json.loads((tmp_path / "results.json").read_text())
    assert [p["point"]["server_settings"] for p in points] == [
        {"--max-num-seqs": "2"},
        {"--max-num-seqs": "4"},
    ]
    assert all(p["completed"] == 4 for p in points)
    for index, seqs in enumerate((2, 4)):
        assert f"'max_num_seqs': {seqs}" in (tmp_path / f"server-{index}.log").read_text()
    with socket.socket() as probe:  # the last server is gone
        assert probe.connect_ex(("127.0.0.1", port)) != 0
