"""The typed shape of a release data file (``releases/<tag>.yaml``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

from packaging.version import InvalidVersion, Version
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ray_serve_npu.vllm_cli import engine_kwarg_argv

#: The base OS flavours vLLM-Ascend builds its images on.
OPERATING_SYSTEMS: tuple[str, ...] = ("ubuntu", "openeuler")

#: The node kinds every supported release must publish images and tutorial runs for.
REQUIRED_NODE_KINDS: tuple[str, ...] = ("A2", "A3")


_Entry = TypeVar("_Entry")


def _for_every_required_kind(by_kind: dict[str, _Entry], what: str) -> dict[str, _Entry]:
    """``by_kind`` unchanged if it has an entry per required node kind; else the named error."""
    missing = [kind for kind in REQUIRED_NODE_KINDS if kind not in by_kind]
    if missing:
        raise ValueError(f"no {what} for node kind {', '.join(missing)}; add it")
    return by_kind


_SOURCE = re.compile(r"^[\w./-]+(:\d+(-\d+)?)?( \(.+\))?$")


class BadReleaseDataError(ValueError):
    """A release data file that does not fit :class:`Release`; names the file, field and fix."""


class NoPairingError(LookupError):
    """The release data pairs no Ray with this release."""


class PairingError(ValueError):
    """A Ray that the release data does not pair with the release."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_source(value: str) -> str:
    if not _SOURCE.match(value):
        raise ValueError(
            f"{value!r} is not a source; fix: give a path in the vllm-ascend repository "
            "at the release's tag, optionally with :LINE or :FIRST-LAST and a note in "
            "parentheses, e.g. 'Dockerfile:50 (ARG VLLM_TAG)'"
        )
    return value


def _check_version(value: str) -> str:
    try:
        Version(value)
    except InvalidVersion:
        raise ValueError(
            f"{value!r} is not a version; fix: write it as the release states it, "
            "a PEP 440 version such as '2.10.0.post2'"
        ) from None
    return value


def _check_tag(value: str) -> str:
    if not value.startswith("v"):
        raise ValueError(f"a vLLM-Ascend tag starts with 'v' (e.g. 'v0.23.0'); got {value!r}")
    _check_version(value[1:])
    return value


def _written_as(pattern: str, form: str) -> AfterValidator:
    """A text field that must match ``pattern`` whole; the error names the ``form``."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"write it as {form}; got {value!r}")
        return value

    return AfterValidator(check)


#: A path in the vllm-ascend repository at the release's tag, with lines and a note.
SourcePath = Annotated[str, AfterValidator(_check_source)]
VersionString = Annotated[str, AfterValidator(_check_version)]
#: A vLLM-Ascend git and image tag: ``v`` and a version, e.g. ``v0.22.1rc1``.
ReleaseTag = Annotated[str, AfterValidator(_check_tag)]
#: Lines of a file, ``FIRST-LAST``.
LineRange = Annotated[str, _written_as(r"\d+-\d+", "FIRST-LAST (e.g. '150-191')")]
#: A day, ``YYYY-MM-DD``.
Day = Annotated[str, _written_as(r"\d{4}-\d{2}-\d{2}", "YYYY-MM-DD")]
#: A month, ``YYYY-MM``.
Month = Annotated[str, _written_as(r"\d{4}-\d{2}", "YYYY-MM")]


class PinnedVersion(_Strict):
    """One version the release's images carry, and where the release states it."""

    version: VersionString
    source: SourcePath


class Stack(_Strict):
    vllm: PinnedVersion
    cann: PinnedVersion
    torch: PinnedVersion
    torch_npu: PinnedVersion


class ImageTags(_Strict):
    """What follows the release tag in an image reference, per base OS, for one node kind."""

    ubuntu: str
    openeuler: str
    #: Where the release says it builds and publishes these images.
    source: SourcePath

    @field_validator("ubuntu", "openeuler")
    @classmethod
    def _suffix(cls, value: str) -> str:
        if value and not re.fullmatch(r"-[a-z0-9]+(-[a-z0-9]+)*", value):
            raise ValueError(
                f"a tag suffix is empty or starts with '-' (e.g. '-a3-openeuler'); got {value!r}"
            )
        return value

    def suffix(self, os: str) -> str:
        if os not in OPERATING_SYSTEMS:
            raise ValueError(f"os: {os!r} is not one of {', '.join(OPERATING_SYSTEMS)}")
        return getattr(self, os)


class Images(_Strict):
    repository: str
    repository_source: SourcePath
    #: Node kind name (``A2``, ``A3``, ``950DT``) -> its image tags.
    tags: dict[str, ImageTags]
    #: Node kinds the release has a Dockerfile for but publishes no image of, and why.
    not_published: dict[str, str] = Field(default_factory=dict)

    @field_validator("tags")
    @classmethod
    def _required_kinds(cls, tags: dict[str, ImageTags]) -> dict[str, ImageTags]:
        return _for_every_required_kind(tags, "image tags")


