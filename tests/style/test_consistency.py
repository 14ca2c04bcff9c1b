"""One setting, one story: the pages never describe a setting two ways.

Each test plants a contradiction in pages of its own and checks that the
checker names both claims with their lines; the site's own pages must have none.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.consistency import (
    check_pages,
    main,
    page_claims,
    page_paths,
    site_substitutions,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
NOSET = "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"


@pytest.fixture(scope="module")
def values() -> dict[str, str]:
    return site_substitutions(DOCS)


def _pages(tmp_path: Path, **pages: str) -> list[Path]:
    for name, text in pages.items():
        (tmp_path / f"{name}.md").write_text(text)
    return page_paths([tmp_path])


def _where(found: list, tmp_path: Path) -> list[tuple[str, str, tuple[tuple[str, int], ...]]]:
    return [
        (
            c.setting,
            c.why,
            tuple((claim.path.relative_to(tmp_path).as_posix(), claim.line) for claim in c.claims),
        )
        for c in found
    ]


def test_the_site_describes_each_setting_one_way(values: dict[str, str]) -> None:
    found = check_pages(page_paths([DOCS]), values)
    assert found == [], "\n".join(contradiction.format() for contradiction in found)


def test_a_page_that_says_do_not_set_against_a_page_that_exports(tmp_path: Path) -> None:
    paths = _pages(
        tmp_path,
        troubleshooting="# Fix it\n\nLeave it alone, and don't set `FOO_BAR`.\n",
        multinode="# Nodes\n\nOn every node:\n\n```bash\nexport FOO_BAR=1\nray start --head\n```\n",
    )
    assert _where(check_pages(paths), tmp_path) == [
        (
            "FOO_BAR",
            "one page says not to set it; another sets it",
            (("troubleshooting.md", 3), ("multinode.md", 6)),
        )
    ]


@pytest.mark.parametrize(
    "prohibition",
    [
        "Never set `FOO_BAR` by hand.",
        "Leave `FOO_BAR` unset.",
        "Leave `FOO_BAR` and `OTHER_VAR` out of the `runtime_env`.",
        "Don't set `FOO_BAR` or `OTHER_VAR` yourself: vLLM sets both.",
        "Set neither `OTHER_VAR` nor\n`FOO_BAR`, which Ray reads.",
    ],
)
def test_each_wording_of_do_not_set(tmp_path: Path, prohibition: str) -> None:
    paths = _pages(
        tmp_path,
        a=f"# A\n\n{prohibition}\n",
        b="# B\n\n```bash\ndocker run -e FOO_BAR=yes image\n```\n",
    )
    assert [c.setting for c in check_pages(paths)] == ["FOO_BAR"]


def test_a_prohibition_written_through_a_substitution(
    tmp_path: Path, values: dict[str, str]
) -> None:
    """The old troubleshooting page named the variable by substitution, the page on
    several nodes wrote it out; both are one variable."""
    paths = _pages(
        tmp_path,
        a="# A\n\nLeave it unset, and don't set `{{ noset_visible_devices_env }}`.\n",
        b=f"# B\n\n```bash\nexport {NOSET}=1\n```\n",
    )
    assert [c.setting for c in check_pages(paths, values)] == [NOSET]


def test_two_defaults_for_one_setting(tmp_path: Path) -> None:
    paths = _pages(
        tmp_path,
        tuning=(
            "# Tune\n\n`gpu_memory_utilization` / `--gpu-memory-utilization`: `0.9`\n"
            ": The fraction of memory vLLM plans for. vLLM's default is `0.92`.\n"
        ),
        faq="# FAQ\n\nThe flag `--gpu-memory-utilization` defaults to `0.9`.\n",
    )
    assert _where(check_pages(paths), tmp_path) == [
        (
            "gpu_memory_utilization",
            "two different defaults",
            (("faq.md", 3), ("tuning.md", 4)),
        )
    ]


def test_a_default_in_a_table_row(tmp_path: Path) -> None:
    paths = _pages(
        tmp_path,
        a=(
            "# A\n\n| Setting | Effect |\n| --- | --- |\n"
            "| `SOME_FLAG=1` | Nothing: the variable defaults to `1`. |\n"
        ),
        b="# B\n\n`SOME_FLAG`\n: Off unless set; `0` is the default.\n",
    )
    assert [(c.setting, c.why) for c in check_pages(paths)] == [
        ("SOME_FLAG", "two different defaults")
    ]


def test_one_variable_exported_with_two_values(tmp_path: Path) -> None:
    paths = _pages(
        tmp_path,
        a="# A\n\n```bash\nexport HCCL_BUFFSIZE=1024\n```\n",
        b="# B\n\n```bash\nHCCL_BUFFSIZE=512 python serve.py\n```\n",
    )
    assert [(c.setting, c.why) for c in check_pages(paths)] == [
        ("HCCL_BUFFSIZE", "set to different values on different pages")
    ]


def test_what_is_not_a_contradiction(tmp_path: Path) -> None:
    """The same value twice, a value read from another variable, and a variable
    that prose only mentions are all consistent."""
    paths = _pages(
        tmp_path,
        a=(
            "# A\n\n```bash\nexport RAY_AUTH_MODE=token\n"
            'API_KEY_X="$OPENAI_API_KEY" python x.py\n```\n'
        ),
        b=(
            "# B\n\n```bash\ndocker run -e RAY_AUTH_MODE=token image\n"
            "export API_KEY_X=abc\n```\n\n`VLLM_ASCEND_ENABLE_MLAPO=0` doesn't help.\n"
        ),
        c="# C\n\nSetting `VLLM_ASCEND_ENABLE_MLAPO=1` does nothing.\n",
    )
    assert check_pages(paths) == []


def test_a_planted_contradiction_in_the_site_fails_the_check(
    tmp_path: Path, values: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The contradiction issue 18 found: the page on several nodes exported the
    variable that the other pages say not to set."""
    site = tmp_path / "docs"
    shutil.copytree(DOCS, site, ignore=shutil.ignore_patterns("locale", "_build"))
    page = site / "multi-node.md"
    page.write_text(
        page.read_text().replace(
            'export TP_SOCKET_IFNAME="$NIC"\n',
            f'export TP_SOCKET_IFNAME="$NIC"\nexport {NOSET}=1\n',
            1,
        )
    )
    planted = [c for c in page_claims(page, values) if c.setting == NOSET]
    assert [(c.kind, c.value) for c in planted] == [("set", "1")]
    assert main([str(site), "--conf", str(DOCS)]) == 1
    out = capsys.readouterr().out
    assert f"{NOSET}: one page says not to set it; another sets it" in out
    assert f"multi-node.md:{planted[0].line}: sets {NOSET}=1" in out
    assert "troubleshooting.md:" in out and "npu-ascend.md:" in out
