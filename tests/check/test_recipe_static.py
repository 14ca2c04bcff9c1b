"""`ray-serve-npu check` reads Python recipes without running them, unless told to run them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from checker_data import ROOT

from ray_serve_npu.check import check_file, parse_file
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.recipe import parse_recipe

RECIPES = ROOT / "recipes"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def found(path: Path) -> set[tuple[str, int]]:
    return {(f.rule_id, f.line) for f in check_file(path)}


def test_reading_a_recipe_runs_none_of_its_code(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    write(
        tmp_path,
        "helper.py",
        f"""
        from pathlib import Path
        Path({str(ran)!r}).write_text("helper.py ran")
        ENV = {{"VLLM_ASCEND_BALANCE_SCHEDULING": "1"}}
        """,
    )
    recipe = write(
        tmp_path,
        "recipe.py",
        f"""
        from pathlib import Path

        from helper import ENV
        from ray.serve.llm import LLMConfig

        Path({str(ran)!r}).write_text("recipe.py ran")
        raise SystemExit("a recipe that is executed stops here")

        llm_config = LLMConfig(
            model_loading_config={{"model_id": "m", "model_source": "/models/m"}},
            engine_kwargs={{"additional_config": {{"enable_dsa_cp": True}}}},
            runtime_env={{"env_vars": ENV}},
        )
        """,
    )
    assert found(recipe) == {
        ("dsa-cp-requires-flashcomm1", 11),
        # Imported from helper.py: the finding is on the import line.
        ("env-balance-scheduling-ignored", 3),
    }
    assert not ran.exists()


@pytest.mark.parametrize("name", ["serve_multi_node.py", "serve_span_nodes.py"])
def test_recipes_built_from_another_recipe(name: str) -> None:
    (deployment,) = parse_file(RECIPES / name).deployments
    text = (RECIPES / name).read_text().splitlines()
    import_line = text.index("from serve_npu import llm_config as single_node_config") + 1
    # serve_span_nodes.py sets its own tensor parallelism; serve_multi_node.py imports it.
    own = [n for n, line in enumerate(text, 1) if '"tensor_parallel_size": 16' in line]
    assert deployment.engine["tensor_parallel_size"].value == (16 if own else 8)
    assert deployment.engine["tensor_parallel_size"].line == (own[0] if own else import_line)
    assert deployment.engine["max_model_len"].line == import_line
    assert deployment.additional_config()["enable_dsa_cp"] is True
    assert deployment.env["LD_PRELOAD"].line == import_line
    assert deployment.unread == []


def test_environment_reads_are_read_as_their_default(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MODEL_PATH", "/from/the/environment")
    (deployment,) = parse_recipe(
        str(RECIPES / "serve_npu.py"), (RECIPES / "serve_npu.py").read_text()
    )
    assert deployment.model is not None
    assert deployment.model.value == "/models/DeepSeek-V4-Flash-w8a8-mtp"


RECIPE = """
import json
import os