class Jemalloc(_Strict):
    """The jemalloc library in the release's images, per base OS."""

    ubuntu: str
    openeuler: str
    ubuntu_source: SourcePath
    openeuler_source: SourcePath

    def paths(self) -> dict[str, str]:
        return {os: getattr(self, os) for os in OPERATING_SYSTEMS}


class TutorialRun(_Strict):
    """One single-node run of vLLM-Ascend's DeepSeek-V4-Flash tutorial, as the tutorial gives it."""

    #: Lines of the tutorial's shell block.
    lines: LineRange
    model: str
    env: dict[str, str]
    #: ``vllm serve`` flags without the leading ``--``; a bare flag is ``true``.
    #: JSON values are mappings; ``--additional-config`` is :attr:`additional_config`.
    args: dict[str, Any]
    additional_config: dict[str, Any]

    @field_validator("args")
    @classmethod
    def _parallelism(cls, args: dict[str, Any]) -> dict[str, Any]:
        for flag in ("tensor-parallel-size", "max-model-len", "max-num-seqs"):
            if not isinstance(args.get(flag), int) or isinstance(args.get(flag), bool):
                raise ValueError(f"args needs {flag} as an integer, as the tutorial gives it")
        if "additional-config" in args:
            raise ValueError("move --additional-config from args to additional_config")
        return args

    @property
    def tensor_parallel_size(self) -> int:
        return self.args["tensor-parallel-size"]

    @property
    def data_parallel_size(self) -> int:
        return int(self.args.get("data-parallel-size", 1))

    @property
    def max_model_len(self) -> int:
        return self.args["max-model-len"]

    @property
    def max_num_seqs(self) -> int:
        return self.args["max-num-seqs"]

    @property
    def max_num_batched_tokens(self) -> int | None:
        return self.args.get("max-num-batched-tokens")

    def serve_words(self) -> list[str]:
        """The words after ``vllm serve MODEL`` that the tutorial's run writes."""
        flags = dict(self.args)
        if self.additional_config:
            flags["additional-config"] = self.additional_config
        # A flag's name with `-` for `_` is its engine keyword (`no-enable-prefix-caching`
        # included: its words are the flag itself).
        return [w for f, v in flags.items() for w in engine_kwarg_argv(f.replace("-", "_"), v)]

    def settings(self) -> dict[str, Any]:
        """Every setting of the run by one name each: ``NAME`` for an environment variable,
        ``--flag`` for a ``vllm serve`` flag (JSON ones whole), and ``additional_config``
        keys by dotted path; the server's own port and name included."""
        flat: dict[str, Any] = dict(self.env)
        flat.update({f"--{flag}": value for flag, value in self.args.items()})

        def add(prefix: str, config: dict[str, Any]) -> None:
            for key, value in config.items():
                if isinstance(value, dict):
                    add(f"{prefix}{key}.", value)
                else:
                    flat[f"{prefix}{key}"] = value

        add("additional_config.", self.additional_config)
        return flat


class Tutorial(_Strict):
    file: SourcePath
    #: Node kind name -> the tutorial's single-node run for it.
    runs: dict[str, TutorialRun]
    #: The vLLM-Ascend CI case for a node kind, where the release has one (not read for settings).
    ci_cases: dict[str, str] = Field(default_factory=dict)

    @field_validator("runs")
    @classmethod
    def _required_kinds(cls, runs: dict[str, TutorialRun]) -> dict[str, TutorialRun]:
        return _for_every_required_kind(runs, "tutorial run")


class Scope(_Strict):
    """What a model-restricted release's notes claim, where they narrow the release's claim."""

    #: The claim, as the release notes state it for the models and nodes this project serves.
    claim: str = Field(min_length=1)
    source: SourcePath


class RayPairing(_Strict):
    """The Ray whose Serve LLM runs beside this release's vLLM, or none and why."""

    #: The Ray release that pairs, or null.
    ray: VersionString | None
    #: ``exact``: that Ray's Serve LLM pins this very vLLM; ``series``: it pins
    #: another patch release of the same vLLM ``major.minor``; null with no Ray.
    match: Literal["exact", "series"] | None
    #: Why this Ray, or why none. Which Rays were measured beside the release's vLLM
    #: is the pairing session's (:mod:`ray_serve_npu.releases.pairings`), not this file's.
    reason: str

    @model_validator(mode="after")
    def _consistent(self) -> RayPairing:
        if (self.ray is None) != (self.match is None):
            raise ValueError(
                "ray and match go together: give both (a Ray and exact/series) or neither"
            )
        return self


