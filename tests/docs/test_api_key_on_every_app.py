"""Every command on a page that builds a recipe's app passes the API key (#36: "the API key
on every step that builds an app"): without RAY_SERVE_NPU_API_KEY the app serves anyone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ray_serve_npu.check.markdown import code_blocks

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: A shell line that runs a recipe that builds and runs an app.
RUNS_A_RECIPE = re.compile(r"\bpython3? (?:\S+/)?serve_\w+\.py\b")
WITH_KEY = 'RAY_SERVE_NPU_API_KEY="$OPENAI_API_KEY" python'


def runs_without_key(text: str) -> list[str]:
    """Each shell line of a page that runs a recipe without the key, with its line."""
    found = []
    for language, body, first in code_blocks(text):
        if language not in {"bash", "sh", "shell", "console"}:
            continue
        for offset, line in enumerate(body.splitlines()):
            if RUNS_A_RECIPE.search(line) and WITH_KEY not in line:
                found.append(f"{first + offset}: {line.strip()}")
    return found


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_every_recipe_a_page_runs_gets_the_api_key(page: Path) -> None:
    assert runs_without_key(page.read_text()) == []


def test_a_recipe_run_without_the_key_is_found() -> None:
    page = "Run it:\n\n```bash\npython serve_span_nodes.py\n```\n"
    assert runs_without_key(page) == ["4: python serve_span_nodes.py"]
    keyed = page.replace("python serve", 'RAY_SERVE_NPU_API_KEY="$OPENAI_API_KEY" python serve')
    assert runs_without_key(keyed) == []
