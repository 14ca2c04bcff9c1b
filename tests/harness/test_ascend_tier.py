"""Tier selection with NPU detection faked both ways, and the Ascend tier's process handling."""

from __future__ import annotations

import contextlib
import socket
import sys
import time
import types
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness import ascend_tier
from ray_serve_npu_tooling.harness.ascend_tier import (
    AscendTier,
    detect_npus,
    planned_tier_name,
    select_tier,
)

from ray_serve_npu.envs import CLIENT_API_KEY_ENV_VAR, MODEL_PATH_ENV_VAR, RAY_AUTH_MODE_ENV_VAR
from ray_serve_npu.fake_npu.processes import free_port


def test_detect_npus_counts_fake_davinci_devices_only(tmp_path: Path) -> None:
    for name in ("davinci0", "davinci1", "davinci12", "davinci_manager", "devmm_svm"):
        (tmp_path / name).touch()
    assert detect_npus(dev=tmp_path, npu_smi="/nonexistent/npu-smi") == 3


def test_detect_npus_falls_back_to_a_fake_npu_smi(tmp_path: Path) -> None:
    fake_npu_smi = tmp_path / "npu-smi"
    fake_npu_smi.write_text("#!/bin/sh\nprintf 'NPU ID : 0\\nNPU ID : 1\\n'\n")
    fake_npu_smi.chmod(0o755)
    assert detect_npus(dev=tmp_path, npu_smi=str(fake_npu_smi)) == 2


def test_detect_npus_finds_none_without_devices_or_npu_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert detect_npus(dev=tmp_path) == 0


def test_with_fake_detected_npus_the_ascend_tier_is_selected(tmp_path: Path) -> None:
    with select_tier(tmp_path, npus=8, env={MODEL_PATH_ENV_VAR: "/models/w"}) as tier:
        assert isinstance(tier, AscendTier)
        assert (tier.name, tier.fake) == ("ascend", False)
        env = tier.env()
        assert env[MODEL_PATH_ENV_VAR] == "/models/w"
        # A fresh key for the pages' servers and clients, as a reader exports one.
        assert len(env[CLIENT_API_KEY_ENV_VAR]) >= 32
        # Ray's token authentication on, as the pages' `docker run` turns it on.
        assert env[RAY_AUTH_MODE_ENV_VAR] == "token"
        assert set(env) == {MODEL_PATH_ENV_VAR, CLIENT_API_KEY_ENV_VAR, RAY_AUTH_MODE_ENV_VAR}
    assert planned_tier_name(8) == "ascend"


def test_with_fake_detected_npus_a_missing_model_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="set MODEL_PATH to the model weights"):
        with select_tier(tmp_path, npus=8, env={}):
            pass


def test_without_npus_the_fake_tier_is_selected_here_a_stub_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Path] = []

    @contextlib.contextmanager
    def fake_npu_tier_stub(workdir: Path):  # noqa: ANN202 - stands in for the real one
        started.append(workdir)
        yield types.SimpleNamespace(name="fake-npu", fake=True)

    stub_module = types.ModuleType("ray_serve_npu.fake_npu.fake_tier")
    stub_module.fake_npu_tier = fake_npu_tier_stub  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray_serve_npu.fake_npu.fake_tier", stub_module)
    with select_tier(tmp_path, npus=0, env={MODEL_PATH_ENV_VAR: "/ignored"}) as tier:
        assert tier.name == planned_tier_name(0) == "fake-npu"
    assert started == [tmp_path]


#: A stand-in server command: a process group (bash, then python) answering /v1/models.
STUB_SERVER = (
    "python3 -c 'import http.server as h\n"
    "class H(h.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    '        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")\n'
    'h.HTTPServer(("127.0.0.1", {port}), H).serve_forever()\' && true'
)


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_ascend_tier_serves_a_stub_server_and_stops_its_process_group(tmp_path: Path) -> None:
    port = free_port()
    tier = AscendTier("/models/w")
    with tier.serve(STUB_SERVER.replace("{port}", str(port)), cwd=tmp_path, port=port) as server:
        assert server.base_url == f"http://127.0.0.1:{port}"
        assert _answers(port)
    # The group got SIGTERM and its leader has exited; the server's own exit, and
    # with it the closing of its socket, may lag by a moment.
    deadline = time.monotonic() + 5
    while _answers(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _answers(port)


def test_ascend_tier_reports_a_failing_server_command_with_its_output(tmp_path: Path) -> None:
    tier = AscendTier("/models/w")
    with pytest.raises(RuntimeError, match=r"exited with 3:\nno weights at /models/w"):
        with tier.serve('echo "no weights at $MODEL_PATH"; exit 3', cwd=tmp_path, port=free_port()):
            pass


def test_ascend_tier_takes_compose_down_after_compose_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(ascend_tier.subprocess, "run", lambda argv, **_: ran.append(argv))
    finished = types.SimpleNamespace(returncode=0)
    ascend_tier.undo_detached("docker compose -f c.yaml up -d", tmp_path, finished)  # type: ignore[arg-type]
    ascend_tier.undo_detached("python serve_npu.py", tmp_path, finished)  # type: ignore[arg-type]
    assert ran == [["docker", "compose", "-f", "c.yaml", "down"], ["serve", "shutdown", "-y"]]


def test_ascend_tier_clients_send_the_key_the_pages_app_reads(tmp_path: Path) -> None:
    # On NPUs the page's make_secrets.py block writes the key file and its app reads it:
    # the clients' OPENAI_API_KEY must be that key from then on, not the tier's own.
    tier = AscendTier("/models/x", home=tmp_path)
    assert tier.env()["OPENAI_API_KEY"] == tier.api_key
    key_file = tmp_path / ".ray-serve-npu" / "api_key"
    key_file.parent.mkdir()
    key_file.write_text("the-pages-key\n")
    assert tier.env()["OPENAI_API_KEY"] == "the-pages-key"
