"""Link the pages' upstream sources to the files at the tags the pages pin.

Three roles cite a file of an upstream repository:

- ``{vllm-ascend}`vllm_ascend/utils.py``` at vLLM-Ascend's tag (``compat.VLLM_ASCEND.tag``);
- ``{vllm}`vllm/config/cache.py``` at the vLLM that release carries (``compat.VLLM_ASCEND.vllm``);
- ``{ray}`ray/serve/config.py``` at the Ray the recipes install beside it
  (``compat.VLLM_ASCEND.ray``). A path that starts with ``ray/`` is the file as the
  wheel installs it, which lives under ``python/`` in the repository.

A citation is ``path``, optionally followed by ``@version`` for another release than
the pinned one (``ray/serve/_private/utils.py@2.60.0``) and by a line anchor
(``#L245`` or ``#L245-L250``), and may carry its own text: ``text <path>``. A path
that ends with ``/`` is a directory.

No network is needed to check a citation: ``docs/_data/upstream/<role>@<tag>.txt.gz``
lists every file of the repository at that tag, built by ``tools/upstream_paths.py``.
A path missing from the list, a tag without a list, or a citation that can't be
read fails the build (a warning, and the build runs with ``-W``), naming the page,
the line and the fix. ``tests/docs/test_upstream_links.py`` checks the pages and
catalogues the same way without building them.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxRole

from ray_serve_npu import compat

logger = logging.getLogger(__name__)

#: The stored file lists, one per repository and tag.
DATA = Path(__file__).resolve().parent.parent / "_data" / "upstream"
GENERATOR = "tools/upstream_paths.py"


@dataclass(frozen=True)
class Upstream:
    """A repository the pages cite, and the release they cite it at."""

    role: str
    repository: str
    #: Git tag of a release: ``tag_format.format(version)``.
    tag_format: str
    #: The release a citation without ``@version`` points at.
    pinned: str
    #: A path that starts with ``package`` is the installed file, found in the
    #: repository under ``source_root``.
    package: str = ""
    source_root: str = ""

    def tag(self, version: str | None = None) -> str:
        return self.tag_format.format(version or self.pinned)

    def repository_path(self, path: str) -> str:
        if self.package and path.startswith(self.package):
            return self.source_root + path
        return path

    def version(self, tag: str) -> str | None:
        """The release of a tag (``ray-2.60.0`` -> ``2.60.0``), None for another ref."""
        prefix, _, suffix = self.tag_format.partition("{}")
        if tag.startswith(prefix) and tag.endswith(suffix) and len(tag) > len(prefix + suffix):
            return tag[len(prefix) : len(tag) - len(suffix)]
        return None

    def list_file(self, tag: str) -> Path:
        return DATA / f"{self.role}@{tag}.txt.gz"


UPSTREAMS: dict[str, Upstream] = {
    upstream.role: upstream
    for upstream in (
        Upstream("vllm-ascend", "vllm-project/vllm-ascend", "{}", compat.VLLM_ASCEND.tag),
        Upstream("vllm", "vllm-project/vllm", "v{}", compat.VLLM_ASCEND.vllm),
        Upstream(
            "ray",
            "ray-project/ray",
            "ray-{}",
            compat.VLLM_ASCEND.ray,
            package="ray/",
            source_root="python/",
        ),
    )
}

#: ``{role}`content``` in a page's Markdown or a catalogue's message.
CITATION = re.compile(r"\{(" + "|".join(map(re.escape, UPSTREAMS)) + r")\}`([^`]+)`")

_TARGET = re.compile(
    r"(?P<path>[^\s@#<>]+?)(?:@(?P<version>[^\s@#<>]+))?"
    r"(?:#L(?P<start>\d+)(?:-L(?P<end>\d+))?)?"
)
_TITLED = re.compile(r"(?P<title>.*\S)\s*<(?P<target>[^<>]+)>", re.DOTALL)
FORMS = "`path`, `path#L10`, `path#L10-L20`, `path@version` or `text <path>`"


class CitationError(ValueError):
    """A citation that can't be read or names a file the tag doesn't have."""


@dataclass(frozen=True)
class Link:
    """Where one citation points."""

    text: str
    titled: bool
    url: str
    repository: str
    tag: str


@cache
def stored_paths(role: str, tag: str) -> frozenset[str] | None:
    """The paths of ``role``'s repository at ``tag``, or None where no list is stored."""
    listing = UPSTREAMS[role].list_file(tag)
    if not listing.exists():
        return None
    lines = gzip.decompress(listing.read_bytes()).decode().splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


