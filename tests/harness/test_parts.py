"""The harness's parsers and comparisons, one behaviour each."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness.blocks import named_block, read_page
from ray_serve_npu_tooling.harness.fences import find_fences
from ray_serve_npu_tooling.harness.markers import MarkerKind, parse_marker
from ray_serve_npu_tooling.harness.output import compare_output
from ray_serve_npu_tooling.harness.problems import Location, PageProblem
from ray_serve_npu_tooling.harness.server_config import server_config
from ray_serve_npu_tooling.harness.static_checks import check_dockerfile

PAGE = Path("docs/page.md")
HERE = Location(PAGE, 3)


@pytest.mark.parametrize(
    ("line", "kind", "reason"),
    [
        ("% test: server", MarkerKind.SERVER, ""),
        ('% test: skip "downloads weights"', MarkerKind.SKIP, "downloads weights"),
        ('% test: skip-fake "needs NPUs"', MarkerKind.SKIP_FAKE, "needs NPUs"),
        ('% test: host "needs Docker"', MarkerKind.HOST, "needs Docker"),
    ],
)
def test_markers_parse(line: str, kind: MarkerKind, reason: str) -> None:
    marker = parse_marker(line, HERE)
    assert marker is not None and (marker.kind, marker.reason) == (kind, reason)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("% test: serve", "unknown test marker"),
        ("% test: skip", "`% test: skip` without a reason"),
        ('% test: server "why"', "`% test: server` takes no reason"),
    ],
)
def test_bad_markers_name_page_and_line(line: str, message: str) -> None:
    with pytest.raises(PageProblem, match=rf"^docs/page.md:3: {message}"):
        parse_marker(line, HERE)


def test_fences_inside_directive_containers_are_found() -> None:
    text = (
        "::::{tab-set}\n:::{tab-item} a\n```bash\necho a\n```\n:::\n::::\n"
        "````{note}\n```yaml\nk: v\n```\n````\n"
    )
    assert [(f.line, f.fence.info, list(f.fence.body)) for f in find_fences(text, PAGE)] == [
        (3, "bash", ["echo a"]),
        (9, "yaml", ["k: v"]),
    ]


def test_an_unclosed_fence_names_its_line() -> None:
    with pytest.raises(PageProblem, match="^docs/page.md:2: the fence ```bash is never closed"):
        find_fences("text\n```bash\necho\n", PAGE)


def test_an_orphan_marker_and_a_fence_without_language_are_page_problems(tmp_path: Path) -> None:
    text = "% test: server\n\nprose\n\n```\nplain\n```\n"
    problems = [str(item.problem) for item in read_page(text, PAGE, tmp_path)]
    assert problems[0].startswith("docs/page.md:1: test marker not followed by a block")
    assert problems[1].startswith("docs/page.md:5: a fence without a language")


def test_a_missing_literalinclude_file_names_the_directive_line(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "page.md"
    text = "# Page\n\n```{literalinclude} ../recipes/missing.py\n:language: python\n```\n"
    (item,) = read_page(text, page, page.parent)
    assert item.problem is not None and item.problem.where == Location(page, 3)
    assert "literalinclude file ../recipes/missing.py does not exist" in str(item.problem)


def test_output_masks_ids_times_token_counts_and_generated_text() -> None:
    expected = (
        '{"id": "chatcmpl-1", "created": 1, "model": "m", '
        '"choices": [{"message": {"content": "Hi"}}], "usage": {"total_tokens": 2}}'
    )
    actual = (
        '{"id": "chatcmpl-9f", "created": 1790000000, "model": "m", "object": "x", '
        '"choices": [{"message": {"content": "Hello there"}}], "usage": {"total_tokens": 17}}'
    )
    assert compare_output(expected, actual) is None


def test_output_shows_a_masked_diff_when_a_kept_value_differs() -> None:
    difference = compare_output('{"model": "m", "id": "a"}', '{"model": "other", "id": "b"}')
    assert difference is not None
    assert '-  "model": "m"' in difference and '+  "model": "other"' in difference


def test_text_output_takes_ellipsis_and_masks_streamed_chunks() -> None:
    actual = (
        'data: {"id": "chatcmpl-2", "created": 5, "choices": [{"delta": {"content": "x"}}]}\n'
        "\ndata: [DONE]\n"
    )
    expected = 'data: {"id": "chatcmpl-1", "created": 1, ...}\n\ndata: [DONE]'
    assert compare_output(expected, actual) is None
    assert compare_output("Reply: ...", "Answer: hi") is not None


def test_server_config_from_a_serve_yaml_and_a_compose_file(tmp_path: Path) -> None:
    (tmp_path / "serve_config.yaml").write_text(
        "http_options: {port: 8100}\napplications:\n- args:\n    llm_configs:\n"
        "    - model_loading_config: {model_id: m1}\n"
    )
    (tmp_path / "docker-compose.yaml").write_text(
        "services:\n  vllm:\n    command: vllm serve /w --served-model-name m2 --port 8200\n"
    )
    pages = "% test: server\n```bash\nserve run serve_config.yaml\n```\n"
    pages += "% test: server\n```bash\ndocker compose up -d\n```\n"
    blocks = [item.block for item in read_page(pages, PAGE, tmp_path)]
    configs = [server_config(block, tmp_path) for block in blocks if block is not None]
    assert [(set(c.model_ids), c.port) for c in configs] == [({"m1"}, 8100), ({"m2"}, 8200)]


def test_a_dockerfile_heredoc_may_open_on_a_continuation_line(tmp_path: Path) -> None:
    text = (
        "```dockerfile\n"
        "FROM base\n"
        "RUN pip install tool \\\n"
        "    && python3 - <<'PY'\n"
        "import os\n"
        "print(os.sep)\n"
        "PY\n"
        "BOGUS after\n"
        "```\n"
    )
    (block,) = [item.block for item in read_page(text, PAGE, tmp_path) if item.block]
    # The heredoc's Python is not read as instructions; what follows it is.
    with pytest.raises(PageProblem, match="unknown Dockerfile instruction BOGUS"):
        check_dockerfile(block)


def test_a_marker_line_inside_a_block_of_code_is_code(tmp_path: Path) -> None:
    text = "% test: skip-fake \"needs NPUs\"\n```bash\necho '% test: server'\n% test: server\n```\n"
    (item,) = read_page(text, PAGE, tmp_path)
    assert item.problem is None
    assert item.block is not None and item.block.marker is not None
    assert item.block.marker.kind.value == "skip-fake"


NAMED = """\
```bash
ray start --head
```

