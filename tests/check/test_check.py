"""Behaviour of `ray-serve-npu check` on the community guide, broken variants and recipes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checker_data import DATA, ROOT, line_of

from ray_serve_npu.check import check_file, check_paths
from ray_serve_npu.check.cli import main
from ray_serve_npu.check.findings import Severity
from ray_serve_npu.check.rules import available_releases
from ray_serve_npu.releases import SERVE_LLM_RELEASE

GUIDE = DATA / "community-guide-compose.yaml"

# The guide's known problems for v0.22.1rc1, by rule and line in the transcription.
GUIDE_FINDINGS = {
    ("jemalloc-path-mismatch", 40),
    ("mlapo-no-effect-deepseek-v4", 54),
    ("env-balance-scheduling-ignored", 55),
    ("max-model-len-unproven", 82),
    ("graph-capture-size-unreachable", 144),
    # --safetensors-load-strategy prefetch beside enable_multithread_load: no effect here.
    ("load-strategy-with-multithread-load", 115),
    # No --host (every interface), host networking, no key: the `vllm serve` line.
    ("endpoint-without-api-key", 78),
    # Writable mounts of what the engine only reads: the weights (/models holds the model
    # the command serves from /workspace), the driver, DCMI and npu-smi. Not /root/.cache.
    ("writable-host-mount", 66),
    ("writable-host-mount", 68),
    ("writable-host-mount", 70),
    ("writable-host-mount", 72),
}


def ids(findings) -> set[tuple[str, int]]:
    return {(f.rule_id, f.line) for f in findings}


def variant(tmp_path: Path, text: str, old: str, new: str, name: str = "compose.yaml") -> Path:
    assert old in text, f"test setup: {old!r} is not in the guide"
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def test_guide_reports_exactly_its_known_findings() -> None:
    assert ids(check_file(GUIDE)) == GUIDE_FINDINGS


def test_guide_findings_carry_the_fix() -> None:
    by_rule = {f.rule_id: f for f in check_file(GUIDE)}
    assert by_rule["jemalloc-path-mismatch"].fix == (
        'LD_PRELOAD: "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"'
    )
    assert "enable_balance_scheduling" in by_rule["env-balance-scheduling-ignored"].fix
    assert "40..8192" in by_rule["graph-capture-size-unreachable"].message
    assert "133120" in by_rule["max-model-len-unproven"].fix
    assert by_rule["env-balance-scheduling-ignored"].severity is Severity.ERROR


@pytest.mark.parametrize(
    ("old", "new", "gone"),
    [
        (
            "/usr/lib64/libjemalloc.so.2",
            "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
            "jemalloc-path-mismatch",
        ),
        (
            'VLLM_ASCEND_BALANCE_SCHEDULING: "1"',
            'VLLM_ASCEND_BALANCE_SCHEDULING: "0"',
            "env-balance-scheduling-ignored",
        ),
        ('- "16"', '- "4096"', "graph-capture-size-unreachable"),
        ('- "1048576"', '- "133120"', "max-model-len-unproven"),
        (
            'PYTHONHASHSEED: "0"',
            'PYTHONHASHSEED: "0"\n      VLLM_API_KEY: "${OPENAI_API_KEY:?}"',
            "endpoint-without-api-key",
        ),
        (
            "      - --port",
            "      - --host\n      - 127.0.0.1\n      - --port",
            "endpoint-without-api-key",
        ),
    ],
)
def test_fixing_a_setting_clears_only_its_finding(tmp_path, guide_text, old, new, gone) -> None:
    found = ids(check_file(variant(tmp_path, guide_text, old, new)))
    assert {rule for rule, _ in found} == {rule for rule, _ in GUIDE_FINDINGS} - {gone}


def test_openeuler_image_takes_the_lib64_path(tmp_path, guide_text) -> None:
    path = variant(
        tmp_path, guide_text, "vllm-ascend:v0.22.1rc1", "vllm-ascend:v0.22.1rc1-openeuler"
    )
    assert "jemalloc-path-mismatch" not in {f.rule_id for f in check_file(path)}


ADDITIONAL = '"enable_cpu_binding":true,"enable_dsa_cp":false'


@pytest.mark.parametrize(
    ("old", "new", "rule", "severity", "fix_part"),
    [
        (
            ADDITIONAL,
            '"enable_cpu_bindng":true,"enable_dsa_cp":false',
            "additional-config-unknown-key",
            Severity.ERROR,
            "enable_cpu_binding",
        ),
        (
            ADDITIONAL,
            '"enable_cpu_binding":true,"enable_dsa_cp":false,"no_such_thing":1',
            "additional-config-unknown-key",
            Severity.WARNING,
            "known_keys",
        ),
        (
            '"enable_static_kernel":true',
            '"enable_static_kernal":true',
            "additional-config-unknown-key",
            Severity.ERROR,
            "enable_static_kernel",
        ),
        (
            '"enable_dsa_cp":false',
            '"enable_dsa_cp":true',
            "dsa-cp-requires-flashcomm1",
            Severity.ERROR,
            "enable_flashcomm1",
        ),
        (
            '"enable_npugraph_ex":true',
            '"enable_npugraph_ex":false',
            "static-kernel-requires-npugraph-ex",
            Severity.ERROR,
            "enable_npugraph_ex",
        ),
        (
            '- "8"\n      - --enable-expert-parallel',
            '- "16"\n      - --enable-expert-parallel',
            "parallel-exceeds-node",
            Severity.ERROR,
            "tensor-parallel-size",
        ),
        (
            '- "1048576"',
            '- "2097152"',
            "max-model-len-beyond-documented",
            Severity.ERROR,
            "model's limit",
        ),
        (
            "      - --async-scheduling",
            "      - --async-schedule-it",
            "vllm-unknown-flag",
            Severity.ERROR,
            "--async-scheduling",
        ),
        (
            "    tty: true",
            "    tty: true\n    privileged: true",
            "privileged-container",
            Severity.WARNING,
            "davinci",
        ),
        (
            'PYTHONHASHSEED: "0"',
            'PYTHONHASHSEED: "0"\n      HF_TOKEN: "hf_' + "x" * 34 + '"',
            "secret-in-file",
            Severity.ERROR,
            "${HF_TOKEN}",
        ),
        (
            "- /dev/davinci7:/dev/davinci7",
            "- /dev/davinci15:/dev/davinci15",
            "image-node-kind-mismatch",
            Severity.ERROR,
            "-a3",
        ),
    ],
)
def test_broken_variant_is_reported(tmp_path, guide_text, old, new, rule, severity, fix_part):
    findings = [f for f in check_file(variant(tmp_path, guide_text, old, new)) if f.rule_id == rule]
    assert len(findings) == 1, findings
    assert findings[0].severity is severity
    assert fix_part in findings[0].fix


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        (
            '"enable_dsa_cp":false',
            '"enable_dsa_cp":true,"enable_flashcomm1":true',
            "dsa-cp-requires-flashcomm1",
        ),
        (
            'PYTHONHASHSEED: "0"',
            'PYTHONHASHSEED: "0"\n      HF_TOKEN: "${HF_TOKEN}"',
            "secret-in-file",
        ),
    ],
    ids=["dsa-cp-with-flashcomm1", "secret-from-environment"],
)
def test_fixed_variant_is_clean(tmp_path, guide_text, old, new, rule) -> None:
    path = variant(tmp_path, guide_text, old, new)
    assert rule not in {f.rule_id for f in check_file(path)}


def test_endpoint_on_all_interfaces_names_the_host(tmp_path, guide_text) -> None:
    path = variant(
        tmp_path, guide_text, "      - --port", "      - --host\n      - 0.0.0.0\n      - --port"
    )
    (finding,) = [f for f in check_file(path) if f.rule_id == "endpoint-without-api-key"]
    assert finding.message.startswith("--host 0.0.0.0 and no API key")
    assert "VLLM_API_KEY" in finding.fix


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("    tty: true", "    tty: true\n    sysctls:\n      net.core.somaxconn: 1024", "sysctls"),
        (
            "    command:\n",
            "    entrypoint: [bash, -c, 'sysctl -w vm.swappiness=0 && exec \"$$@\"', --]\n"
            "    command:\n",
            "sysctl",
        ),
    ],
    ids=["sysctls-key", "sysctl-in-entrypoint"],
)
def test_kernel_tuning_in_the_container_is_reported(
    tmp_path, guide_text, old, new, changed
) -> None:
    path = variant(tmp_path, guide_text, old, new)
    (finding,) = [f for f in check_file(path) if f.rule_id == "kernel-tuning-in-container"]
    assert f"changes `{changed}`" in finding.message
    assert "on the host" in finding.fix


def test_map_fewer_devices_than_tp(tmp_path, guide_text) -> None:
    path = variant(tmp_path, guide_text, "      - /dev/davinci7:/dev/davinci7\n", "")
    found = [f for f in check_file(path) if f.rule_id == "parallel-exceeds-node"]
    assert len(found) == 1 and "maps 7 davinci devices" in found[0].message


def test_max_model_len_above_config_json(tmp_path, guide_text) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text(json.dumps({"max_position_embeddings": 65536}))
    path = variant(tmp_path, guide_text, "- /workspace/DeepSeek-V4-Flash-w8a8-mtp", f"- {weights}")
    found = [f for f in check_file(path) if f.rule_id == "max-model-len-beyond-documented"]
    assert len(found) == 1 and "max_position_embeddings 65536" in found[0].message


def test_image_of_a_release_without_rules(tmp_path, guide_text) -> None:
    path = variant(tmp_path, guide_text, "vllm-ascend:v0.22.1rc1", "vllm-ascend:v9.9.9")
    report = check_paths([path])
    assert report.checked == 0 and report.findings == []
    assert report.unreadable[0].startswith(f"{path}:8: image quay.io/ascend/vllm-ascend:v9.9.9")


def test_serve_yaml() -> None:
    found = {(f.rule_id, f.line, f.severity) for f in check_file(DATA / "broken-serve.yaml")}
    assert found == {
        ("parallel-exceeds-node", 12, Severity.ERROR),
        ("vllm-unknown-flag", 13, Severity.ERROR),
        ("static-kernel-requires-npugraph-ex", 17, Severity.ERROR),
    }


def test_command_line() -> None:
    found = {(f.rule_id, f.line) for f in check_file(DATA / "broken-serve.sh")}
    assert found == {
        ("env-flashcomm1-deprecated", 3),
        # `vllm serve` without --host or a key.
        ("endpoint-without-api-key", 4),
        ("vllm-unknown-flag", 6),
        ("vllm-invalid-value", 7),
    }
    findings = check_file(DATA / "broken-serve.sh")
    unknown = next(f for f in findings if f.rule_id == "vllm-unknown-flag")
    assert "--enable-prefix-caching" in unknown.fix


def test_python_recipe() -> None:
    # Judged by v0.22.1rc1's rules, where the balance-scheduling variable does nothing.
    found = {
        (f.rule_id, f.line, f.severity)
        for f in check_file(DATA / "broken-recipe.py", release="v0.22.1rc1")
    }
    assert found == {
        ("dsa-cp-requires-flashcomm1", 13, Severity.ERROR),
        ("additional-config-unknown-key", 14, Severity.ERROR),
        ("env-balance-scheduling-ignored", 17, Severity.ERROR),
    }


def test_a_recipe_without_an_image_is_judged_by_the_ray_serve_llm_release() -> None:
    # At v0.25.1rc1 the variable reaches the scheduler, so the same line is a warning.
    found = {(f.rule_id, f.severity) for f in check_file(DATA / "broken-recipe.py")}
    assert SERVE_LLM_RELEASE.tag == "v0.25.1rc1"
    assert ("env-balance-scheduling-ignored", Severity.WARNING) in found


def test_clean_python_recipe(tmp_path) -> None:
    text = (DATA / "broken-recipe.py").read_text()
    text = (
        text.replace('"enable_cpu_bindng"', '"enable_cpu_binding"')
        .replace('"enable_dsa_cp": True', '"enable_dsa_cp": False')
        .replace('"VLLM_ASCEND_BALANCE_SCHEDULING": "1"', '"OMP_NUM_THREADS": "1"')
    )
    path = tmp_path / "recipe.py"
    path.write_text(text)
    assert check_file(path) == []


def test_markdown_dashboard_needs_a_warning() -> None:
    assert ids(check_file(DATA / "dashboard-page.md")) == {("ray-bound-to-all-interfaces", 4)}
    assert check_file(DATA / "dashboard-page-warned.md") == []


def test_without_the_check_extra_the_command_names_it(monkeypatch, capsys) -> None:
    import importlib.metadata

    def version(name: str) -> str:
        if name == "jsonschema":
            raise importlib.metadata.PackageNotFoundError(name)
        return "99"

    monkeypatch.setattr(
        importlib.metadata,
        "requires",
        lambda _: ['jsonschema>=4.18; extra == "check"', "pydantic>=2", 'pytest; extra == "test"'],
    )
    monkeypatch.setattr(importlib.metadata, "version", version)

    from ray_serve_npu.cli import main as command

    assert command(["check", str(ROOT / "recipes" / "docker-compose.yaml")]) == 2
    error = capsys.readouterr().err
    assert "ray-serve-npu check: needs jsonschema, which the 'check' extra installs" in error
    assert "Fix: pip install 'ray-serve-npu[check]'" in error
    # Installed, the command runs.
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99")
    assert command(["check", str(ROOT / "recipes" / "docker-compose.yaml")]) == 0


def test_cli_exit_codes_and_formats(capsys) -> None:
    assert main([str(GUIDE)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(GUIDE_FINDINGS) + 1
    assert out[-1] == f"1 file(s) checked: {len(GUIDE_FINDINGS)} finding(s)"
    assert out[0].startswith(f"{GUIDE}:40: error jemalloc-path-mismatch: ")
    assert out[0].endswith('(fix: LD_PRELOAD: "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2")')

    assert main(["--format", "json", str(GUIDE)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {(f["rule_id"], f["line"]) for f in report["findings"]} == GUIDE_FINDINGS

    assert main([str(DATA / "dashboard-page.md")]) == 0  # warnings only
    assert main([str(DATA / "dashboard-page-warned.md")]) == 0
    assert main([str(DATA / "no-such-file.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["--release", "v0.0.0", str(GUIDE)]) == 2
    assert "release" in capsys.readouterr().err
    assert main([]) == 2


#: The recipe that serves vLLM-Ascend's CI runs as they are: the checker judges the CI's
#: own settings there (tests/check/test_ci_run_recipe.py), not the site's.
CI_RUN_RECIPE = ROOT / "recipes" / "serve_model.py"


def _recipes() -> list[Path]:
    found = []
    for folder in ("recipes", "examples"):
        if (ROOT / folder).is_dir():
            found += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".yaml"))
    return [path for path in found if path != CI_RUN_RECIPE]


@pytest.mark.parametrize("recipe", _recipes(), ids=str)
def test_every_recipe_is_clean(recipe: Path) -> None:
    assert check_paths([recipe]).findings == []


@pytest.mark.parametrize("release", available_releases())
def test_every_recipe_is_clean_under_every_supported_releases_rules(release: str) -> None:
    # The recipes' engine settings are those of every supported release's tutorial
    # (they differ only where the recipes correct the tutorial); the release decides the
    # image and the Ray, not the settings.
    recipes = _recipes()
    report = check_paths(recipes, release=release)
    assert report.findings == []
    # Every recipe was read, none left aside as unreadable.
    assert report.unreadable == [] and report.checked == len(recipes)


GUIDE_MOUNTS = (
    ("- /models:/workspace\n", "- /models:/workspace:ro\n"),
    (
        "- /usr/local/Ascend/driver:/usr/local/Ascend/driver\n",
        "- /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro\n",
    ),
    ("- /usr/local/dcmi:/usr/local/dcmi\n", "- /usr/local/dcmi:/usr/local/dcmi:ro\n"),
    (
        "- /usr/local/bin/npu-smi:/usr/local/bin/npu-smi\n",
        "- /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro\n",
    ),
)


def test_writable_mounts_name_what_the_engine_only_reads() -> None:
    found = {f.line: f for f in check_file(GUIDE) if f.rule_id == "writable-host-mount"}
    assert found[66].message.startswith(
        "/workspace, which holds the weights /workspace/DeepSeek-V4-Flash-w8a8-mtp, "
        "is mounted writable: "
    )
    assert found[68].message.startswith("/usr/local/Ascend/driver is mounted writable: ")
    assert all(":ro" in f.fix and f.severity is Severity.WARNING for f in found.values())


def test_read_only_mounts_are_clean(tmp_path, guide_text) -> None:
    for old, new in GUIDE_MOUNTS:
        assert old in guide_text, old
        guide_text = guide_text.replace(old, new)
    path = tmp_path / "compose.yaml"
    path.write_text(guide_text)
    assert "writable-host-mount" not in {f.rule_id for f in check_file(path)}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Compose's long syntax.
        (
            "- /usr/local/dcmi:/usr/local/dcmi\n",
            "- {type: bind, source: /usr/local/dcmi, target: /usr/local/dcmi, read_only: true}\n",
        ),
        # A read-only mount of the weights inside the writable /workspace mount.
        (
            "- /models:/workspace\n",
            "- /models:/workspace\n"
            "      - /models/DeepSeek-V4-Flash-w8a8-mtp:/workspace/DeepSeek-V4-Flash-w8a8-mtp:ro\n",
        ),
    ],
    ids=["long-syntax-read-only", "weights-mounted-read-only-below"],
)
def test_one_read_only_mount_clears_its_line(tmp_path, guide_text, old, new) -> None:
    line = line_of(guide_text, old)
    found = ids(check_file(variant(tmp_path, guide_text, old, new)))
    assert ("writable-host-mount", line) not in found
    assert len({n for rule, n in found if rule == "writable-host-mount"}) == 3


@pytest.mark.parametrize(
    ("mount", "holds"),
    [
        ("/usr/local/Ascend:/usr/local/Ascend", "/usr/local/Ascend/driver"),
        ("/:/host", "/usr/local/Ascend/driver"),
        # A container path above a protected one: the protected files are below it there.
        ("/srv/etc:/etc", "/etc/ascend_install.info"),
    ],
    ids=["ascend-parent", "host-root", "target-parent"],
)
def test_a_writable_mount_above_what_the_engine_only_reads(
    tmp_path, guide_text, mount, holds
) -> None:
    old = "- /usr/local/dcmi:/usr/local/dcmi\n"
    line = line_of(guide_text, old)
    path = variant(
        tmp_path, guide_text, old, f"- /usr/local/dcmi:/usr/local/dcmi:ro\n      - {mount}\n"
    )
    (finding,) = [
        f for f in check_file(path) if f.rule_id == "writable-host-mount" and f.line == line + 1
    ]
    target = mount.rsplit(":", 1)[1]
    assert finding.message.startswith(f"{target} is mounted writable and holds {holds}: ")
    path.write_text(path.read_text().replace(f"- {mount}\n", f"- {mount}:ro\n"))
    assert line + 1 not in {f.line for f in check_file(path) if f.rule_id == "writable-host-mount"}


DOCKER_RUN = """#!/bin/bash
docker run --rm -it --device /dev/davinci0 \\
  -v /usr/local/dcmi:/usr/local/dcmi{dcmi} \\
  --mount type=bind,source=/usr/local/Ascend/driver,target=/usr/local/Ascend/driver{driver} \\
  -v /root/.cache:/root/.cache \\
  -v "$MODEL_PATH":/models/m:ro \\
  quay.io/ascend/vllm-ascend:v0.22.1rc1 vllm serve /models/m --host 127.0.0.1