def resolve(role: str, content: str) -> Link:
    """Return the link for ``{role}`content```; raise :class:`CitationError` with the fix."""
    upstream = UPSTREAMS[role]
    titled = _TITLED.fullmatch(content)
    target = (titled.group("target") if titled else content).strip()
    found = _TARGET.fullmatch(target)
    if (
        found is None
        or (found.group("end") and int(found.group("end")) < int(found.group("start")))
        or (found.group("path").endswith("/") and found.group("start"))
    ):
        raise CitationError(f"can't read the citation {{{role}}}`{content}`: write {FORMS}")
    path = found.group("path")
    tag = upstream.tag(found.group("version"))
    source = upstream.repository_path(path)
    paths = stored_paths(role, tag)
    listing = upstream.list_file(tag).relative_to(DATA.parent.parent.parent)
    if paths is None:
        raise CitationError(
            f"{{{role}}}`{content}`: no file list of {upstream.repository} at {tag} "
            f"({listing}). Cite a release that has one, or build it with {GENERATOR} "
            f"({role}, version {found.group('version') or upstream.pinned})."
        )
    directory = source.endswith("/")
    exists = any(p.startswith(source) for p in paths) if directory else source in paths
    if not exists:
        shown = path if source == path else f"{path} ({source} in the repository)"
        coverage = ""
        if upstream.package and not source.startswith(upstream.source_root + upstream.package):
            coverage = (
                f" The list holds only {upstream.source_root}{upstream.package}, from the "
                "wheel; cite a file there."
            )
        raise CitationError(
            f"{{{role}}}`{content}`: {shown} does not exist in {upstream.repository} at {tag} "
            f"({listing}). Correct the path, or cite the release that has the file with "
            f"`{path}@<version>`.{coverage}"
        )
    anchor = ""
    if found.group("start"):
        anchor = f"#L{found.group('start')}"
        if found.group("end"):
            anchor += f"-L{found.group('end')}"
    return Link(
        text=titled.group("title") if titled else path,
        titled=titled is not None,
        url=f"https://github.com/{upstream.repository}/{'tree' if directory else 'blob'}/"
        f"{tag}/{source.rstrip('/')}{anchor}",
        repository=upstream.repository,
        tag=tag,
    )


def role_for(
    repository: str, ref: str, path: str, lines: str | None = None, title: str = ""
) -> str | None:
    """The citation markup for ``path`` of ``repository`` at ``ref`` (``lines`` such as
    ``"27-325, 493-542"`` anchor the first range; ``title`` is the text shown), or None
    where no stored list holds it."""
    upstream = next((u for u in UPSTREAMS.values() if u.repository == repository), None)
    version = upstream.version(ref) if upstream else None
    if upstream is None or version is None:
        return None
    if upstream.package and path.startswith(upstream.source_root + upstream.package):
        path = path[len(upstream.source_root) :]
    target = path if version == upstream.pinned else f"{path}@{version}"
    first = re.match(r"\s*(\d+)(?:-(\d+))?", lines or "")
    if first:
        target += f"#L{first.group(1)}" + (f"-L{first.group(2)}" if first.group(2) else "")
    try:
        resolve(upstream.role, target)
    except CitationError:
        return None
    return f"{{{upstream.role}}}`{title} <{target}>`" if title else f"{{{upstream.role}}}`{target}`"


def citations(text: str) -> list[tuple[int, str, str]]:
    """Every ``(line, role, content)`` cited in ``text``, lines counted from 1."""
    return [
        (text.count("\n", 0, found.start()) + 1, found.group(1), found.group(2))
        for found in CITATION.finditer(text)
    ]


def source_text(source: Path) -> str:
    """A page's text, or a catalogue's with its comments blanked (obsolete and previous
    messages are no longer built), lines kept where they are."""
    text = source.read_text()
    if source.suffix != ".po":
        return text
    return "".join(
        "\n" if line.startswith("#") else line for line in text.splitlines(keepends=True)
    )


def check_text(text: str) -> list[tuple[int, str]]:
    """``(line, problem)`` for every citation in ``text`` that fails."""
    problems = []
    for line, role, content in citations(text):
        try:
            resolve(role, content)
        except CitationError as error:
            problems.append((line, str(error)))
    return problems


class UpstreamRole(SphinxRole):
    """``{vllm-ascend}`path```, ``{vllm}`path``` and ``{ray}`path```."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            link = resolve(self.name, self.text)
        except CitationError as error:
            logger.warning(
                "%s", error, location=self.get_location(), type="upstream", subtype="citation"
            )
            return [nodes.literal(self.rawtext, self.text)], []
        label: nodes.Node = (
            nodes.Text(link.text) if link.titled else nodes.literal(link.text, link.text)
        )
        reference = nodes.reference(
            self.rawtext,
            "",
            label,
            refuri=link.url,
            reftitle=f"{link.repository} at {link.tag}",
            classes=["upstream-source"],
        )
        return [reference], []


def setup(app: Sphinx) -> dict[str, Any]:
    for role in UPSTREAMS:
        app.add_role(role, UpstreamRole())  # one instance per role
    return {"parallel_read_safe": True, "parallel_write_safe": True}
