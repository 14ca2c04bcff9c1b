"""Every command on a page that builds a recipe's app passes the API key (#36: "the API key
on every step that builds an app"): without RAY_SERVE_NPU_API_KEY the app serves anyone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ray_serve_npu.check.markdown import code_blocks

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: A shell line that runs a recipe that builds and runs an app (not one that only prints
#: what it could serve, a run's LLMConfig or a Compose file).
RUNS_A_RECIPE = re.compile(r"\bpython3? (?:\S+/)?serve_\w+\.py\b(?! --(?:list|show|compose)\b)")
#: The key given to the app: read from the key file, or from the shell's exported key.
WITH_KEY = re.compile(
    r'RAY_SERVE_NPU_API_KEY="\$(?:OPENAI_API_KEY|\(cat ~/\.ray-serve-npu/api_key\))" python'
)


def runs_without_key(text: str) -> list[str]:
    """Each shell line of a page that runs a recipe without the key, with its line."""
    found = []
    for language, body, first in code_blocks(text):
        if language not in {"bash", "sh", "shell", "console"}:
            continue
        for offset, line in enumerate(body.splitlines()):
            if RUNS_A_RECIPE.search(line) and not WITH_KEY.search(line):
                found.append(f"{first + offset}: {line.strip()}")
    return found


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_every_recipe_a_page_runs_gets_the_api_key(page: Path) -> None:
    assert runs_without_key(page.read_text()) == []


def test_a_recipe_run_without_the_key_is_found() -> None:
    for prints in ("--list", "--show RUN", "--compose RUN > docker-compose-run.yaml"):
        assert runs_without_key(f"```bash\npython serve_model.py {prints}\n```\n") == []
    assert runs_without_key("```bash\npython serve_model.py --listing\n```\n") != []
    page = "Run it:\n\n```bash\npython serve_span_nodes.py\n```\n"
    assert runs_without_key(page) == ["4: python serve_span_nodes.py"]
    for key in ("$OPENAI_API_KEY", "$(cat ~/.ray-serve-npu/api_key)"):
        keyed = page.replace("python serve", f'RAY_SERVE_NPU_API_KEY="{key}" python serve')
        assert runs_without_key(keyed) == []
    unquoted = page.replace("python serve", "RAY_SERVE_NPU_API_KEY=$OPENAI_API_KEY python serve")
    assert runs_without_key(unquoted) == [
        "4: RAY_SERVE_NPU_API_KEY=$OPENAI_API_KEY python serve_span_nodes.py"
    ]


#: Where a page exports the key for its shells: docs/npu-ascend.md's marked block, or an
#: include of it.
EXPORTS_THE_KEY = "__api_key_start__"


def key_used_before_exported(text: str) -> bool:
    """On a page that starts a server, whether a command uses ``$OPENAI_API_KEY`` before the
    page exports it: a reader in a fresh shell would send, or serve with, an empty key. (The
    docs harness gives every block the tier's key, so running the page can't catch this.)"""
    if "% test: server" not in text or "$OPENAI_API_KEY" not in text:
        return False
    exported = text.find(EXPORTS_THE_KEY)
    return exported < 0 or text.index("$OPENAI_API_KEY") < exported


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_a_page_that_serves_exports_the_key_before_using_it(page: Path) -> None:
    assert not key_used_before_exported(page.read_text())


def test_a_key_used_before_any_export_is_found() -> None:
    serve = '% test: server\n```bash\nRAY_SERVE_NPU_API_KEY="$OPENAI_API_KEY" python s.py\n```\n'
    include = "```{include} npu-ascend.md\n:start-after: __api_key_start__\n```\n"
    assert key_used_before_exported(serve)
    assert key_used_before_exported(serve + include)
    assert not key_used_before_exported(include + serve)
