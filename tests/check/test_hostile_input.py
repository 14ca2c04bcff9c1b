"""`ray-serve-npu check` on hostile and malformed input.

Each file in tests/check/hostile/ is one case; expected.csv gives the exit status, the
line and the start of what the checker says there. A file the checker cannot read gives
exit status 2 and one line, `FILE[:LINE]: problem. Fix: ...`: never a traceback, and
never a summary of "0 finding(s)" for what was not read.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest
from checker_data import ROOT, line_of

from ray_serve_npu.check import MAX_LINE, check_paths, parse_file
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.yamlnodes import load_documents

HOSTILE = Path(__file__).parent / "hostile"
with (HOSTILE / "expected.csv").open(newline="") as table:
    CASES = list(csv.DictReader(table))
UNREADABLE = [c for c in CASES if c["exit"] == "2"]


def _where(case: dict[str, str]) -> str:
    path = HOSTILE / case["file"]
    return f"{path}:{case['line']}: " if case["line"] else f"{path}: "


def test_every_hostile_file_has_its_expectation() -> None:
    files = sorted(p.name for p in HOSTILE.iterdir() if p.name != "expected.csv")
    assert files == sorted(c["file"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_hostile_file(case: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    status = main([str(HOSTILE / case["file"])])
    out, err = capsys.readouterr()
    assert status == int(case["exit"]), (out, err)
    expected = _where(case) + case["says"]
    if status == 2:
        assert out == ""
        (line,) = err.splitlines()
        assert line.startswith(expected), line
        assert ". Fix: " in line
    else:
        assert any(line.startswith(expected) for line in out.splitlines()), out
        assert out.splitlines()[-1] == "1 file(s) checked: 1 finding(s)"


def test_unreadable_files_outweigh_findings(capsys: pytest.CaptureFixture[str]) -> None:
    """With every case at once: findings for the files read, a line for each other, exit 2."""
    status = main([str(HOSTILE / c["file"]) for c in CASES])
    out, err = capsys.readouterr()
    assert status == 2
    assert sorted(err.splitlines()) == sorted(
        next(line for line in err.splitlines() if line.startswith(_where(c) + c["says"]))
        for c in UNREADABLE
    )
    read = len(CASES) - len(UNREADABLE)
    assert out.splitlines()[-1] == (
        f"{read} file(s) checked: {read} finding(s); {len(UNREADABLE)} file(s) could not be read"
    )

    assert main(["--format", "json", *(str(HOSTILE / c["file"]) for c in CASES)]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["checked"] == read
    assert len(report["unreadable"]) == len(UNREADABLE)


def test_a_walked_directory_skips_what_the_checker_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("unrecognised.yaml", "merge-key-list.yaml"):
        shutil.copy(HOSTILE / name, tmp_path / name)
    # Hidden folders (.git, .venv) are not walked.
    (tmp_path / ".venv").mkdir()
    shutil.copy(HOSTILE / "alias-bomb.yaml", tmp_path / ".venv")
    assert main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "1 file(s) checked: 1 finding(s)"
    assert err.startswith(
        f"skipped {tmp_path / 'unrecognised.yaml'}: the checker found nothing it reads"
    )
    assert [f.rule_id for f in check_paths([tmp_path]).findings] == [
        "env-balance-scheduling-ignored"
    ]

    # Named, the same file is an error; a directory with nothing to read is too.
    (unreadable,) = check_paths([tmp_path / "unrecognised.yaml"]).unreadable
    assert "nothing it reads" in unreadable
    (tmp_path / "merge-key-list.yaml").unlink()
    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().out == "0 file(s) checked: 0 finding(s)\n"


def test_files_that_are_not_configurations(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as file:
        file.truncate(11 * 2**20)
    assert main([str(fifo), str(huge)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{fifo}: not a regular file. Fix: pass a file or a directory",
        f"{huge}: larger than 10 MiB, which no configuration is. "
        "Fix: pass the configuration file itself",
    ]


def test_paths_that_are_not_files(tmp_path: Path, capsys) -> None:
    """Each path the checker does not read gets its reason, named or found in a walk."""
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(loop), str(empty)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{loop}: cannot be read: Too many levels of symbolic links. "
        "Fix: pass the file itself, or correct the link",
        f"{empty}: holds no file the checker reads (.py, .yaml, .yml, .md, .sh files, "
        "outside hidden folders). Fix: pass the directory or files that hold the configurations",
    ]

    walked = tmp_path / "walked"
    walked.mkdir()
    shutil.copy(HOSTILE / "merge-key-list.yaml", walked)
    os.mkfifo(walked / "pipe.yaml")
    (walked / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    assert main([str(walked)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "1 file(s) checked: 1 finding(s)"
    assert err.splitlines() == [
        f"skipped {walked / 'dangling.yaml'}: cannot be read: No such file or directory",
        f"skipped {walked / 'pipe.yaml'}: not a regular file",
    ]


def test_a_reused_anchor_is_yaml(recwarn: pytest.WarningsRecorder) -> None:
    """A later anchor of the same name replaces the earlier one, without a warning."""
    (document,) = load_documents("a: &x 1\nb: &x 2\nc: *x\n")
    assert document.data == {"a": 1, "b": 2, "c": 2}
    assert not recwarn.list


def test_serve_configs_are_read_as_ray_reads_them(tmp_path: Path) -> None:
    """Ray reads Serve configs with PyYAML (YAML 1.1), where `yes` is true."""
    assert load_documents("a: yes\n")[0].data == {"a": "yes"}
    assert load_documents("a: yes\n", version=(1, 1))[0].data == {"a": True}
    config = tmp_path / "llm.yaml"
    config.write_text(
        "model_loading_config:\n  model_id: qwen\nengine_kwargs:\n  enforce_eager: yes\n"
    )
    (deployment,) = parse_file(config).deployments
    assert deployment.engine["enforce_eager"].value is True


def test_a_page_may_show_yaml_the_checker_does_not_read(tmp_path: Path) -> None:
    blocks = [
        (HOSTILE / name).read_text()
        for name in ("unrecognised.yaml", "serve-llm-configs-files.yaml", "merge-key-list.yaml")
    ]
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n" + "".join(f"```yaml\n{b}```\n\n" for b in blocks))
    found = check_paths([page]).findings
    assert [f.rule_id for f in found] == ["env-balance-scheduling-ignored"]


def test_the_rayservice_recipe_is_read_at_its_lines() -> None:
    manifest = ROOT / "recipes" / "kuberay" / "rayservice.yaml"
    text = manifest.read_text()
    (deployment,) = parse_file(manifest).deployments
    assert deployment.model is not None
    assert deployment.model.value == "/models/DeepSeek-V4-Flash-w8a8-mtp"
    assert deployment.engine["tensor_parallel_size"].line == line_of(text, "tensor_parallel_size")
    assert deployment.env["HCCL_BUFFSIZE"].line == line_of(text, "HCCL_BUFFSIZE")


def test_rayservice_lines_in_other_documents_and_string_styles(tmp_path: Path) -> None:
    finding = (HOSTILE / "rayservice-finding.yaml").read_text()
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: key\n---\n"
    # A manifest of several objects: the RayService is read, the others are left alone.
    several = tmp_path / "several.yaml"
    several.write_text(secret + finding)
    (found,) = check_paths([several]).findings
    assert found.line == 18 + secret.count("\n")
    # In a folded block the config's lines are not the manifest's: the key's line stands.
    folded = tmp_path / "folded.yaml"
    folded.write_text(finding.replace("serveConfigV2: |", "serveConfigV2: |-"))
    assert [f.line for f in check_paths([folded]).findings] == [18]
    folded.write_text(finding.replace("serveConfigV2: |", "serveConfigV2: >"))
    assert [f.line for f in check_paths([folded]).findings] == [
        line_of(finding, "  serveConfigV2:")
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("long-comment.yaml", "services:\n  vllm:\n    image: x\n# {long}\n"),
        ("long-flag.md", "# Page\n\n```bash\nvllm serve /m --host 127.0.0.1 --x {long}\n```\n"),
        ("long-flag.sh", "#!/bin/sh\n\n\nvllm serve /m --host 127.0.0.1 --x {long}\n"),
    ],
)
def test_a_line_too_long_for_a_configuration(tmp_path: Path, capsys, name, text) -> None:
    """A line of megabytes took minutes (ruamel.yaml's scanner, the flag checks): refused."""
    path = tmp_path / name
    path.write_text(text.format(long="a" * MAX_LINE))
    assert main([str(path)]) == 2
    assert capsys.readouterr().err == (
        f"{path}:4: a line longer than {MAX_LINE // 2**10} KiB, which no configuration "
        "holds. Fix: pass the configuration file itself\n"
    )


def test_a_serve_file_is_read_once_as_yaml_1_1(tmp_path: Path, monkeypatch) -> None:
    """Each YAML reading of the file is one parse: once as YAML 1.2, once as Ray reads it."""
    versions = []

    def counting(text: str, first_line: int = 1, version=None):
        versions.append(version)
        return load_documents(text, first_line, version)

    monkeypatch.setattr("ray_serve_npu.check.load_documents", counting)
    config = "model_loading_config:\n  model_id: qwen\n"
    serve = tmp_path / "llm.yaml"
    serve.write_text(config + "---\n" + config + "---\n" + config)
    assert len(parse_file(serve).deployments) == 3
    assert versions == [None, (1, 1)]
