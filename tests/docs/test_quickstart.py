"""The quick start (#36): ten commands or fewer from a prepared host to the first answer,
on each node kind, and every one of them in the page that the harness runs in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness.blocks import Block, Language, read_page
from ray_serve_npu_tooling.harness.fences import line_offsets
from ray_serve_npu_tooling.harness.markers import MarkerKind
from ray_serve_npu_tooling.harness.status import Mode, Status, declared_outcomes
from ray_serve_npu_tooling.harness.substitutions import code_substituter

from ray_serve_npu import myst

DOCS = Path(__file__).resolve().parents[2] / "docs"
QUICKSTART = DOCS / "quickstart.md"
NUMBERS = "one two three four five six seven eight nine ten".split()


def commands(text: str) -> list[str]:
    """A shell block's commands: lines joined where one ends in ``\\`` or a pipe."""
    found: list[str] = []
    joined = ""
    for line in text.splitlines():
        joined += line.strip()
        if joined.endswith(("\\", "|")):
            joined = joined.rstrip("\\") + " "
            continue
        if joined and not joined.startswith("#"):
            found.append(joined)
        joined = ""
    return found


def test_a_command_spans_its_continuation_lines() -> None:
    text = "# comment\ncurl -s x \\\n  -d y |\n  python3 -c z\n\nray status\n"
    assert commands(text) == ["curl -s x  -d y | python3 -c z", "ray status"]


def _quickstart() -> tuple[str, list]:
    text = code_substituter(DOCS)(QUICKSTART.read_text(encoding="utf-8"))
    return text, read_page(text, QUICKSTART, DOCS)


def commands_of(node_kind: str) -> list[str]:
    """The quick start's commands, in order, for a reader who chose ``node_kind``'s tabs."""
    text, items = _quickstart()
    line_of = line_offsets(text)
    other_tabs = [
        range(fence.line, fence.end + 1)
        for fence in myst.fences(text)
        if fence.directive == "tab-item" and fence.option("sync") not in ("", node_kind)
    ]
    found = []
    for item in items:
        block: Block | None = item.block
        if block is None or block.language is not Language.SHELL:
            continue
        page_line = next(n for n, offset in enumerate(line_of) if offset > item.start)
        if not any(page_line in tab for tab in other_tabs):
            found.extend(commands(block.text))
    return found


@pytest.mark.parametrize("node_kind", ["a2", "a3"])
def test_the_quick_start_takes_at_most_ten_commands_as_the_page_says(node_kind: str) -> None:
    found = commands_of(node_kind)
    assert len(found) <= 10, found
    said = re.search(r"the quick start takes (\w+) commands", QUICKSTART.read_text())
    assert said is not None, "the page no longer says how many commands it takes"
    assert NUMBERS.index(said[1]) + 1 == len(found), found


def test_the_reader_chooses_one_node_kinds_commands() -> None:
    a2, a3 = commands_of("a2"), commands_of("a3")
    assert any("serve_npu.py" in c for c in a2) and not any("serve_npu_a3" in c for c in a2)
    assert any("serve_npu_a3.py" in c for c in a3) and not any("serve_npu.py" in c for c in a3)


def test_the_fake_tier_runs_the_app_and_the_first_answer_from_the_page() -> None:
    _, items = _quickstart()
    declared = declared_outcomes(items, Mode.FAKE)
    ran = [(block.kind, block.text) for block, outcome in declared if outcome.status is Status.RUN]
    kinds = [kind for kind, _ in ran]
    # The A2 app (joining the server npu-ascend.md left up), then the host's chat request
    # and its expected output: the second shell's command, after the first's.
    assert kinds[-3:] == [MarkerKind.SERVER, None, MarkerKind.OUTPUT], ran
    assert "serve_npu.py" in ran[-3][1] and "chat/completions" in ran[-2][1]