"""


@pytest.mark.parametrize(
    ("dcmi", "driver", "lines"),
    [("", "", {3, 4}), (":ro", ",readonly", set()), (":ro,z", ",readonly=false", {4})],
)
def test_writable_mounts_of_a_docker_run(tmp_path, dcmi, driver, lines) -> None:
    script = tmp_path / "run.sh"
    script.write_text(DOCKER_RUN.format(dcmi=dcmi, driver=driver))
    assert {n for rule, n in ids(check_file(script)) if rule == "writable-host-mount"} == lines


API_KEY_PAGE = """# Serve with a key

```bash
export VLLM_API_KEY
vllm serve /models/Qwen3-8B --host 127.0.0.1 --api-key {key}
```
"""


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("sk-123", "holds a literal value"),
        ("'my key'", "holds a literal value"),
        # The shell (or Compose) puts the value itself on vLLM's command line, where `ps`
        # and `docker inspect` show it; vLLM reads VLLM_API_KEY from its environment.
        ('"$VLLM_API_KEY"', "puts the secret on the command line"),
        ("${VLLM_API_KEY}", "puts the secret on the command line"),
    ],
)
def test_any_api_key_on_a_command_line(tmp_path, key, why) -> None:
    page = tmp_path / "page.md"
    page.write_text(API_KEY_PAGE.format(key=key))
    found = [f for f in check_file(page) if f.rule_id == "secret-in-file"]
    assert [(f.line, f.message.split(":")[0]) for f in found] == [(5, f"`--api-key` {why}")]
    assert "set VLLM_API_KEY in the environment" in found[0].fix


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("${HF_TOKEN}", False),
        ("$HF_TOKEN", False),
        ("${HF_TOKEN:?set HF_TOKEN}", False),
        ("${HF_TOKEN?}", False),
        ("${HF_TOKEN:-}", False),
        ("${HF_TOKEN:-${OTHER_TOKEN}}", False),
        # A default or alternative is a literal written into the file.
        ("${HF_TOKEN:-mysecretdefault}", True),
        ("${HF_TOKEN-literal}", True),
        ("${HF_TOKEN:+literal}", True),
        # Compose reads `$$` as one literal `$`.
        ("$$literal", True),
        ("plain", True),
    ],
)
def test_compose_interpolation_of_a_secret(tmp_path, guide_text, value, secret) -> None:
    path = variant(
        tmp_path,
        guide_text,
        'PYTHONHASHSEED: "0"',
        f'PYTHONHASHSEED: "0"\n      HF_TOKEN: "{value}"',
    )
    found = [f.message for f in check_file(path) if f.rule_id == "secret-in-file"]
    assert found == (
        ["HF_TOKEN holds a literal value: " + found[0].split(": ", 1)[1]] if secret else []
    )


def test_literal_api_key_in_compose(tmp_path, guide_text) -> None:
    path = variant(
        tmp_path, guide_text, "      - --port", "      - --api-key=sk-123\n      - --port"
    )
    (finding,) = [f for f in check_file(path) if f.rule_id == "secret-in-file"]
    assert finding.line == line_of(guide_text, "      - --port")
    assert "VLLM_API_KEY" in finding.fix


def test_setting_names_that_only_contain_token_are_not_secrets(tmp_path, guide_text) -> None:
    path = variant(
        tmp_path,
        guide_text,
        'PYTHONHASHSEED: "0"',
        'PYTHONHASHSEED: "0"\n      TOKENIZERS_PARALLELISM: "false"',
    )
    assert "secret-in-file" not in {f.rule_id for f in check_file(path)}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING": "1"}, {("direct-streaming-without-haproxy", 3)}),
        ({"RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING": "1", "RAY_SERVE_ENABLE_HA_PROXY": "1"}, set()),
        # Ray reads exactly "1": "true" turns neither on.
        ({"RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING": "true"}, set()),
        (
            {"RAY_SERVE_ENABLE_HA_PROXY": "1", "RAY_SERVE_NPU_DISABLE": "1"},
            {("haproxy-side-ports-open", 3)},
        ),
        ({"RAY_SERVE_ENABLE_HA_PROXY": "1", "RAY_SERVE_NPU_DISABLE": "0"}, set()),
    ],
    ids=["streaming-alone", "streaming-with-haproxy", "not-1", "haproxy-plugin-off", "plugin-on"],
)
def test_the_fast_paths_needs_are_checked_in_an_image(
    tmp_path: Path, env: dict[str, str], expected: set[tuple[str, int]]
) -> None:
    dockerfile = tmp_path / "Dockerfile"
    lines = [f"ENV {name}={value}" for name, value in env.items()]
    dockerfile.write_text("\n".join(["FROM quay.io/ascend/vllm-ascend:v0.25.1rc1", "", *lines]))
    rules = {"direct-streaming-without-haproxy", "haproxy-side-ports-open"}

    found = {(f.rule_id, f.line) for f in check_file(dockerfile) if f.rule_id in rules}

    assert found == expected