% __app_run_start__
% test: server
```bash
python serve_npu.py
```
% __app_run_end__

% __two_start__
```bash
echo one
```
```bash
echo two
```
% __two_end__
"""


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("app_run", "python serve_npu.py"),
        ("two", "2 blocks between `% __two_start__` and `% __two_end__`"),
        ("missing", "0 blocks between `% __missing_start__` and `% __missing_end__`"),
    ],
)
def test_a_named_block_is_the_one_between_its_marker_lines(
    tmp_path: Path, name: str, found: str
) -> None:
    page = tmp_path / "page.md"
    page.write_text(NAMED)
    try:
        block = named_block(page, tmp_path, name)
    except PageProblem as problem:
        assert found in str(problem)
        assert "keep exactly one code block between the two marker lines" in str(problem)
    else:
        assert block.text == found
        assert block.kind is MarkerKind.SERVER


INCLUDED = """\
% __setup_start__
% test: skip "needs the host"
```bash
ray start --head
```

% test: output
```text
started
```
% __setup_end__

% __other_start__
```bash
echo other
```
% __other_end__
"""


def _including(tmp_path: Path, text: str) -> list:
    (tmp_path / "steps.md").write_text(INCLUDED)
    page = tmp_path / "quick.md"
    page.write_text(text)
    return read_page(text, page, tmp_path)


def test_an_included_part_brings_its_blocks_and_markers_in_the_page_order(
    tmp_path: Path,
) -> None:
    text = (
        "```bash\necho first\n```\n\n"
        "1. Set up:\n\n   ```{include} steps.md\n   :start-after: __setup_start__\n"
        "   :end-before: __setup_end__\n   ```\n\n"
        "```bash\necho last\n```\n"
    )
    items = _including(tmp_path, text)
    blocks = [item.block for item in items if item.block]
    assert [(b.text, b.kind) for b in blocks] == [
        ("echo first", None),
        ("ray start --head", MarkerKind.SKIP),
        ("started", MarkerKind.OUTPUT),
        ("echo last", None),
    ]
    # Each keeps the included page's line, where a reader fixes it.
    assert [(b.page.name, b.line) for b in blocks[1:3]] == [("steps.md", 3), ("steps.md", 8)]
    # Sybil's regions may not overlap: each included block gets its own slice.
    spans = [(item.start, item.end) for item in items]
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    assert all(start < end for start, end in spans)


@pytest.mark.parametrize(
    ("include", "problem"),
    [
        (
            "```{include} missing.md\n:start-after: __setup_start__\n```\n",
            "included page missing.md does not exist",
        ),
        (
            "```{include} steps.md\n:start-after: __nothing_start__\n```\n",
            "steps.md has no line with '__nothing_start__'",
        ),
        ("```{include} quick.md\n:start-after: x\n```\n", "quick.md includes itself"),
    ],
)
def test_a_bad_include_is_a_problem_at_its_line(tmp_path: Path, include: str, problem: str) -> None:
    (item,) = _including(tmp_path, "Text.\n\n" + include)
    assert item.block is None and item.problem is not None
    assert str(item.problem).startswith(f"{tmp_path / 'quick.md'}:3: {problem}")


def test_a_marker_before_an_include_is_a_problem(tmp_path: Path) -> None:
    text = '% test: skip "why"\n```{include} steps.md\n:start-after: __other_start__\n```\n'
    problems = [str(item.problem) for item in _including(tmp_path, text) if item.problem]
    assert len(problems) == 1 and "test marker not followed by a block" in problems[0]


def test_a_part_that_includes_a_part_of_a_third_page_brings_its_blocks_too(
    tmp_path: Path,
) -> None:
    (tmp_path / "c.md").write_text("Text.\n\n% __c_start__\n```bash\necho c1\n```\n% __c_end__\n")
    (tmp_path / "b.md").write_text(
        "% __b_start__\n```bash\necho b1\n```\n\n"
        "```{include} c.md\n:start-after: __c_start__\n:end-before: __c_end__\n```\n"
        "% __b_end__\n"
    )
    page = tmp_path / "a.md"
    text = "```{include} b.md\n:start-after: __b_start__\n:end-before: __b_end__\n```\n"
    page.write_text(text)
    blocks = [item.block for item in read_page(text, page, tmp_path) if item.block]
    assert [(b.page.name, b.text) for b in blocks] == [("b.md", "echo b1"), ("c.md", "echo c1")]


def test_an_end_before_the_start_names_both(tmp_path: Path) -> None:
    text = "```{include} steps.md\n:start-after: __other_start__\n:end-before: __setup_end__\n```\n"
    (item,) = _including(tmp_path, text)
    assert item.problem is not None
    assert "no line with '__setup_end__' after '__other_start__'" in str(item.problem)


def test_a_whole_file_include_is_content_the_build_makes_not_blocks(tmp_path: Path) -> None:
    # docs/checks.md includes the rules table the build generates (_generated/), absent
    # from a fresh clone until the site is built.
    assert _including(tmp_path, "```{include} _generated/rules.md\n```\n") == []
