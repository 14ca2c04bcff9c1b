"""The pages' upstream sources: links at the pinned tags, each path present at its tag.

docs/_ext/upstream_links.py resolves ``{vllm-ascend}``, ``{vllm}`` and ``{ray}``
citations against the file lists in docs/_data/upstream/ (built by
tools/upstream_paths.py), so these tests need no network.
"""

from __future__ import annotations

import importlib.util
import io
import re
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from upstream_links import (  # noqa: E402
    UPSTREAMS,
    CitationError,
    check_text,
    citations,
    resolve,
    source_text,
)

from ray_serve_npu import compat  # noqa: E402

SOURCES = sorted(DOCS.glob("*.md")) + sorted(DOCS.glob("locale/*/LC_MESSAGES/*.po"))
#: A link that writes an upstream tag by hand instead of citing through a role.
HAND_WRITTEN_LINK = re.compile(
    r"https://github\.com/(vllm-project/vllm-ascend|vllm-project/vllm|ray-project/ray)/(blob|tree)/"
)
#: An upstream path in plain inline code, with no role to link it.
BARE_PATH = re.compile(
    r"(?<![`}\[])`((?:vllm_ascend|vllm|python/ray|ray|docs/source|tests/e2e)/[^`\s]*\.\w+)`"
)


def _generator():
    spec = importlib.util.spec_from_file_location(
        "upstream_paths", ROOT / "tools/upstream_paths.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_cite_upstream_sources() -> None:
    cited = [citation for source in SOURCES for citation in citations(source_text(source))]
    assert {role for _, role, _ in cited} == set(UPSTREAMS)


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: str(path.relative_to(DOCS)))
def test_every_cited_path_exists_at_its_tag(source: Path) -> None:
    problems = [
        f"{source.relative_to(ROOT)}:{line}: {problem}"
        for line, problem in check_text(source_text(source))
    ]
    assert problems == []


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: str(path.relative_to(DOCS)))
def test_upstream_sources_are_cited_through_the_roles(source: Path) -> None:
    text = source_text(source)
    found = [
        f"{source.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for pattern in (HAND_WRITTEN_LINK, BARE_PATH)
        for match in pattern.finditer(text)
    ]
    assert found == [], (
        "cite upstream files with {vllm-ascend}`path`, {vllm}`path` or {ray}`path` "
        "(docs/_ext/upstream_links.py), which link them at the pinned tag"
    )


def test_each_pinned_release_has_a_stored_list() -> None:
    for upstream in UPSTREAMS.values():
        assert upstream.list_file(upstream.tag()).exists(), upstream


def test_the_pins_come_from_compat() -> None:
    assert UPSTREAMS["vllm-ascend"].tag() == compat.VLLM_ASCEND.tag
    assert UPSTREAMS["vllm"].tag() == f"v{compat.VLLM_ASCEND.vllm}"
    assert UPSTREAMS["ray"].tag() == f"ray-{compat.VLLM_ASCEND.ray}"


@pytest.mark.parametrize(
    ("role", "content", "url", "text"),
    [
        (
            "vllm-ascend",
            "vllm_ascend/utils.py",
            f"https://github.com/vllm-project/vllm-ascend/blob/{compat.VLLM_ASCEND.tag}/vllm_ascend/utils.py",
            "vllm_ascend/utils.py",
        ),
        (
            "ray",
            "ray/serve/config.py#L10-L12",
            f"https://github.com/ray-project/ray/blob/ray-{compat.VLLM_ASCEND.ray}/python/ray/serve/config.py#L10-L12",
            "ray/serve/config.py",
        ),
        (
            "ray",
            "ray/serve/scripts.py@2.60.0#L245",
            "https://github.com/ray-project/ray/blob/ray-2.60.0/python/ray/serve/scripts.py#L245",
            "ray/serve/scripts.py",
        ),
        (
            "vllm",
            "the cache config <vllm/config/cache.py>",
            f"https://github.com/vllm-project/vllm/blob/v{compat.VLLM_ASCEND.vllm}/vllm/config/cache.py",
            "the cache config",
        ),
        (
            "ray",
            "ray/_private/authentication/",
            f"https://github.com/ray-project/ray/tree/ray-{compat.VLLM_ASCEND.ray}/python/ray/_private/authentication",
            "ray/_private/authentication/",
        ),
    ],
)
def test_a_citation_links_the_file_at_the_tag(role: str, content: str, url: str, text: str) -> None:
    link = resolve(role, content)
    assert (link.url, link.text) == (url, text)


@pytest.mark.parametrize(
    ("role", "content", "problem"),
    [
        (
            "vllm-ascend",
            "vllm_ascend/no_such_module.py",
            f"vllm_ascend/no_such_module.py does not exist in vllm-project/vllm-ascend at "
            f"{compat.VLLM_ASCEND.tag} "
            f"(docs/_data/upstream/vllm-ascend@{compat.VLLM_ASCEND.tag}.txt.gz). "
            "Correct the path, or cite the release that has the file",
        ),
        (
            "ray",
            "ray/serve/no_such_module.py",
            "ray/serve/no_such_module.py (python/ray/serve/no_such_module.py in the repository) "
            "does not exist in ray-project/ray",
        ),
        ("ray", "ray/serve/config.py@2.10.0", "no file list of ray-project/ray at ray-2.10.0"),
        ("vllm", "vllm/config/cache.py#L", "can't read the citation"),
        ("vllm", "vllm/config/#L3", "can't read the citation"),
        ("vllm", "vllm/config/cache.py#L9-L3", "can't read the citation"),
    ],
)
def test_a_bad_citation_is_named_with_its_fix(role: str, content: str, problem: str) -> None:
    with pytest.raises(CitationError, match=re.escape(problem)):
        resolve(role, content)


