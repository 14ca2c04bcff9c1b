"""A recipe that can't come up, dry-run on the fake-NPU tier: one paragraph, no traceback.

Real Ray, Ray Serve LLM and vLLM (CPU build); fake NPUs and a tiny random model. The
recipe is recipes/serve_npu.py with one typo in its engine settings, which Ray Serve
LLM refuses on NPUs ("Unknown engine argument",
ray/llm/_internal/serve/engines/vllm/vllm_models.py:229 at 2.60.0); the fake tier keeps
keys vLLM does not know, so the typo fails on the tier too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dry_runs import RECIPES, dry_run

pytestmark = pytest.mark.fake_npu

TYPO = ('"max_num_seqs": 32,', '"max_num_seq": 32,')


def test_fake_npu_dry_run_of_a_recipe_with_a_typo_says_why_in_one_paragraph(
    tmp_path: Path,
) -> None:
    text = (RECIPES / "serve_npu.py").read_text()
    assert TYPO[0] in text, "test setup: the recipe's max_num_seqs line changed"
    recipe = tmp_path / "serve_npu.py"
    recipe.write_text(text.replace(*TYPO))
    done = dry_run(recipe)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    (paragraph,) = [line for line in done.stderr.splitlines() if "dry-run:" in line]
    assert paragraph.startswith(
        "ray-serve-npu dry-run: serve_npu.py did not come up on the fake-NPU tier: "
    )
    assert "Unknown engine argument: max_num_seq" in paragraph
    kept = Path(paragraph.rsplit(" is in ", 1)[1].removesuffix("."))
    try:
        assert "max_num_seq" in kept.read_text()
    finally:
        kept.unlink()
