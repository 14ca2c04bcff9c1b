"""The style checker: each rule, seeded into a clean page, reports the right file:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.style import check_pages, main

DOCS = Path(__file__).resolve().parents[2] / "docs"

FRONT_MATTER = """---
myst:
  html_meta:
    description: "A page for the style checker's tests."
---
"""

#: A page that breaks no rule; each seeded case replaces line 9 (the placeholder).
CLEAN_PAGE = (
    FRONT_MATTER
    + """
(clean)=

# Serve a model on Ray Serve LLM with Docker Compose

SEEDED LINE

## Step 1: Start the cluster

Run two commands on one of the eight NPUs, such as `ray start --head`:

```bash
ray start --head --num-cpus 2
```

```{literalinclude} ../recipes/serve_npu.py
:language: python
```

1. Read the {doc}`tuning` page and https://docs.ray.io/en/latest/serve/index.html.
2. Give it 64 GB, 1M tokens, vLLM 0.22 and TP4 on `/dev/davinci0` to `davinci7`.
"""
)
SEEDED_LINE = CLEAN_PAGE.splitlines().index("SEEDED LINE") + 1


def _findings(tmp_path: Path, seeded: str, page_text: str = CLEAN_PAGE) -> list[tuple[int, str]]:
    """(line, rule) of each finding on ``page.md``, checked beside the site's other pages."""
    page = tmp_path / "page.md"
    page.write_text(page_text.replace("SEEDED LINE", seeded))
    findings = check_pages(sorted(tmp_path.glob("*.md")))
    return sorted({(finding.line, finding.rule) for finding in findings if finding.path == page})


def test_the_clean_page_is_clean(tmp_path: Path) -> None:
    assert _findings(tmp_path, "Plain prose with two NPUs.") == []


@pytest.mark.parametrize(
    ("seeded", "rule"),
    [
        ("## Download Model Weights", "heading-case"),
        ("### Step 2: Send Requests", "heading-case"),
        ("Use a small model, e.g. a tiny one.", "banned-phrase"),
        ("That is, i.e. the same.", "banned-phrase"),
        ("Ports, paths, etc. are fixed.", "banned-phrase"),
        ("It is recommended to download the weights first.", "banned-phrase"),
        ("Ray currently lacks the kind.", "banned-phrase"),
        ("For details, refer to the tuning page.", "banned-phrase"),
        ("> **Note:** the image includes Ray.", "banned-phrase"),
        ("This enables scalable, efficient serving.", "benefits-list"),
        ("A seamless experience.", "benefits-list"),
        ("Start 2 replicas.", "number-words"),
        ("Wait 5 minutes, then retry.", "number-words"),
        (
            "See [Ray Serve LLM](https://docs.ray.io/en/latest/serve/llm/page.html).",
            "latest-link",
        ),
    ],
)
def test_each_prose_rule_reports_the_seeded_line(tmp_path: Path, seeded: str, rule: str) -> None:
    assert _findings(tmp_path, seeded) == [(SEEDED_LINE, rule)]


def test_a_code_span_across_lines_is_not_prose(tmp_path: Path) -> None:
    assert _findings(tmp_path, "Keep `max_num_seqs × (1 +\nnum_speculative_tokens)` small.") == []


def test_a_fence_without_a_language_is_reported_at_its_opening_line(tmp_path: Path) -> None:
    assert _findings(tmp_path, "```\nray status\n```") == [(SEEDED_LINE, "fence-language")]


def test_a_literalinclude_without_a_language_is_reported(tmp_path: Path) -> None:
    seeded = "```{literalinclude} ../recipes/client_openai.py\n:start-after: __x__\n```"
    assert _findings(tmp_path, seeded) == [(SEEDED_LINE, "fence-language")]


def test_a_dollar_prompt_is_reported_at_its_line(tmp_path: Path) -> None:
    seeded = "```bash\nray status\n$ ray stop\n```"
    assert _findings(tmp_path, seeded) == [(SEEDED_LINE + 2, "shell-prompt")]