from ray.serve.llm import LLMConfig
{before}
llm_config = LLMConfig(
    model_loading_config={{"model_id": "m", "model_source": "/models/m"}},
    deployment_config={{"num_replicas": replicas()}},
    engine_kwargs={engine_kwargs},
)
"""


@pytest.mark.parametrize(
    ("before", "engine_kwargs", "why"),
    [
        ("", '{"tensor_parallel_size": tp()}', "`tp()` is a call the checker does not evaluate"),
        (
            "",
            '{"tensor_parallel_size": os.environ["TP"]}',
            "`os.environ['TP']` reads the environment when the recipe runs, with no default",
        ),
        (
            "",
            '{"tensor_parallel_size": os.getenv("TP")}',
            "`os.getenv('TP')` reads the environment when the recipe runs, with no default",
        ),
        ("", "{**base()}", "`base()` is a call the checker does not evaluate"),
        ("", "ENGINE", "`ENGINE` is not a module-level name the checker reads"),
        (
            'ENGINE = {"tensor_parallel_size": 4}\nENGINE.update(tensor_parallel_size=8)\n',
            "ENGINE",
            "`ENGINE` is bound or changed by a statement the checker does not follow",
        ),
        (
            'for size in (4, 8):\n    ENGINE = {"tensor_parallel_size": size}\n',
            "ENGINE",
            "`ENGINE` is bound or changed by a statement the checker does not follow",
        ),
        (
            "from engine_settings import ENGINE\n",
            "ENGINE",
            "`ENGINE` is `engine_settings.ENGINE`, from a module the checker does not read",
        ),
        (
            'BASE = LLMConfig(model_loading_config={"model_id": "b"}, engine_kwargs={"a": 1})\n',
            'BASE.model_dump(include={"engine_kwargs"})["engine_kwargs"]',
            "`BASE.model_dump(include={'engine_kwargs'})` is a call the checker does not evaluate",
        ),
    ],
    ids=[
        "call",
        "environ-subscript",
        "getenv-without-default",
        "spread-of-a-call",
        "unbound-name",
        "changed-by-a-method",
        "bound-in-a-loop",
        "imported-from-a-library",
        "model-dump-with-include",
    ],
)
def test_a_value_it_cannot_read_is_a_finding(tmp_path, before, engine_kwargs, why) -> None:
    recipe = write(tmp_path, "recipe.py", RECIPE.format(before=before, engine_kwargs=engine_kwargs))
    findings = [f for f in check_file(recipe) if f.rule_id == "recipe-value-unread"]
    line = recipe.read_text().splitlines().index(f"    engine_kwargs={engine_kwargs},") + 1
    # deployment_config's `replicas()` is not read either, but the checker needs nothing there.
    assert [(f.line, f.message.split(": ")[0]) for f in findings] == [(line, why)]
    assert "--execute-recipes" in findings[0].fix
    assert main([str(recipe)]) == 1


def test_a_recipe_that_builds_its_config_in_a_function(tmp_path: Path) -> None:
    recipe = write(
        tmp_path,
        "recipe.py",
        """
        from ray.serve.llm import LLMConfig

        def build(tp):
            return LLMConfig(
                model_loading_config={"model_id": "m"},
                engine_kwargs={"tensor_parallel_size": tp, "max_num_seqs": -1},
            )
        """,
    )
    (deployment,) = parse_file(recipe).deployments
    assert deployment.engine["max_num_seqs"].value == -1
    assert [(s.line, s.value) for s in deployment.unread] == [
        (6, "`tp` is not a module-level name the checker reads")
    ]


def test_dict_and_json_dumps_keep_their_lines(tmp_path: Path) -> None:
    recipe = write(
        tmp_path,
        "recipe.py",
        """
        import json
        from ray.serve import llm

        ASCEND = {
            "enable_dsa_cp": True,
        }
        llm_config = llm.LLMConfig(
            model_loading_config=dict(model_id="m"),
            engine_kwargs=dict(
                max_num_seqs=8,
                additional_config=json.dumps(
                    {**ASCEND, "enable_cpu_bindng": True}
                ),
            ),
        )
        """,
    )
    assert found(recipe) == {
        ("dsa-cp-requires-flashcomm1", 5),
        ("additional-config-unknown-key", 12),
    }


def test_a_recipe_that_is_not_python(tmp_path: Path, capsys) -> None:
    recipe = write(tmp_path, "recipe.py", "llm_config = LLMConfig(\n")
    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"{recipe}:1: not valid Python ('(' was never closed). Fix: fix the syntax and check again"
    ]


def test_execute_recipes_warns_runs_with_a_minimal_environment_and_ignores_prints(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("RSN_TEST_SECRET", "do-not-leak")
    seen = tmp_path / "environment"
    recipe = write(
        tmp_path,
        "recipe.py",
        f"""
        import os
        from pathlib import Path

        from ray.serve.llm import LLMConfig

        Path({str(seen)!r}).write_text("\\n".join(sorted(os.environ)))
        # What the old probe took for its result: the first line with its marker.
        print('__ray_serve_npu_check__[]')

        def additional():
            return {{"enable_dsa_cp": True}}

        llm_config = LLMConfig(
            model_loading_config={{"model_id": "m", "model_source": "/models/m"}},
            engine_kwargs={{"additional_config": additional()}},
        )
        """,
    )
    # Read statically, `additional()` is not read; the flag runs it.
    assert found(recipe) == {("recipe-value-unread", 15)}
    assert main(["--execute-recipes", str(recipe)]) == 1
    out, err = capsys.readouterr()
    assert "warning: --execute-recipes runs the module-level code" in err
    assert f"{recipe}:15: error dsa-cp-requires-flashcomm1" in out
    environment = seen.read_text().split()
    assert "RSN_TEST_SECRET" not in environment and "PATH" in environment


def test_executed_and_read_recipes_agree() -> None:
    path = RECIPES / "serve_span_nodes.py"
    (read,) = parse_recipe(str(path), path.read_text())
    (executed,) = parse_recipe(str(path), path.read_text(), execute_recipes=True)
    assert executed.model_dump() == read.model_dump()


CONFIG = 'LLMConfig(model_loading_config={"model_id": "m"}, engine_kwargs={"max_num_seqs": 8})'
DSA_CP = '{"additional_config": {"enable_dsa_cp": True}}'


@pytest.mark.parametrize(
    ("recipe", "why"),
    [
        (
            f'cfg = {CONFIG}\ncfg.engine_kwargs["additional_config"] = {{"enable_dsa_cp": True}}\n',
            "`cfg` is bound or changed by a statement the checker does not follow",
        ),
        (
            f"cfg = {CONFIG}\ncfg.engine_kwargs.update({DSA_CP})\n",
            "`cfg` is bound or changed by a statement the checker does not follow",
        ),
        (
            'ek = {"max_num_seqs": 8}\n'
            'cfg = LLMConfig(model_loading_config={"model_id": "m"}, engine_kwargs=ek)\n'
            'ek["additional_config"] = {"enable_dsa_cp": True}\n',
            "`ek` is bound or changed by a statement the checker does not follow",
        ),
        (
            f"CONFIGS = [{CONFIG}]\nCONFIGS[0].engine_kwargs.update({DSA_CP})\n",
            "`CONFIGS` is bound or changed by a statement the checker does not follow",
        ),
        (
            f'base = {CONFIG}\ncfg = base.model_copy(update={{"engine_kwargs": {DSA_CP}}})\n',
            "`base.model_copy(update={'engine_kwargs': {'additional_con...` builds an LLMConfig "
            "the checker does not read",
        ),
    ],
    ids=["subscript-assignment", "update", "built-from-a-changed-dict", "in-a-list", "model-copy"],
)
def test_a_config_changed_after_it_was_built_is_not_trusted(
    tmp_path: Path, recipe: str, why: str
) -> None:
    """Its values as built are stale: the change is reported, not the values trusted."""
    path = write(tmp_path, "recipe.py", "from ray.serve.llm import LLMConfig\n" + recipe)
    findings = check_file(path)
    last = len(path.read_text().splitlines())
    assert [(f.rule_id, f.line) for f in findings] == [("recipe-value-unread", last)]
    assert findings[0].message.startswith(why)
    assert "--execute-recipes" in findings[0].fix


@pytest.mark.parametrize(
    "recipe",
    [
        f"from ray.serve.llm import LLMConfig as Config\ncfg = Config(engine_kwargs={DSA_CP})\n",
        f"import ray.serve.llm as llm\ncfg = llm.LLMConfig(engine_kwargs={DSA_CP})\n",
        f"import ray.serve.llm\ncfg = ray.serve.llm.LLMConfig(engine_kwargs={DSA_CP})\n",
        "from ray_serve_npu import build_openai_app\n"
        f'app = build_openai_app({{"llm_configs": [{{"engine_kwargs": {DSA_CP}}}]}})\n',
        "from ray.serve.llm import build_openai_app\n"
        'if __name__ == "__main__":\n'
        f'    build_openai_app({{"llm_configs": [{{"engine_kwargs": {DSA_CP}}}]}})\n',
        "from ray.serve.llm import LLMServingArgs, build_dp_openai_app\n"
        f'args = LLMServingArgs(llm_configs=[{{"engine_kwargs": {DSA_CP}}}])\n'
        f'app = build_dp_openai_app({{"llm_configs": [{{"engine_kwargs": {DSA_CP}}}]}})\n',
    ],
    ids=[
        "alias",
        "module-alias",
        "dotted",
        "dict-in-build-openai-app",
        "under-main",
        "serving-args",
    ],
)
def test_configs_are_recognised_by_the_import_table_and_as_dicts(
    tmp_path: Path, recipe: str
) -> None:
    path = write(tmp_path, "recipe.py", recipe)
    lines = {n for n, text in enumerate(recipe.splitlines(), 1) if "enable_dsa_cp" in text}
    assert {f.rule_id for f in check_file(path)} == {"dsa-cp-requires-flashcomm1"}
    assert {f.line for f in check_file(path)} == lines


def test_a_recipe_using_serve_llm_without_a_config_it_reads_is_not_checked(
    tmp_path: Path, capsys
) -> None:
    recipe = write(
        tmp_path,
        "recipe.py",
        """
        from ray_serve_npu import build_openai_app

        app = build_openai_app(make_args())
        """,
    )
    assert main([str(recipe)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{recipe}: the recipe uses Ray Serve LLM but builds no LLMConfig the checker reads. "
        "Fix: build each config with `LLMConfig(...)` or a literal dict in `llm_configs`, "
        "or run the recipe with --execute-recipes"
    ]
    # Python that does not use Ray Serve LLM holds nothing to check, and is no error.
    assert check_file(write(tmp_path, "client.py", "import json\n")) == []


def _unread_from_settings(tmp_path: Path) -> list[tuple[int, object]]:
    """The unread values of a recipe whose tensor parallel size comes from settings.py."""
    recipe = write(
        tmp_path,
        "recipe.py",
        f"""
        from settings import x
        from ray.serve.llm import LLMConfig

        llm_config = {CONFIG.replace("8", "x")}
        """,
    )
    (deployment,) = parse_recipe(str(recipe), recipe.read_text())
    return [(s.line, s.value) for s in deployment.unread]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("x = " + "-" * 200_000 + "1\n", "MemoryError"),
        ("x = " + "+".join(["1"] * 50_000) + "\n", "RecursionError"),
    ],
    ids=["minus-signs", "long-sum"],
)
def test_python_too_deep_to_read(tmp_path: Path, capsys, text: str, error: str) -> None:
    recipe = write(tmp_path, "recipe.py", "from ray.serve.llm import LLMConfig\n" + text)
    assert main([str(recipe)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{recipe}: too deeply nested or too large to read as Python ({error}). "
        "Fix: split the expression into names bound one by one"
    ]
    # Imported from a recipe beside it, the value is not read, and said so.
    write(tmp_path, "settings.py", text)
    assert _unread_from_settings(tmp_path) == [
        (4, f"settings.py could not be read as Python ({error})")
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"x = 8\0\n", "a binary file, not text"),
        ("x = 'ü'\n".encode("latin-1"), "not UTF-8 text (byte 5 cannot be decoded)"),
        (b"", "larger than 10 MiB, which no configuration is"),
    ],
    ids=["binary", "latin-1", "huge"],
)
def test_a_recipe_beside_it_is_read_as_the_named_file_is(
    tmp_path: Path, data: bytes, problem: str
) -> None:
    with (tmp_path / "settings.py").open("wb") as settings:
        settings.write(data)
        if not data:
            settings.truncate(11 * 2**20)
    assert _unread_from_settings(tmp_path) == [(4, f"settings.py could not be read ({problem})")]
