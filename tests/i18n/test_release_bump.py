"""A release bump leaves the Chinese catalogues current.

The pages take every version, image tag and range from ``myst_substitutions``
(docs/conf.py, from ``ray_serve_npu.compat`` and ``hardware``). The messages the
gettext builder extracts keep the references (``{{ vllm_ascend_version }}``), in
prose, in inline code and in link targets alike, and the translated build fills
them in after translation; so a new value changes no message and orphans no
translation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from ray_serve_npu_tooling.docs.site import built

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Runs the gettext builder in a process of its own with every digit of every
#: substitution value moved on by one (``v0.22.1rc1`` becomes ``v1.33.2rc2``,
#: ``2.56.1`` becomes ``3.67.2``, an A2 node's ``8`` NPUs ``9``), as Sphinx's
#: ``confoverrides`` sets it: ``-D`` can't set a dict.
_GETTEXT_BUMPED = """
import re, runpy, sys
from pathlib import Path
from sphinx.application import Sphinx

docs, out = Path(sys.argv[1]), Path(sys.argv[2])
values = runpy.run_path(str(docs / "conf.py"))["myst_substitutions"]
step = lambda digit: str((int(digit.group(0)) + 1) % 10)
overrides = {
    "myst_substitutions": {
        name: re.sub("[0-9]", step, value) if isinstance(value, str) else value
        for name, value in values.items()
    }
}
app = Sphinx(docs, docs, out, out / ".doctrees", "gettext", confoverrides=overrides, status=None)
app.build()
sys.exit(app.statuscode)
"""

#: The substitutions whose values only the pinned release can mean; no message may
#: state them. (Plain numbers such as ``2.56.1`` also appear as facts read at that
#: version: "bisected with Ray 2.56.1"; the bump test covers those that come from a
#: substitution.)
_OWNED = (
    "vllm_ascend_version",
    "image_a2",
    "image_a3",
    "image_a2_openeuler",
    "compose_vllm_ascend_version",
    "compose_image_a2",
    "compose_image_a3",
    "compose_image_a2_openeuler",
    "supported_ray",
    "tested_ray",
)
#: A link's destination: a cited upstream file is read at its tag, and its line
#: numbers hold only there, so a bump re-reads it rather than moving it. A link
#: that should follow the pin writes its tag as ``{{name}}``
#: (docs/_ext/code_substitutions.py).
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
#: Each release's rules table (docs/checks.md includes it), generated from that
#: release's rule file: it stays, under its release's heading, when the pin moves on.
_PER_RELEASE = DOCS / "_generated" / "checker-rules.md"


def _extract_bumped(out: Path) -> dict[str, set[str]]:
    """Run the gettext builder with every release value bumped; each page's messages."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-c", _GETTEXT_BUMPED, str(DOCS), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return _messages(out)


def _messages(pot_dir: Path) -> dict[str, set[str]]:
    """Each page's messages, from the gettext builder's ``.pot`` files."""
    pages: dict[str, set[str]] = {}
    for pot in sorted(pot_dir.glob("*.pot")):
        with pot.open("rb") as stream:
            pages[pot.stem] = {message.id for message in read_po(stream) if message.id}
    return pages


@pytest.fixture(scope="module")
def messages() -> Iterator[dict[str, set[str]]]:
    """Each page's messages at the pinned release: the run's gettext build, which the
    translation check reads too (ray_serve_npu_tooling.docs.site.built)."""
    with built(DOCS, builder="gettext") as pot_dir:
        yield _messages(pot_dir)


@pytest.fixture(scope="module")
def substitutions() -> dict[str, str]:
    conf = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, runpy, sys; conf = runpy.run_path(sys.argv[1]); "
            "print(json.dumps(conf['myst_substitutions']))",
            str(DOCS / "conf.py"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(conf.stdout)


def test_a_release_bump_changes_no_message(messages: dict[str, set[str]], tmp_path: Path) -> None:
    bumped = _extract_bumped(tmp_path / "gettext")
    assert bumped.keys() == messages.keys()
    for page, found in messages.items():
        gone = sorted(found - bumped[page])
        assert not gone, f"{page}: messages that a new version would orphan:\n" + "\n".join(gone)


def test_no_message_states_the_pinned_release(
    messages: dict[str, set[str]], substitutions: dict[str, str]
) -> None:
    owned = {name: substitutions[name] for name in _OWNED}
    per_release = _PER_RELEASE.read_text()  # written by the build of ``messages``
    stated = [
        f"{page}: {value!r} ({{{{ {name} }}}}) in {message[:120]!r}"
        for page, found in messages.items()
        for message in found
        if message not in per_release
        for name, value in owned.items()
        if value in _LINK_TARGET.sub("", message)
    ]
    assert not stated, "write the reference, not its value:\n" + "\n".join(stated)


def test_code_fences_take_values_and_prose_after_a_directive_fence_keeps_references() -> None:
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from code_substitutions import substitute_code
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    page = (
        "```{literalinclude} ../recipes/kuberay/rayservice.yaml\n:language: yaml\n```\n\n"
        "The manifest names Ray {{ ray_version }}.\n\n"
        "```bash\npip install 'ray[serve]=={{ ray_version }}'\n```\n"
    )
    filled = substitute_code(page, {"ray_version": "2.56.1"})
    assert "The manifest names Ray {{ ray_version }}." in filled
    assert "pip install 'ray[serve]==2.56.1'" in filled


#: A page whose message holds a reference in inline code, in a link target and in prose,
#: and its translation, which keeps all three.
_PAGE = (
    "# Pins\n\n"
    "The recipes pin `{{ tag }}` ([its tree](https://example.org/tree/{{tag}}/)), Ray {{ ray }}.\n"
)
_TRANSLATION = (
    "部署方案固定使用 `{{ tag }}`（[它的源码树](https://example.org/tree/{{tag}}/)），"
    "Ray 为 {{ ray }}。"
)


def _chinese_page(project: Path, tag: str, ray: str) -> str:
    """Build a one-page site in Chinese with these values; return the page's HTML."""
    (project / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(DOCS / '_ext')!r})\n"
        "extensions = ['myst_parser', 'code_substitutions']\n"
        "myst_enable_extensions = ['substitution']\n"
        f"myst_substitutions = {{'tag': {tag!r}, 'ray': {ray!r}}}\n"
        "locale_dirs = ['locale/']\ngettext_compact = False\n"
    )
    out = project / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "-q", "-E", "-b", "html"]
    command += ["-D", "language=zh_CN", str(project), str(out)]
    subprocess.run(command, capture_output=True, text=True, check=True)
    return (out / "index.html").read_text()


def test_a_translation_that_keeps_the_references_takes_the_new_values(tmp_path: Path) -> None:
    (tmp_path / "index.md").write_text(_PAGE)
    catalog = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES"
    catalog.mkdir(parents=True)
    message = _PAGE.split("\n\n")[1].strip()
    (catalog / "index.po").write_text(
        f'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
        f"msgid {json.dumps(message)}\nmsgstr {json.dumps(_TRANSLATION, ensure_ascii=False)}\n"
    )
    for tag, ray in (("v0.22.1rc1", "2.56.1"), ("v0.25.1rc1", "2.57.1")):
        page = _chinese_page(tmp_path, tag, ray)
        assert "部署方案固定使用" in page
        assert f'<span class="pre">{tag}</span>' in page
        assert f'href="https://example.org/tree/{tag}/"' in page
        assert f"Ray 为 {ray}。" in page
        assert "{{" not in page and "%7B%7B" not in page
