"""``ray-serve-npu dry-run``: the user-facing way into the fake-NPU tier.

Its run on the fake tier (serve the recipe, answer, say what changed, stop on
Ctrl+C) is test_fake_npu_end_to_end.py, whose requests share that one run.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import pytest

from ray_serve_npu.cli import main
from ray_serve_npu.envs import VISIBLE_DEVICES_ENV_VAR
from ray_serve_npu.fake_npu.cluster import FakeNPUCluster
from ray_serve_npu.fake_npu.dry_run import (
    CHAT_LINE_END,
    DryRunProcess,
    ask,
    command_for,
    engine_devices,
    fake_tier_changes,
    not_ready_paragraph,
    parse_args,
)
from ray_serve_npu.fake_npu.processes import (
    ProcessServer,
    ServerNotReady,
    last_error,
    wait_until_ready,
)

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("serve_npu.py", "python serve_npu.py"),
        ("serve_config.yaml", "serve run serve_config.yaml"),
        ("docker-compose.yaml", "docker compose -f docker-compose.yaml up -d"),
        ("docker-compose-a3.yaml", "docker compose -f docker-compose-a3.yaml up -d"),
        ("compose.override.yml", "docker compose -f compose.override.yml up -d"),
    ],
)
def test_dry_run_runs_a_recipe_as_its_page_does(name: str, command: str) -> None:
    assert command_for(Path(name)) == command


def test_dry_run_gives_a_python_recipe_its_arguments_and_nothing_else_any() -> None:
    assert command_for(Path("serve_model.py"), ["Qwen3 32B"]) == "python serve_model.py 'Qwen3 32B'"
    with pytest.raises(ValueError, match="only a Python recipe takes arguments; drop x"):
        command_for(Path("serve_config.yaml"), ["x"])


@pytest.mark.parametrize(
    "argv",
    [
        ["serve_model.py", "--nodes", "2", "--node-kind", "A3", "--", "RUN", "--list"],
        ["--nodes", "2", "--node-kind", "A3", "serve_model.py", "--", "RUN", "--list"],
    ],
)
def test_dry_run_takes_its_options_before_or_after_the_recipe(argv: list[str]) -> None:
    # Only what follows `--` is the recipe's, wherever the command's own options stand.
    args = parse_args(argv)
    assert (args.recipe, args.nodes, args.node_kind) == ("serve_model.py", 2, "A3")
    assert args.recipe_args == ["RUN", "--list"]


_STOPPED_BY_SIGTERM = """
import contextlib, os, signal
from ray_serve_npu.fake_npu.dry_run import stop_cleanly_on_sigterm

