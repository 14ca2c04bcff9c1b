"""What the checker reads of a command a reader copies from vLLM-Ascend's tutorials:
commands inside MkDocs Material tabs and admonitions (indented four spaces under
``=== "A2 series"``), quoted JSON that runs over several lines, and values the shell
fills at run time (``--port $PORT``), which it reports as unread, not as invalid."""

from __future__ import annotations

from pathlib import Path

from ray_serve_npu.check import check_file

RELEASE = "v0.25.1rc1"
#: A value vLLM 0.25.1 refuses at start-up: the flag takes a JSON object.
BAD_JSON = '--speculative-config \'{"method": "mtp",\''


def _found(path: Path) -> set[tuple[str, int]]:
    return {(f.rule_id, f.line) for f in check_file(path, release=RELEASE)}


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "tutorial.md"
    page.write_text(text)
    return page


def test_a_command_in_an_mkdocs_tab_is_read_on_its_own_line(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "# Deploy\n"  # 1
        "\n"
        '=== "A3 series"\n'  # 3
        "\n"
        "    Run:\n"  # 5
        "\n"
        "    ```bash\n"  # 7
        "    vllm serve /models/m --host 127.0.0.1 --max-model-len abc\n"  # 8
        "    ```\n"
        "\n"
        '=== "A2 series"\n'  # 11
        "\n"
        '    !!! note "Nested"\n'  # 13
        "\n"
        "        ```bash\n"  # 15
        "        vllm serve /models/m --host 127.0.0.1 --no-such-flag\n"  # 16
        "        ```\n"
        "\n"
        "```bash\n"  # 19
        "vllm serve /models/m --host 127.0.0.1 --max-num-seqs x\n"  # 20
        "```\n",
    )
    found = _found(page)
    assert ("vllm-invalid-value", 8) in found
    assert ("vllm-unknown-flag", 16) in found
    assert ("vllm-invalid-value", 20) in found


def test_a_warning_admonition_of_mkdocs_counts_as_the_pages_warning(tmp_path: Path) -> None:
    dashboard = "```bash\nray start --head --dashboard-host=0.0.0.0\n```\n"
    assert ("ray-bound-to-all-interfaces", 2) in _found(_page(tmp_path, dashboard))
    warned = '!!! warning "Exposed"\n\n    The dashboard answers anyone.\n\n' + dashboard
    assert "ray-bound-to-all-interfaces" not in {
        rule for rule, _ in _found(_page(tmp_path, warned))
    }


def test_quoted_json_over_several_lines_is_read_whole(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(
        "vllm serve /models/m --host 127.0.0.1 \\\n"  # 1
        "  --speculative-config '{\n"  # 2
        '     "method": "mtp",\n'
        '     "num_speculative_tokens": 1\n'
        "  }' \\\n"
        "  --model-loader-extra-config '{\n"  # 6
        '     "enable_multithread_load": "true"\n'
        "  }' \\\n"
        "  --max-num-seqs 8\n"  # 9
        "vllm serve /models/m --host 127.0.0.1 " + BAD_JSON + "\n"  # 10
    )
    found = _found(script)
    # The multi-line values parse: only the planted string Boolean is wrong, on its line.
    assert ("multithread-load-not-boolean", 6) in found
    assert not [f for f in found if f[0] == "vllm-invalid-value" and f[1] < 10]
    # A quote that never closes is still an invalid value, on its own line.
    assert ("vllm-invalid-value", 10) in found


def test_a_value_the_shell_fills_is_unread_not_invalid(tmp_path: Path) -> None:
    script = tmp_path / "run_dp.sh"
    script.write_text(
        "vllm serve /models/m --host 127.0.0.1 --port $2 --tensor-parallel-size ${TP} \\\n"
        "  --max-model-len abc\n"
    )
    findings = {(f.rule_id, f.message.split(":")[0]) for f in check_file(script, release=RELEASE)}
    assert ("shell-value-unread", "`--port $2`") in findings
    assert ("shell-value-unread", "`--tensor-parallel-size ${TP}`") in findings
    # A literal the flag doesn't take is still an error.
    assert ("vllm-invalid-value", "`--max-model-len`") in findings
    assert [rule for rule, said in findings if "$" in said] == ["shell-value-unread"] * 2


def test_an_opener_a_fenced_block_shows_opens_nothing(tmp_path: Path) -> None:
    # A page that shows MkDocs syntax carries no warning of its own.
    shown = "```markdown\n!!! warning\n    text\n```\n\n"
    dashboard = "```bash\nray start --head --dashboard-host=0.0.0.0\n```\n"
    assert ("ray-bound-to-all-interfaces", 7) in _found(_page(tmp_path, shown + dashboard))


def test_an_apostrophe_in_prose_doesnt_swallow_the_next_command(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(
        "echo Don't forget\n"
        "vllm serve /models/m --host 127.0.0.1 --max-model-len abc\n"
        "echo It's ready\n"
    )
    assert ("vllm-invalid-value", 2) in _found(script)


def test_a_word_after_a_multi_line_value_keeps_its_own_line(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(
        "vllm serve /models/m --host 127.0.0.1 \\\n"
        "  --speculative-config '{\n"  # 2
        '     "method": "mtp"\n'
        "  }' --max-num-seqs x\n"  # 4
    )
    assert ("vllm-invalid-value", 4) in _found(script)
