"""``ray-serve-npu dry-run``: the user-facing way into the fake-NPU tier.

Its run on the fake tier (serve the recipe, answer, say what changed, stop on
Ctrl+C) is test_fake_npu_end_to_end.py, whose requests share that one run.
"""

from __future__ import annotations

import io
import json
import urllib.error
from pathlib import Path

import pytest

from ray_serve_npu.cli import main
from ray_serve_npu.fake_npu.dry_run import (
    CHAT_LINE_END,
    DryRunProcess,
    command_for,
    engine_devices,
    fake_tier_changes,
    not_ready_paragraph,
    unadapted_app,
)
from ray_serve_npu.fake_npu.processes import ServerNotReady, last_error
from ray_serve_npu.hardware import VISIBLE_DEVICES_ENV_VAR

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


RAY_DOCS_RECIPES = {
    # As Ray's own docs write a recipe: the builder from ray.serve.llm.
    "ray_builder.py": (
        "from ray import serve\nfrom ray.serve.llm import LLMConfig, build_openai_app\n\n"
        "app = build_openai_app({'llm_configs': [LLMConfig(model_loading_config={'model_id': "
        "'m'})]})\nserve.run(app)\n",
        "ray_builder.py:2",
        "from ray_serve_npu import build_openai_app",
    ),
    "module_alias.py": (
        "import ray.serve.llm as llm\n\napp = llm.build_dp_openai_app({})\n",
        "module_alias.py:3",
        "from ray_serve_npu import build_dp_openai_app",
    ),
    "own_server.py": (
        "from ray import serve\nfrom ray.serve.llm import LLMServer\n\n"
        "app = serve.deployment(LLMServer).bind(None)\n",
        "own_server.py:2",
        "ray_serve_npu.build_openai_app",
    ),
    "star_import.py": (
        "from ray.serve.llm import *\n\napp = build_openai_app({})\n",
        "star_import.py:1",
        "from ray_serve_npu import build_openai_app",
    ),
    "serve_config.json.yaml": (
        '{"applications": [{"name": "llm", "import_path": "ray.serve.llm:build_openai_app"}]}\n',
        "serve_config.json.yaml:1",
        "from ray_serve_npu import build_openai_app",
    ),
    "serve_config.yaml": (
        "applications:\n  - name: llm\n    import_path: ray.serve.llm:build_openai_app\n",
        "serve_config.yaml:3",
        "from ray_serve_npu import build_openai_app",
    ),
}


@pytest.mark.parametrize("name", sorted(RAY_DOCS_RECIPES))
def test_dry_run_refuses_a_recipe_built_with_rays_own_builder_before_starting_anything(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray_serve_npu.fake_npu import fake_tier

    def no_cluster(*args: object, **kwargs: object) -> None:
        raise AssertionError("dry-run started the fake tier for a recipe it cannot serve")

    monkeypatch.setattr(fake_tier, "fake_npu_tier", no_cluster)
    text, where, fix = RAY_DOCS_RECIPES[name]
    recipe = tmp_path / name
    recipe.write_text(text)
    assert main(["dry-run", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ray-serve-npu dry-run: {where} ")
    assert "which the fake tier does not adapt" in err
    assert fix in err and "Traceback" not in err


def test_dry_run_passes_the_recipes_that_build_with_the_plugin() -> None:
    for recipe in (ROOT / "recipes").glob("*.py"):
        assert unadapted_app(recipe) is None, recipe
    assert unadapted_app(ROOT / "recipes" / "kuberay" / "rayservice.yaml") is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # Ray's server class in an annotation or a type-checking import runs nothing.
        (
            "annotated.py",
            "import ray\nfrom ray_serve_npu import build_openai_app\n\n"
            "def hook(server: ray.serve.llm.LLMServer) -> None: ...\n"
            "app = build_openai_app({})\n",
        ),
        (
            "type_checking.py",
            "from typing import TYPE_CHECKING\nfrom ray_serve_npu import build_openai_app\n"
            "if TYPE_CHECKING:\n    from ray.serve.llm import LLMServer\n"
            "app = build_openai_app({})\n",
        ),
        # Nothing that ray.serve exports builds an app.
        (
            "star_serve.py",
            "from ray.serve import *\nfrom ray_serve_npu import build_openai_app\n\n"
            "app = build_openai_app({})\n",
        ),
        (
            "commented.yaml",
            "applications:\n  - name: llm\n"
            "    # was: import_path: ray.serve.llm:build_openai_app\n"
            "    import_path: ray_serve_npu:build_openai_app\n",
        ),
    ],
)
def test_dry_run_passes_what_only_mentions_rays_builders(
    tmp_path: Path, name: str, text: str
) -> None:
    recipe = tmp_path / name
    recipe.write_text(text)
    assert unadapted_app(recipe) is None


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "not_type_checking.py",
            "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n"
            "    from ray.serve.llm import build_openai_app\n    app = build_openai_app({})\n",
            "not_type_checking.py:3",
        ),
        # A quoted serveConfigV2's findings go to its key's line.
        (
            "quoted.yaml",
            'kind: Other\nspec:\n  serveConfigV2: "applications:\\n  - import_path: '
            'ray.serve.llm:build_openai_app\\n"\n',
            "quoted.yaml:3",
        ),
        (
            "two_documents.yaml",
            "name: first\n---\napplications:\n  - import_path: ray.serve.llm:build_openai_app\n",
            "two_documents.yaml:4",
        ),
    ],
)
def test_dry_run_refuses_rays_builders_wherever_the_recipe_runs_them(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    recipe = tmp_path / name
    recipe.write_text(text)
    assert (unadapted_app(recipe) or "").startswith(f"{where} ")


def test_dry_run_follows_a_serve_configs_import_path_into_the_module_beside_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "my_app.py").write_text(
        "from ray.serve.llm import build_openai_app as build\n\napp = build({})\n"
    )
    config = tmp_path / "serve_config.yaml"
    config.write_text("applications:\n  - name: llm\n    import_path: my_app:app\n")
    assert (why := unadapted_app(config)) is not None
    assert why.startswith("my_app.py:1 builds its app with Ray Serve LLM's `build_openai_app`")


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
            "Traceback (most recent call last):",
            '  File "serve_npu.py", line 3, in <module>',
            "ray.serve.exceptions.RayServeException: Deploying application default failed",
            "INFO shutting down",
        ]
    )
    assert last_error(log) == (
        "ray.serve.exceptions.RayServeException: Deploying application default failed"
    )
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


def test_dry_run_follows_an_import_path_into_a_package(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text(
        "from ray.serve.llm import build_openai_app\napp = build_openai_app({})\n"
    )
    config = tmp_path / "serve_config.yaml"
    config.write_text("applications:\n  - import_path: mypkg:app\n")
    assert (unadapted_app(config) or "").startswith("mypkg/__init__.py:1 ")


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