stop_cleanly_on_sigterm()
with contextlib.ExitStack() as tier:
    # The clean-up gets a second SIGTERM midway, and must still finish.
    tier.callback(lambda: (os.kill(os.getpid(), signal.SIGTERM), print("stopped the fake tier")))
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
"""


def test_sigterm_stops_the_dry_run_through_its_with_blocks() -> None:
    # The blocks that stop the fake cluster run, and the exit code says SIGTERM.
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_BY_SIGTERM], capture_output=True, text=True, timeout=60
    )
    assert done.stdout == "stopped the fake tier\n", done.stderr
    assert done.returncode == 128 + signal.SIGTERM


def test_dry_run_refuses_what_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dry-run", str(tmp_path / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert main(["dry-run", str(notes)]) == 2
    assert "not a recipe dry-run knows" in capsys.readouterr().err
    # A KubeRay manifest is no Serve config: `serve run` would fail on it.
    assert main(["dry-run", str(ROOT / "recipes" / "kuberay" / "rayservice.yaml")]) == 2
    assert "a KubeRay RayService manifest, which runs on Kubernetes" in capsys.readouterr().err


def test_dry_run_reads_the_adapter_lines_from_plain_and_json_logs() -> None:
    log = "\n".join(
        [
            "INFO something else",
            '{"message": "fake-npu tier: dropped engine_kwargs.quantization=\'ascend\' (x)"}',
            "(APIServer) WARNING fake-npu tier: dropped vllm serve --port=1 (y)",
        ]
    )
    assert fake_tier_changes(log) == [
        "fake-npu tier: dropped engine_kwargs.quantization='ascend' (x)",
        "fake-npu tier: dropped vllm serve --port=1 (y)",
    ]


def test_dry_run_engine_lines_name_engine_workers_only(tmp_path: Path) -> None:
    # Ray Serve LLM's engine-config task holds a token share of an NPU and no actor:
    # it is no engine worker (four ranks printed eight lines before this was read).
    records = [
        {"pid": 11, "ray_npu_ids": ["0"], "actor_id": None, VISIBLE_DEVICES_ENV_VAR: "0"},
        {"pid": 12, "ray_npu_ids": ["3"], "actor_id": "a1", VISIBLE_DEVICES_ENV_VAR: "3"},
        {"pid": 13, "ray_npu_ids": [], "actor_id": "a2", VISIBLE_DEVICES_ENV_VAR: None},
    ]
    for record in records:
        (tmp_path / f"{record['pid']}.json").write_text(json.dumps(record))
    assert engine_devices(tmp_path) == [
        f"fake-npu tier: engine worker 12 holds NPU 3; {VISIBLE_DEVICES_ENV_VAR}=3"
    ]


def test_dry_run_chat_reply_is_read_from_its_output(tmp_path: Path) -> None:
    log = tmp_path / "dry-run.log"
    reply = {"model": "deepseek-v4-flash", "choices": [{"message": {"role": "assistant"}}]}
    log.write_text(
        f"fake-npu tier: http://127.0.0.1:8000/v1 serves 'deepseek-v4-flash'; {CHAT_LINE_END}\n"
        f"{json.dumps(reply, indent=2)}\n"
        f"fake-npu tier: engine worker 12 holds NPU 3; {VISIBLE_DEVICES_ENV_VAR}=3\n"
    )
    assert DryRunProcess(process=None, log_file=log).chat_reply() == reply  # type: ignore[arg-type]


def test_the_last_error_of_a_server_log_is_its_last_exception_line() -> None:
    log = "\n".join(
        [
            "INFO starting",
            "(ServeReplica:default:LLMServer pid=41) ValueError: first problem",
            "(ServeReplica:default:LLMServer pid=41) KeyError: 'bundles_to_node_id'",
            "(pid=41) RuntimeError: Engine core initialization failed. See root cause above.",
            "(ServeController pid=40) RuntimeError: Traceback (most recent call last):",
            "ray.exceptions.ActorDiedError: The actor died because of an error raised in its "
            "creation task, ray::SERVE_REPLICA::default#LLMServer",
            "Traceback (most recent call last):",
            '  File "serve_npu.py", line 3, in <module>',
            "ray.serve.exceptions.RayServeException: Deploying application default failed",
            "INFO shutting down",
        ]
    )
    # Serve's and vLLM's reports of an earlier failure give way to its cause.
    assert last_error(log) == "KeyError: 'bundles_to_node_id'"
    only_reports = "RuntimeError: Deploying application default failed: Failed to update"
    assert last_error(f"INFO x\n{only_reports}") == only_reports
    assert last_error("INFO all is well\nWARNING but slow") is None


def test_the_last_error_skips_rays_colours_and_what_follows_the_failure() -> None:
    cause = "ValueError: Unknown engine argument: max_num_seq"
    log = "\n".join(
        [
            f"\x1b[36m(ServeReplica:default:LLMServer pid=7)\x1b[0m {cause}"
            "\x1b[32m [repeated 2x across cluster]\x1b[0m",
            "(raylet) RuntimeError: worker exited",
            "Exception ignored in: <function BaseEventLoop.__del__ at 0x1>",
            "RuntimeError: Event loop is closed",
        ]
    )
    assert last_error(log) == cause
    wrapped = "ray.exceptions.RayTaskError(ValueError): ray::f() (pid=3) failed"
    assert last_error(f"(pid=3) {wrapped}") == wrapped


def test_a_recipe_that_does_not_come_up_gets_one_paragraph_and_its_log_kept(
    tmp_path: Path,
) -> None:
    log = "INFO x\n(ServeReplica:default:LLMServer pid=7) ValueError: Unknown engine argument\n"
    failure = ServerNotReady("the server command exited with 1", log)
    paragraph = not_ready_paragraph(failure, tmp_path / "serve_npu.py")
    assert "\n" not in paragraph
    assert paragraph.startswith(
        "serve_npu.py did not come up on the fake-NPU tier: the server command exited with 1."
    )
    assert "The last error in its log: ValueError: Unknown engine argument." in paragraph
    kept = Path(paragraph.rsplit(" is in ", 1)[1].removesuffix("."))
    try:
        assert kept.read_text() == log
    finally:
        kept.unlink()


def test_a_recipe_that_refuses_without_a_traceback_gets_its_last_line_quoted(
    tmp_path: Path,
) -> None:
    refusal = "serve_model.py: set MODEL_PATH to the directory of org/Model's weights"
    failure = ServerNotReady(
        "the server command exited with 1", f"\x1b[33mINFO x\x1b[0m\n{refusal}\n\n"
    )
    paragraph = not_ready_paragraph(failure, tmp_path / "serve_model.py")
    assert f"Its log reports no Python exception; its last line: {refusal}." in paragraph
    Path(paragraph.rsplit(" is in ", 1)[1].removesuffix(".")).unlink()
    empty = not_ready_paragraph(ServerNotReady("it exited", ""), tmp_path / "serve_model.py")
    assert "Its log is empty." in empty
    Path(empty.rsplit(" is in ", 1)[1].removesuffix(".")).unlink()


@pytest.mark.parametrize(
    ("raised", "code", "says"),
    [
        (
            urllib.error.HTTPError(
                "http://127.0.0.1:8000/v1/chat/completions", 500, "x", {}, io.BytesIO(b"boom")
            ),
            1,
            "came up on the fake-NPU tier, but its check request got HTTP 500",
        ),
        (
            ValueError("vllm serve --data-parallel-size > 1 needs a mixture-of-experts model"),
            2,
            "needs a mixture-of-experts model",
        ),
    ],
)
def test_dry_run_says_in_one_line_what_went_wrong_after_it_started(
    raised: Exception,
    code: int,
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ray_serve_npu.fake_npu import dry_run

    def fail(*args: object) -> None:
        raise raised

    monkeypatch.setattr(dry_run, "_serve_and_ask", fail)
    assert main(["dry-run", str(ROOT / "recipes" / "serve_npu.py")]) == code
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ray-serve-npu dry-run: ") and says in line


class _ServerUp(http.server.BaseHTTPRequestHandler):
    """Ray Serve LLM's ingress up while the engine behind it is not: it lists the models
    it was given (none in ``models``), and a chat gets no answer in time or a dropped
    connection."""

    models: list[str] = ["deepseek-v4-flash"]
    chat: str = "slow"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = json.dumps({"data": [{"id": model} for model in self.models]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        if self.chat == "slow":
            time.sleep(3)
        else:  # "drop": close without a status line
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("models", "chat", "what"),
    [
        (["deepseek-v4-flash"], "slow", "got no answer (timed out) within 0.5 s"),
        (["deepseek-v4-flash"], "drop", "got no answer (Remote end closed connection"),
        ([], "slow", "lists no model"),
    ],
)
def test_a_check_request_that_fails_gets_the_paragraph_not_a_socket_traceback(
    models: list[str], chat: str, what: str
) -> None:
    handler = type("Handler", (_ServerUp,), {"models": models, "chat": chat})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    log = "(ServeReplica:app:LLMServer pid=7) FileNotFoundError: /models/DeepSeek-V4-Flash\n"
    try:
        with pytest.raises(ServerNotReady) as raised:
            ask(base_url, "key", lambda: log, timeout_s=0.5)
    finally:
        server.shutdown()
    failure = raised.value
    assert failure.what.startswith(f"it answered at {base_url}, but ")
    assert what in failure.what
    # Only a request that timed out waited the whole timeout.
    assert ("within" in failure.what) == ("timed out" in what)
    assert failure.error == "FileNotFoundError: /models/DeepSeek-V4-Flash"


def test_a_server_command_that_fails_while_the_check_waits_ends_the_wait() -> None:
    # Serve's proxy and ingress outlive a recipe whose engine failed to deploy: they list
    # the model and hold the chat request. The command's exit ends the wait, not the timeout.
    handler = type("Handler", (_ServerUp,), {"models": ["deepseek-v4-flash"], "chat": "slow"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    log = "RuntimeError: Deploying application default failed\n"
    started = time.monotonic()
    try:
        with pytest.raises(ServerNotReady) as raised:
            ask(base_url, "key", lambda: log, timeout_s=60, failed_exit=lambda: 1)
    finally:
        server.shutdown()
    assert time.monotonic() - started < 3, "it waited for the chat instead of the command"
    assert raised.value.what == "the server command exited with 1 while its check request waited"
    assert raised.value.error == "RuntimeError: Deploying application default failed"


class _ModelsHeld(_ServerUp):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        time.sleep(5)


def test_a_server_command_that_fails_while_models_is_held_ends_the_wait() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ModelsHeld)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    started = time.monotonic()
    try:
        with pytest.raises(ServerNotReady, match="exited with 1 while its check request waited"):
            ask(base_url, "key", lambda: "", timeout_s=60, failed_exit=lambda: 1)
    finally:
        server.shutdown()
    assert time.monotonic() - started < 3


def test_a_server_command_that_exits_zero_is_waited_for(tmp_path: Path) -> None:
    # A command that exits 0 may have started a detached server: its answer counts.
    handler = type("Handler", (_ServerUp,), {"models": ["deepseek-v4-flash"], "chat": "slow"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    exited = ProcessServer(base_url, tmp_path / "log", subprocess.Popen(["true"]))
    assert exited.process is not None
    exited.process.wait()
    try:
        # The slow chat takes 3 s, past the 1 s watch: the exit was seen, and waited past.
        with pytest.raises(ServerNotReady) as raised:
            ask(base_url, "key", lambda: "", timeout_s=2.5, failed_exit=exited.failed_exit)
    finally:
        server.shutdown()
    assert "got no answer (timed out) within 2.5 s" in raised.value.what


def test_a_server_commands_failed_exit_is_its_error_status_only(tmp_path: Path) -> None:
    statuses = {}
    for argv in (["true"], ["false"]):
        process = subprocess.Popen(argv)
        process.wait()
        statuses[argv[0]] = ProcessServer("", tmp_path / "log", process).failed_exit()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        statuses["running"] = ProcessServer("", tmp_path / "log", running).failed_exit()
    finally:
        running.kill()
    assert statuses == {"true": None, "false": 1, "running": None}


def test_the_clusters_worker_logs_end_with_the_one_written_last() -> None:
    cluster = FakeNPUCluster()
    try:
        logs = cluster.temp_dir / "session_latest" / "logs"
        logs.mkdir(parents=True)
        for name, mtime in [("worker-b.err", 200), ("worker-a.err", 300), ("raylet.out", 400)]:
            (logs / name).write_text(f"{name}\n")
            os.utime(logs / name, (mtime, mtime))
        assert cluster.worker_logs().split() == ["worker-b.err", "worker-a.err"]
    finally:
        shutil.rmtree(cluster.temp_dir)


@pytest.mark.parametrize(
    ("status", "ready"), [(401, True), (400, True), (404, False), (503, False)]
)
def test_waiting_for_a_server_ends_when_the_app_itself_answers(status: int, ready: bool) -> None:
    # 400: Ray 2.56.1's ingress beside fastapi 0.139.1 answers every /v1/models with
    # "Field required at ('query', 'self')"; waiting 600 s more would change nothing.
    handler = type(
        "Handler",
        (http.server.BaseHTTPRequestHandler,),
        {
            "do_GET": lambda self: (self.send_response(status), self.end_headers()),
            "log_message": lambda self, *args: None,
        },
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        served = ProcessServer(base_url, Path(os.devnull), process)
        if ready:
            wait_until_ready(served, timeout_s=5)
        else:
            with pytest.raises(ServerNotReady, match="did not answer in 1 s"):
                wait_until_ready(served, timeout_s=1)
    finally:
        process.kill()
        server.shutdown()


def test_dry_run_without_its_extra_names_the_extra_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "psutil" else found(name, *a)
    )
    assert main(["dry-run", "--help"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ray-serve-npu dry-run: needs psutil")
    assert "which the 'cpu-engine' extra installs" in error
    assert "Fix: pip install 'ray-serve-npu[cpu-engine]'" in error


class _TwoModels(_ServerUp):
    """An app of two models that each answer a chat with the model it was asked for."""

    models = ["qwen3-32b-w8a8", "qwen3-30b-a3b-w8a8"]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
        body = json.dumps({"model": asked, "choices": []}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_check_asks_every_model_the_app_lists() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TwoModels)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        answers = ask(f"http://127.0.0.1:{server.server_address[1]}", "key", lambda: "")
    finally:
        server.shutdown()
    assert [(model, reply["model"]) for model, reply in answers] == [
        ("qwen3-32b-w8a8", "qwen3-32b-w8a8"),
        ("qwen3-30b-a3b-w8a8", "qwen3-30b-a3b-w8a8"),
    ]
