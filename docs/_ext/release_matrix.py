"""The ``release-matrix`` directive: every supported vLLM-Ascend release and its paths;
``release-differences``: the DeepSeek-V4-Flash tutorial's settings that differ
between them; and ``ray-pairings``: each Ray, the vLLM its Serve LLM pins, the
releases that carry that vLLM, and which vLLMs it served beside when measured
(``nox -s pairings``, :mod:`ray_serve_npu.releases.pairings`).

One row per release data file (:mod:`ray_serve_npu.releases`): the vLLM, CANN and
torch_npu its images carry, its images per node kind, and for each path whether it
runs on the release. For Ray Serve LLM the release's pairing decides: the Ray the
data pairs with it, else the Rays measured serving beside its vLLM, else ``no Ray
pairs`` with the data's reason; each Ray measured beside its vLLM follows. Each
path's cell in the row of the release its recipes pin says so, with the reason
``paths.yaml`` gives. Nothing in the table is typed on a page, so a new
data file is a new row.

The fixed words are in the build's language (English, or Chinese for
``-D language=zh_CN``), as ``test_status`` does; the data's own sentences (a pairing's
reason, how a pair was installed...) through the edition's catalogue of them
(data_catalog, :func:`in_edition`), and a measured pair's first error verbatim. The
table's nodes carry no source, so the gettext builder extracts none of them: the
catalogues keep no version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from data_catalog import MissingTranslation, catalog_path, translator
from docutils import nodes
from editions import code_cell, edition_texts, table_frame
from packaging.version import Version
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from upstream_links import UPSTREAMS, resolve

from ray_serve_npu import compat
from ray_serve_npu.releases import (
    DATA_DIR,
    OPERATING_SYSTEMS,
    PATH_RELEASES,
    PATHS_FILE,
    RELEASES,
    UNREAD_FILE,
    UNREAD_RELEASES,
    PathReleases,
    Release,
    UnreadRelease,
    differing_settings,
    series,
)
from ray_serve_npu.releases.pairings import PAIRINGS_FILE, MeasuredPair, Pairings, pairings

#: Every fixed text of the table, per language; ``code`` in backticks.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "head_release": "vLLM-Ascend",
        "head_stack": "vLLM, CANN, torch_npu",
        "head_images": "Images per node kind",
        "head_serve_llm": "Ray Serve LLM",
        "head_compose": "`vllm serve` under Compose",
        "serve_llm_default": "The Ray Serve LLM recipes pin this release: {why}",
        "compose_default": "The Compose recipes pin this release: {why}",
        "stack": "vLLM {vllm}, CANN {cann}, torch_npu {torch_npu}",
        "read_in": "Read in {source}.",
        "scope": "Its release notes narrow its claim: {claim} (`{source}`)",
        "not_published": "{kind}: none published ({why})",
        "image_tags": "`{repository}`, tags:",
        "exact": "Supported with Ray {ray}: its Serve LLM pins this very vLLM.",
        "series": "Supported with Ray {ray}: its Serve LLM pins the same vLLM series.",
        "no_ray": "Not supported: no Ray pairs: {reason}",
        "measured_only": "No Ray pins this vLLM; Ray {rays} served it on the fake-NPU tier "
        "(vLLM's CPU build, not vLLM-Ascend), and the image build accepts it.",
        "compose": "Supported: `vllm serve` in the release's image, no Ray.",
        "rules": "`ray-serve-npu check` rules: `{rules}`.",
        "no_rules": "`ray-serve-npu check` has no rules for this release yet.",
        "sep": "; ",
        "head_kind": "Node kind",
        "head_setting": "Setting",
        "not_set": "not set",
        "tutorial_lines": "The tutorial's lines",
        "head_ray": "Ray",
        "head_pin": "vLLM its Serve LLM pins",
        "head_carried": "vLLM-Ascend releases with that vLLM",
        "head_measured": "Measured beside, on the fake-NPU tier",
        "carried_exact": "`{tag}` (vLLM {vllm})",
        "carried_series": "`{tag}` (vLLM {vllm}, same series)",
        "carried_none": "none",
        "measured_none": "not measured",
        "served": "{who}: serves ({date})",
        "stopped": "{who}: stops at {step} ({date}): `{error}`",
        "carried_by": " (`{tags}`)",
        "installed_head": "How each measured pair was installed",
        "pair": "ray {ray} beside vLLM {vllm}",
        "unread_head": "Newer releases, not supported: their files can't be read here",
        "head_month": "Published",
        "head_vllm": "vLLM",
        "head_unread": "Why not read, and the nearest candidate read",
        "vllm_source": "vLLM {vllm}: {source}",
        "unread": "Its files can't be read here: {why}.",
        "no_candidate": "No candidate of it is readable here.",
        "no_checker": "No image build, recipe or `ray-serve-npu check` rules for it.",
    },
    "zh_CN": {
        "head_release": "vLLM-Ascend",
        "head_stack": "vLLM、CANN、torch_npu",
        "head_images": "各节点类型的镜像",
        "head_serve_llm": "Ray Serve LLM",
        "head_compose": "Compose 下的 `vllm serve`",
        "serve_llm_default": "Ray Serve LLM 的配方使用此版本：{why}",
        "compose_default": "Compose 的配方使用此版本：{why}",
        "stack": "vLLM {vllm}，CANN {cann}，torch_npu {torch_npu}",
        "read_in": "读取自：{source}。",
        "scope": "其发布说明限定了它的适用范围：{claim}（`{source}`）",
        "not_published": "{kind}：未发布镜像（{why}）",
        "image_tags": "`{repository}`，标签：",
        "exact": "支持，搭配 Ray {ray}：其 Serve LLM 锁定的正是这个 vLLM。",
        "series": "支持，搭配 Ray {ray}：其 Serve LLM 锁定同一系列的 vLLM。",
        "no_ray": "不支持：没有可搭配的 Ray：{reason}",
        "measured_only": "没有哪个 Ray 锁定这个 vLLM；Ray {rays} 在模拟 NPU 层上用它提供了服务"
        "（vLLM 的 CPU 构建，不是 vLLM-Ascend），镜像构建接受它。",
        "compose": "支持：在该版本的镜像中运行 `vllm serve`，不需要 Ray。",
        "rules": "`ray-serve-npu check` 的规则：`{rules}`。",
        "no_rules": "`ray-serve-npu check` 还没有该版本的规则。",
        "sep": "；",
        "head_kind": "节点类型",
        "head_setting": "设置",
        "not_set": "未设置",
        "tutorial_lines": "教程所在行",
        "head_ray": "Ray",
        "head_pin": "其 Serve LLM 锁定的 vLLM",
        "head_carried": "带有该 vLLM 的 vLLM-Ascend 版本",
        "head_measured": "在模拟 NPU 层上实测搭配",
        "carried_exact": "`{tag}`（vLLM {vllm}）",
        "carried_series": "`{tag}`（vLLM {vllm}，同一系列）",
        "carried_none": "无",
        "measured_none": "未实测",
        "served": "{who}：可以提供服务（{date}）",
        "stopped": "{who}：停在 {step} 步骤（{date}）：`{error}`",
        "carried_by": "（`{tags}`）",
        "installed_head": "每个实测组合的安装方式",
        "pair": "ray {ray} 搭配 vLLM {vllm}",
        "unread_head": "更新的版本，尚不支持：此处无法读取它们的文件",
        "head_month": "发布",
        "head_vllm": "vLLM",
        "head_unread": "无法读取的原因，以及读取过的最近候选版本",
        "vllm_source": "vLLM {vllm}：{source}",
        "unread": "此处无法读取它的文件：{why}。",
        "no_candidate": "此处也无法读取它的任何候选版本。",
        "no_checker": "没有它的镜像构建、配方或 `ray-serve-npu check` 规则。",
    },
}


#: What the generated tables take from the data, translated for the build's edition.
Shown = tuple[list[Release], list[UnreadRelease], PathReleases, Pairings]


def in_edition(
    releases: Iterable[Release],
    unread: Iterable[UnreadRelease],
    pins: PathReleases,
    measured: Pairings,
    translate: Callable[[str], str],
) -> Shown:
    """Copies of the data whose sentences (a pairing's reason, where a release was read,
    a path's reason, how a pair was installed...) are in the build's edition, through
    ``translate``; versions, tags, sources and quoted errors stay as they are. The one list
    of the data's sentences that the tables show: :func:`data_sentences` reads it too."""

    def release(data: Release) -> Release:
        images = data.images.model_copy(
            update={
                "not_published": {k: translate(v) for k, v in data.images.not_published.items()}
            }
        )
        scope = data.scope and data.scope.model_copy(update={"claim": translate(data.scope.claim)})
        pairing = data.pairing.model_copy(update={"reason": translate(data.pairing.reason)})
        return data.model_copy(
            update={
                "read_in": translate(data.read_in),
                "images": images,
                "scope": scope,
                "pairing": pairing,
            }
        )

    def unread_release(data: UnreadRelease) -> UnreadRelease:
        nearest = data.nearest_read and translate(data.nearest_read)
        return data.model_copy(
            update={
                "vllm_source": translate(data.vllm_source),
                "unread_because": translate(data.unread_because),
                "nearest_read": nearest,
            }
        )

    # The matrix marks the two serving paths' releases with their reasons.
    paths = pins.model_copy(
        update={
            name: getattr(pins, name).model_copy(update={"why": translate(getattr(pins, name).why)})
            for name in SHOWN_PATHS
        }
    )
    pairs = [
        pair.model_copy(update={"installed": translate(pair.installed)}) for pair in measured.pairs
    ]
    return (
        [release(data) for data in releases],
        [unread_release(data) for data in unread],
        paths,
        measured.model_copy(update={"pairs": pairs}),
    )


def data_sentences(
    releases: Iterable[Release],
    unread: Iterable[UnreadRelease],
    pins: PathReleases,
    measured: Pairings,
) -> list[str]:
    """Every data sentence the tables show, for the edition catalogue (data_catalog)."""
    seen: list[str] = []

    def collect(text: str) -> str:
        seen.append(text)
        return text

    in_edition(releases, unread, pins, measured, collect)
    return seen


def texts(language: str | None) -> dict[str, str]:
    """The texts of the build's language; English where the site has no translation."""
    return edition_texts(TEXTS, language)


def _images(data: Release, words: dict[str, str]) -> list[str]:
    """The repository once, then each node kind's tags: a tag, which must not break in the
    middle, fits a column where a whole reference would not (docs/_ext/table_words.py)."""
    lines = [words["image_tags"].format(repository=data.image_repository)]
    for kind in data.node_kinds:
        tags = [
            data.image(kind, os).removeprefix(f"{data.image_repository}:")
            for os in OPERATING_SYSTEMS
        ]
        lines.append(f"{kind}: " + ", ".join(f"`{tag}`" for tag in tags))
    for kind, why in data.images.not_published.items():
        lines.append(words["not_published"].format(kind=kind, why=" ".join(why.split())))
    return lines


def _scope(data: Release, words: dict[str, str]) -> list[str]:
    """Where the release notes narrow what the release claims."""
    if data.scope is None:
        return []
    claim = " ".join(data.scope.claim.split())
    return [words["scope"].format(claim=claim, source=data.scope.source)]


#: The paths whose pinned release the matrix marks, with the reason paths.yaml gives.
SHOWN_PATHS: tuple[str, ...] = ("serve_llm", "compose")


def _pinned(data: Release, path: str, pins: PathReleases, words: dict[str, str]) -> list[str]:
    """The path's mark, with the data's reason, where its recipes pin this release."""
    pin = getattr(pins, path)
    if pin.release != data.tag:
        return []
    return [words[f"{path}_default"].format(why=" ".join(pin.why.split()))]


def _serve_llm(data: Release, measured: Pairings, words: dict[str, str]) -> list[str]:
    """The data's pairing, then each Ray measured beside the release's vLLM."""
    pairing = data.pairing
    reason = " ".join(pairing.reason.split())
    served = measured.serving_rays(data.vllm)
    if pairing.ray is not None and pairing.match is not None:
        lines = [words[pairing.match].format(ray=pairing.ray), reason]
    elif served:
        lines = [words["measured_only"].format(rays=", ".join(served)), reason]
    else:
        lines = [words["no_ray"].format(reason=reason)]
    return lines + _pair_lines(measured.beside(data.vllm), lambda pair: f"Ray {pair.ray}", words)


def _compose(data: Release, words: dict[str, str]) -> list[str]:
    rules = words["rules"].format(rules=data.rules) if data.rules else words["no_rules"]
    return [words["compose"], rules]


def release_matrix(
    releases: Iterable[Release], words: dict[str, str], pins: PathReleases, measured: Pairings
) -> nodes.table:
    """One row per release, in the reverse of the given order (the data's: oldest first)."""
    headers = ["head_release", "head_stack", "head_images", "head_serve_llm", "head_compose"]
    table, body = table_frame("release-matrix", [words[h] for h in headers], (12, 16, 24, 28, 20))
    for data in reversed(list(releases)):
        stack = words["stack"].format(vllm=data.vllm, cann=data.cann, torch_npu=data.torch_npu)
        body += nodes.row(
            "",
            code_cell(f"`{data.tag}`"),
            code_cell(
                stack,
                words["read_in"].format(source=" ".join(data.read_in.split())),
                *_scope(data, words),
            ),
            code_cell(*_images(data, words)),
            code_cell(
                *_pinned(data, SHOWN_PATHS[0], pins, words), *_serve_llm(data, measured, words)
            ),
            code_cell(*_pinned(data, SHOWN_PATHS[1], pins, words), *_compose(data, words)),
        )
    return table


def unread_releases(
    unread: Iterable[UnreadRelease], measured: Pairings, words: dict[str, str]
) -> list[nodes.Node]:
    """One row per release that can't be read here, newest first: what its release
    pages state, why it is not read, and the Rays measured beside its vLLM."""
    headers = ["head_release", "head_month", "head_vllm", "head_unread", "head_measured"]
    table, body = table_frame("unread-releases", [words[h] for h in headers], (12, 8, 20, 34, 26))
    for data in reversed(list(unread)):
        nearest = " ".join(data.nearest_read.split()) if data.nearest_read else None
        body += nodes.row(
            "",
            code_cell(f"`{data.tag}`"),
            code_cell(data.month),
            code_cell(
                words["vllm_source"].format(
                    vllm=data.vllm, source=" ".join(data.vllm_source.split())
                )
            ),
            code_cell(
                words["unread"].format(why=" ".join(data.unread_because.split())),
                nearest or words["no_candidate"],
                words["no_checker"],
            ),
            code_cell(
                *_pair_lines(measured.beside(data.vllm), lambda pair: f"Ray {pair.ray}", words)
                or [words["measured_none"]]
            ),
        )
    # Not for the gettext builder: the text is already in the build's language.
    heading = nodes.paragraph("", "", nodes.strong("", words["unread_head"]), translatable=False)
    return [heading, table]


def _value(value: Any) -> str:
    """A setting's value as the tutorial's shell line passes it: JSON for all but strings."""
    return value if isinstance(value, str) else json.dumps(value)


def _tutorial_lines(data: Release) -> nodes.entry:
    """A link to each node kind's run in the release's tutorial, at its tag (the
    citations' own resolver: the file must be in the tag's stored file list)."""
    upstream = UPSTREAMS["vllm-ascend"]
    version = upstream.version(data.tag)
    tutorial = data.deepseek_v4_flash
    entry = nodes.entry()
    for kind, run in tutorial.runs.items():
        first, last = run.lines.split("-")
        link = resolve(upstream.role, f"{tutorial.file}@{version}#L{first}-L{last}")
        reference = nodes.reference("", "", nodes.literal(run.lines, run.lines), refuri=link.url)
        entry += nodes.paragraph("", f"{kind}: ", reference)
    return entry


def release_differences(releases: Iterable[Release], words: dict[str, str]) -> nodes.table:
    """One row per tutorial setting that differs between the releases, newest first; a
    setting that differs alike on every node kind is one row."""
    newest_first = list(reversed(list(releases)))
    # The node kinds every release has a run for (a kind one release adds has nothing
    # to differ from).
    kinds = sorted(set.intersection(*(set(data.deepseek_v4_flash.runs) for data in newest_first)))
    rows: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for kind in kinds:
        for name, values in differing_settings(newest_first, kind).items():
            cells = tuple(
                f"`{_value(values[data.tag])}`" if data.tag in values else words["not_set"]
                for data in newest_first
            )
            rows.setdefault((name, cells), []).append(kind)
    table, body = table_frame(
        "release-differences",
        [words["head_kind"], words["head_setting"], *(f"`{data.tag}`" for data in newest_first)],
        (8, 20, *(24,) * len(newest_first)),
    )
    for (name, cells), on_kinds in rows.items():
        body += nodes.row(
            "", code_cell(", ".join(on_kinds)), code_cell(f"`{name}`"), *map(code_cell, cells)
        )
    body += nodes.row(
        "",
        code_cell(", ".join(kinds)),
        code_cell(words["tutorial_lines"]),
        *(_tutorial_lines(data) for data in newest_first),
    )
    return table


def _carried(releases: Iterable[Release], pinned: str, words: dict[str, str]) -> list[str]:
    """The releases whose vLLM is the pin, or of its series, newest first."""
    lines = []
    for data in reversed(list(releases)):
        if data.vllm == pinned:
            lines.append(words["carried_exact"].format(tag=data.tag, vllm=data.vllm))
        elif series(data.vllm) == series(pinned):
            lines.append(words["carried_series"].format(tag=data.tag, vllm=data.vllm))
    return lines or [words["carried_none"]]


def _pair_lines(
    pairs: list[MeasuredPair], who: Callable[[MeasuredPair], str], words: dict[str, str]
) -> list[str]:
    """One line per measured pair: ``who`` serves, or the step it stopped at and its error."""
    lines = []
    for pair in pairs:
        if pair.serves:
            lines.append(words["served"].format(who=who(pair), date=pair.date))
            continue
        lines.append(
            words["stopped"].format(
                who=who(pair),
                step=pair.steps[-1].step.value,
                date=pair.date,
                # A backtick would end the cell's code span early.
                error=" ".join((pair.first_error or "").split()).replace("`", "'"),
            )
        )
    return lines


def _vllm_and_releases(
    tags_by_vllm: dict[str, list[str]], words: dict[str, str]
) -> Callable[[MeasuredPair], str]:
    """A pair's vLLM, with the releases that carry that very vLLM."""

    def who(pair: MeasuredPair) -> str:
        tags = tags_by_vllm.get(pair.vllm, [])
        carried = words["carried_by"].format(tags="`, `".join(tags)) if tags else ""
        return f"vLLM {pair.vllm}{carried}"

    return who


def ray_pairings(
    pins: dict[str, str],
    releases: Iterable[Release],
    unread: Iterable[UnreadRelease],
    measured: Pairings,
    words: dict[str, str],
) -> list[nodes.Node]:
    """One row per Ray that pins a vLLM, newest first; then how each measured pair was
    installed, as the pairing session wrote it. A measured vLLM names the releases, supported
    or unread, that carry it."""
    releases = list(releases)
    tags_by_vllm: dict[str, list[str]] = {}
    for data in [*releases, *unread]:
        tags_by_vllm.setdefault(data.vllm, []).append(data.tag)
    who = _vllm_and_releases(tags_by_vllm, words)
    headers = ["head_ray", "head_pin", "head_carried", "head_measured"]
    table, body = table_frame("ray-pairings", [words[h] for h in headers], (10, 14, 26, 50))
    for ray, pinned in reversed(list(pins.items())):
        body += nodes.row(
            "",
            code_cell(ray),
            code_cell(pinned),
            code_cell(*_carried(releases, pinned, words)),
            code_cell(
                *_pair_lines(measured.beside_ray(ray), who, words) or [words["measured_none"]]
            ),
        )
    installed = nodes.definition_list(classes=["ray-pairings-installed"])
    for pair in sorted(measured.pairs, key=lambda p: (Version(p.ray), Version(p.vllm))):
        item = nodes.definition_list_item()
        item += nodes.term("", words["pair"].format(ray=pair.ray, vllm=pair.vllm))
        definition = nodes.definition()
        definition += nodes.paragraph("", " ".join(pair.installed.split()))
        item += definition
        installed += item
    # Not for the gettext builder: the text is already in the build's language.
    heading = nodes.paragraph("", "", nodes.strong("", words["installed_head"]), translatable=False)
    return [table, heading, installed]


def _shown(directive: SphinxDirective) -> Shown:
    """The data the tables show, in the build's edition; the page is rebuilt when any of it
    changes. A sentence without a translation is an error at the directive, naming it and
    the fix (which fails the site's builds: they treat warnings as errors)."""
    for tag in RELEASES:
        directive.env.note_dependency(str(DATA_DIR / f"{tag}.yaml"))
    for path in (PATHS_FILE, UNREAD_FILE, PAIRINGS_FILE):
        directive.env.note_dependency(str(path))
    locale_dir = Path(directive.env.srcdir) / "locale"
    language = directive.config.language
    if language not in (None, "en"):
        directive.env.note_dependency(str(catalog_path(locale_dir, language)))
    try:
        return in_edition(
            RELEASES.values(),
            UNREAD_RELEASES.values(),
            PATH_RELEASES,
            pairings(),
            translator(locale_dir, language),
        )
    except MissingTranslation as error:
        raise directive.error(str(error)) from None


def _note_release_data(directive: SphinxDirective) -> list[Release]:
    """Every release's data; the page is rebuilt when a data file changes."""
    releases = list(RELEASES.values())
    for data in releases:
        directive.env.note_dependency(str(DATA_DIR / f"{data.tag}.yaml"))
    directive.env.note_dependency(str(PATHS_FILE))
    return releases


class ReleaseDifferences(SphinxDirective):
    """``{release-differences}``: the tutorial settings that differ between the releases."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [release_differences(_note_release_data(self), texts(self.config.language))]


class RayPairings(SphinxDirective):
    """``{ray-pairings}``: each Ray's pin, the releases with that vLLM, and what was measured."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        words = texts(self.config.language)
        releases, unread, _, measured = _shown(self)
        return ray_pairings(compat.RAY_VLLM_PINS, releases, unread, measured, words)


class ReleaseMatrix(SphinxDirective):
    """``{release-matrix}``: every supported release, its stack, images and paths."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        words = texts(self.config.language)
        releases, unread, pins, measured = _shown(self)
        return [
            release_matrix(releases, words, pins, measured),
            *unread_releases(unread, measured, words),
        ]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("release-matrix", ReleaseMatrix)
    app.add_directive("release-differences", ReleaseDifferences)
    app.add_directive("ray-pairings", RayPairings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