def test_a_page_without_html_meta_is_reported_at_line_one(tmp_path: Path) -> None:
    page = tmp_path / "bare.md"
    page.write_text("# A page\n\nNo front matter.\n")
    assert [(f.line, f.rule) for f in check_pages([page])] == [(1, "html-meta")]


def test_a_latest_link_to_another_page_of_the_site_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tuning.md").write_text(CLEAN_PAGE.replace("SEEDED LINE", "Tuning."))
    seeded = "See https://docs.ray.io/en/latest/serve/llm/tuning.html for the flags."
    assert _findings(tmp_path, seeded) == [(SEEDED_LINE, "latest-link")]
    # The same link to a page this site doesn't have is Ray's, and stays.
    seeded = "See https://docs.ray.io/en/latest/serve/llm/quick-start.html for Ray's."
    assert _findings(tmp_path, seeded) == []


def test_the_cli_prints_file_and_line_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(CLEAN_PAGE.replace("SEEDED LINE", "Use it, e.g. here."))
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{page}:{SEEDED_LINE}: banned-phrase: ")
    assert "(fix: write 'for example')" in out


def test_the_sites_pages_are_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(DOCS)]) == 0, capsys.readouterr().out


GLOSSARY = (
    FRONT_MATTER
    + """
# Glossary

```{glossary}
gang
  Replicas placed and restarted together.

TP
  Tensor parallelism.
```
"""
)


def _findings_beside_glossary(tmp_path: Path, seeded: str) -> list[tuple[int, str]]:
    (tmp_path / "glossary.md").write_text(GLOSSARY)
    # The clean page's last line uses TP4; link it there, so only the seeded line counts.
    return _findings(tmp_path, seeded, CLEAN_PAGE.replace("TP4", "{term}`TP4 <TP>`"))


def test_a_terms_first_use_without_a_glossary_link_is_reported(tmp_path: Path) -> None:
    assert _findings_beside_glossary(tmp_path, "The ranks run as one gang.") == [
        (SEEDED_LINE, "glossary-link")
    ]
    # Plural and capitalised uses are uses too.
    assert _findings_beside_glossary(tmp_path, "Gangs restart whole.") == [
        (SEEDED_LINE, "glossary-link")
    ]


def test_a_term_linked_at_its_first_use_is_clean(tmp_path: Path) -> None:
    assert _findings_beside_glossary(tmp_path, "One {term}`gang`; the gang restarts.") == []
    assert _findings_beside_glossary(tmp_path, "Two {term}`gangs <gang>`.") == []


def test_a_link_after_the_first_use_is_reported_at_the_first_use(tmp_path: Path) -> None:
    seeded = "The gang starts.\n\nLater, the {term}`gang` restarts."
    assert _findings_beside_glossary(tmp_path, seeded) == [(SEEDED_LINE, "glossary-link")]


def test_the_clean_pages_acronym_is_checked_where_the_glossary_defines_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "glossary.md").write_text(GLOSSARY)
    # CLEAN_PAGE's "TP4" is the first use of TP, and it isn't linked.
    tp4_line = next(n for n, line in enumerate(CLEAN_PAGE.splitlines(), 1) if "TP4" in line)
    assert _findings(tmp_path, "Plain prose.") == [(tp4_line, "glossary-link")]


def test_a_listed_term_the_glossary_lacks_is_reported_as_missing_there(tmp_path: Path) -> None:
    (tmp_path / "glossary.md").write_text(GLOSSARY.replace("gang\n", "gang scheduling\n"))
    page = tmp_path / "page.md"
    page.write_text(
        CLEAN_PAGE.replace("TP4", "{term}`TP4 <TP>`").replace(
            "SEEDED LINE", "The ranks run as one gang."
        )
    )
    (finding,) = [f for f in check_pages(sorted(tmp_path.glob("*.md"))) if f.path == page]
    assert (finding.line, finding.rule) == (SEEDED_LINE, "glossary-link")
    assert finding.message == "'gang' has no glossary entry"
    assert finding.fix == "define it in glossary.md"