class Release(_Strict):
    """One vLLM-Ascend release and every fact of it that this project uses."""

    #: The git tag and image tag, e.g. ``v0.22.1rc1``.
    tag: ReleaseTag
    #: The tag's date (``git log -1 --format=%cs <tag>``, or the release notes' date).
    date: Day
    #: Where the facts were read: the Git tag, or a published archive of the tag's files
    #: where no copy of the tag is readable here. The release matrix shows it.
    read_in: str = Field(min_length=1)
    stack: Stack
    images: Images
    jemalloc: Jemalloc
    deepseek_v4_flash: Tutorial
    #: Where the release notes narrow what the release claims; null where they don't.
    scope: Scope | None = None
    pairing: RayPairing
    #: The checker's rules file for this release, relative to the ``ray_serve_npu``
    #: package, or null where the release has none yet.
    rules: str | None

    @property
    def vllm(self) -> str:
        return self.stack.vllm.version

    @property
    def cann(self) -> str:
        return self.stack.cann.version

    @property
    def torch(self) -> str:
        return self.stack.torch.version

    @property
    def torch_npu(self) -> str:
        return self.stack.torch_npu.version

    @property
    def image_repository(self) -> str:
        return self.images.repository

    @property
    def node_kinds(self) -> tuple[str, ...]:
        """The node kinds this release publishes images for."""
        return tuple(self.images.tags)

    @property
    def jemalloc_paths(self) -> dict[str, str]:
        return self.jemalloc.paths()

    @property
    def ray(self) -> str:
        """The Ray release that pairs with this release; :class:`NoPairingError` where none does."""
        if self.pairing.ray is None:
            raise NoPairingError(
                f"vLLM-Ascend {self.tag} (vLLM {self.vllm}) pairs with no Ray release: "
                f"{self.pairing.reason}"
            )
        return self.pairing.ray

    def image(self, node_kind: str, os: str = "ubuntu") -> str:
        """The image reference for a node kind (``"A3"``) and base OS."""
        tags = self.images.tags.get(node_kind)
        if tags is None:
            why = self.images.not_published.get(node_kind)
            known = ", ".join(self.images.tags)
            raise LookupError(
                f"vLLM-Ascend {self.tag} publishes no image for node kind {node_kind!r}"
                + (f" ({why})" if why else "")
                + f"; it has images for {known}"
            )
        return f"{self.images.repository}:{self.tag}{tags.suffix(os)}"

    def image_references(self) -> dict[tuple[str, str], str]:
        """Every image this release publishes: (node kind, OS) -> reference."""
        return {
            (kind, os): self.image(kind, os)
            for kind in self.images.tags
            for os in OPERATING_SYSTEMS
        }

    def run(self, node_kind: str) -> TutorialRun:
        """The DeepSeek-V4-Flash tutorial's single-node run on a node kind."""
        try:
            return self.deepseek_v4_flash.runs[node_kind]
        except KeyError:
            known = ", ".join(self.deepseek_v4_flash.runs)
            raise LookupError(
                f"the DeepSeek-V4-Flash tutorial at {self.tag} has no single-node run for "
                f"{node_kind!r}; it has {known}"
            ) from None


def differing_settings(releases: Iterable[Release], node_kind: str) -> dict[str, dict[str, Any]]:
    """The DeepSeek-V4-Flash tutorial's settings on ``node_kind`` that differ between
    ``releases``: setting (as :meth:`TutorialRun.settings` names it) -> release tag ->
    value, a release whose run does not set it left out."""
    by_release = {data.tag: data.run(node_kind).settings() for data in releases}
    differing = {}
    for name in sorted(set().union(*by_release.values())):
        values = {tag: settings[name] for tag, settings in by_release.items() if name in settings}
        # Compared as JSON text: values can be mappings, which a set can't hold.
        if len(values) < len(by_release) or len({_json(v) for v in values.values()}) > 1:
            differing[name] = values
    return differing


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class UnreadRelease(_Strict):
    """A published vLLM-Ascend release whose tag's files no source here holds: what its
    release pages state, and why it is not read. Not supported: no images, tutorial
    runs or checker rules are known for it."""

    tag: ReleaseTag
    #: The month the release pages date it, ``YYYY-MM``.
    month: Month
    #: The vLLM the release pages align it with.
    vllm: VersionString
    #: Where the vLLM is stated, and what agrees.
    vllm_source: str = Field(min_length=1)
    #: Why the tag's files can't be read here, naming what was looked in: a clause that
    #: follows "its files can't be read here:", without a closing full stop.
    unread_because: str = Field(min_length=1)
    #: What the nearest readable candidate of the release states, where one is readable.
    nearest_read: str | None = None

    @field_validator("unread_because")
    @classmethod
    def _clause(cls, value: str) -> str:
        if value.rstrip().endswith("."):
            raise ValueError("unread_because is a clause the checker quotes; drop the full stop")
        return value


class UnreadReleases(_Strict):
    """``unread.yaml``: releases newer than every supported one whose tags can't be read here."""

    releases: list[UnreadRelease]


class PathRelease(_Strict):
    """The release one serving path pins, and the reason."""

    #: A supported release's tag, e.g. ``v0.23.0``.
    release: str
    #: Why this release, in a sentence or two; the release matrix quotes it.
    why: str = Field(min_length=1)


class PathReleases(_Strict):
    """The release each serving path's recipes and pages pin (``paths.yaml``)."""

    #: Ray Serve LLM: the plugin's recipes, the Dockerfile and KubeRay.
    serve_llm: PathRelease
    #: ``vllm serve`` under Docker Compose, no Ray.
    compose: PathRelease
    #: The release the Compose path's community guide was written for (not a path: the
    #: release its corrections are traced at).
    community_guide: PathRelease