def test_a_path_missing_at_the_tag_fails_the_page_check() -> None:
    page = (DOCS / "tuning.md").read_text()
    cited = "{vllm-ascend}`vllm_ascend/ascend_config.py`"
    assert cited in page
    planted = page.replace(cited, "{vllm-ascend}`vllm_ascend/ascend_configs.py`", 1)
    line = planted[: planted.index("ascend_configs.py")].count("\n") + 1

    assert [
        (found_line, "ascend_configs.py does not exist" in problem)
        for found_line, problem in check_text(planted)
    ] == [(line, True)]


def test_a_path_missing_at_the_tag_fails_the_build(tmp_path: Path) -> None:
    """The extension itself: a Sphinx build with -W stops, naming page, line and the fix."""
    (tmp_path / "conf.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(ROOT / "src")!r})
            sys.path.insert(0, {str(DOCS / "_ext")!r})
            extensions = ["myst_parser", "upstream_links"]
            """
        )
    )
    (tmp_path / "index.md").write_text(
        "# Page\n\nGood: {ray}`ray/serve/config.py`.\n\nBad: {vllm}`vllm/config/caches.py#L66`.\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "-q",
            "-b",
            "html",
            str(tmp_path),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "index.md:5" in done.stderr
    assert "vllm/config/caches.py does not exist in vllm-project/vllm at v" in done.stderr
    assert "Correct the path" in done.stderr


def test_the_generator_lists_a_source_archive_without_its_packaging(tmp_path: Path) -> None:
    archive = tmp_path / "vllm-0.0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in (
            "vllm-0.0.1/PKG-INFO",
            "vllm-0.0.1/vllm.egg-info/SOURCES.txt",
            "vllm-0.0.1/vllm/envs.py",
        ):
            data = b"x"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    paths, how = _generator().from_sdist(archive)
    assert paths == ["vllm/envs.py"]
    assert "sha256" in how


def test_the_generator_maps_a_wheel_to_the_repository(tmp_path: Path) -> None:
    record = tmp_path / "ray-0.0.1.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text(
        "\n".join(
            [
                "ray/serve/config.py,sha256=x,1",
                "ray/serve/__pycache__/config.cpython-311.pyc,,",
                "ray/core/generated/common_pb2.py,sha256=x,1",
                "ray/thirdparty_files/psutil/__init__.py,sha256=x,1",
                "ray/_raylet.so,sha256=x,1",
                "ray-0.0.1.dist-info/METADATA,sha256=x,1",
                "../../../bin/serve,sha256=x,1",
            ]
        )
    )
    paths, _ = _generator().from_wheel_record(record, "ray/", "python/")
    assert paths == ["python/ray/serve/config.py"]


def test_a_catalogue_is_read_without_its_obsolete_messages(tmp_path: Path) -> None:
    catalogue = tmp_path / "page.po"
    catalogue.write_text(
        '#~ msgid "`vllm_ascend/gone.py`"\n'
        '#| msgid "{vllm}`vllm/gone.py`"\n'
        'msgid "{vllm}`vllm/envs.py`"\n'
        'msgstr "{vllm}`vllm/envs.py`"\n'
    )
    assert citations(source_text(catalogue)) == [
        (3, "vllm", "vllm/envs.py"),
        (4, "vllm", "vllm/envs.py"),
    ]


def test_a_ray_path_outside_the_wheel_says_the_list_cannot_hold_it() -> None:
    with pytest.raises(CitationError, match=re.escape("The list holds only python/ray/")):
        resolve("ray", "doc/source/ray-security/index.md")


def _rule_sources() -> list[tuple[str, str, str, str]]:
    """(rule, role, ref, file) of every checker rule that cites a repository the roles know."""
    from ray_serve_npu.check.rules import available_releases, load_rules

    roles = {upstream.repository: upstream.role for upstream in UPSTREAMS.values()}
    return [
        (f"{release}:{rule.id}", roles[rule.source.repo], rule.source.ref, rule.source.file)
        for release in available_releases()
        for rule in load_rules(release).rules
        if rule.source.repo in roles
    ]


def test_the_checker_rules_cite_files_that_exist_at_their_tags() -> None:
    """Where a rule's source is at a tag with a stored list, the file is in it.

    Sources at a branch (``main``), at a release without a list, or in Ray outside the
    wheel's ``python/ray`` can't be checked offline and are left out.
    """
    problems, checked = [], 0
    for rule, role, ref, file in _rule_sources():
        upstream = UPSTREAMS[role]
        version = upstream.version(ref)
        if version is None or not upstream.list_file(ref).exists():
            continue
        if upstream.package and not upstream.repository_path(file).startswith(
            upstream.source_root + upstream.package
        ):
            continue
        checked += 1
        try:
            resolve(role, f"{file}@{version}")
        except CitationError as error:
            problems.append(f"{rule}: {error}")
    assert checked > 0
    assert problems == []
