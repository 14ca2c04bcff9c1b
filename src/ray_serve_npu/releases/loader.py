"""Read and validate the release data files."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version
from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from ray_serve_npu.releases.model import (
    BadReleaseDataError,
    PathReleases,
    Release,
    UnreadRelease,
    UnreadReleases,
)

#: The directory of the release data files (package data, shipped in the wheel).
DATA_DIR = Path(__file__).parent

#: Where a release's ``rules`` path is relative to: the ``ray_serve_npu`` package.
PACKAGE_DIR = DATA_DIR.parent

#: The file naming the release each serving path pins.
PATHS_FILE = DATA_DIR / "paths.yaml"

#: The published releases whose tags can't be read here (not supported).
UNREAD_FILE = DATA_DIR / "unread.yaml"


def _dotted(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(the whole file)"


def _fields_at(model: type[BaseModel], location: tuple[int | str, ...]) -> list[str]:
    """The field names the model allows at ``location``'s parent, for a misspelt-key hint."""
    current: Any = model
    for part in location[:-1]:
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return []
        annotation = fields[part].annotation
        args = getattr(annotation, "__args__", ())
        current = args[-1] if args else annotation
    fields = getattr(current, "model_fields", None)
    return list(fields) if fields else []


def _fix(
    error: dict[str, Any], location: tuple[int | str, ...], model: type[BaseModel]
) -> str | None:
    kind = error["type"]
    field = _dotted(location)
    if kind == "missing":
        return f"add {field}"
    if kind == "extra_forbidden":
        known = _fields_at(model, location)
        hint = f" (the fields there are: {', '.join(known)})" if known else ""
        return f"remove {field} or correct its name{hint}"
    if kind == "string_type":
        return f"quote {field}'s value, so YAML reads it as text (e.g. '0.23', not 0.23)"
    if kind == "value_error":
        # The model's own validators say the fix in their message.
        return None
    return f"give {field} a value that fits: {error['msg'].lower()}"


def _explain(path: Path, error: ValidationError, model: type[BaseModel]) -> BadReleaseDataError:
    lines = [f"{path}: the release data does not fit the {model.__name__} model:"]
    for item in error.errors():
        location = tuple(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        fix = _fix(item, location, model)
        lines.append(f"  - field {_dotted(location)}: {message}" + (f"; fix: {fix}" if fix else ""))
    return BadReleaseDataError("\n".join(lines))


def _read_mapping(path: Path, model: type[BaseModel]) -> Any:
    """The file's mapping, validated as ``model``; :class:`BadReleaseDataError` otherwise."""
    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except YAMLError as exc:
        raise BadReleaseDataError(f"{path}: not valid YAML ({exc}); fix the syntax") from None
    if not isinstance(data, dict):
        raise BadReleaseDataError(
            f"{path}: the file is a mapping of the fields {', '.join(model.model_fields)}; "
            f"found {type(data).__name__}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _explain(path, exc, model) from None


def load_release_file(path: Path) -> Release:
    """Read one release data file; :class:`BadReleaseDataError` names the file, field and fix."""
    result: Release = _read_mapping(path, Release)
    if result.tag != path.stem:
        raise BadReleaseDataError(
            f"{path}: field tag: {result.tag!r} differs from the file name; "
            f"fix: name the file {result.tag}.yaml or correct the tag"
        )
    if result.rules is not None and not (PACKAGE_DIR / result.rules).is_file():
        raise BadReleaseDataError(
            f"{path}: field rules: {result.rules!r} is not a file in the ray_serve_npu "
            "package; fix: give the rules file's path relative to src/ray_serve_npu, "
            "or null where the release has none yet"
        )
    return result


def _tag_order(tag: str) -> Version:
    return Version(tag.removeprefix("v"))


@cache
def _load_all(data_dir: Path) -> dict[str, Release]:
    files = sorted(data_dir.glob("v*.yaml"), key=lambda p: _tag_order(p.stem))
    return {path.stem: load_release_file(path) for path in files}


def releases(data_dir: Path = DATA_DIR) -> dict[str, Release]:
    """Every release with a data file, oldest first, by tag."""
    return dict(_load_all(data_dir))


def release(tag: str, data_dir: Path = DATA_DIR) -> Release:
    """The release with this tag; a :class:`LookupError` names the supported ones."""
    known = _load_all(data_dir)
    if tag in known:
        return known[tag]
    unread_file = data_dir / UNREAD_FILE.name
    unread = load_unread_releases(unread_file, data_dir).get(tag) if unread_file.is_file() else None
    why = (
        f" (its files can't be read here: {' '.join(unread.unread_because.split())})"
        if unread
        else ""
    )
    raise LookupError(
        f"vLLM-Ascend {tag!r} is not a supported release{why}; the supported ones are "
        f"{', '.join(known)} (one data file each in {data_dir})"
    )


def load_path_releases(path: Path = PATHS_FILE, data_dir: Path = DATA_DIR) -> PathReleases:
    """The release each serving path pins; :class:`BadReleaseDataError` names the field
    and the fix where it names no supported release, a Ray path's release no Ray pairs
    with, or a Compose path's release without checker rules."""
    result: PathReleases = _read_mapping(path, PathReleases)
    known = _load_all(data_dir)
    for name in PathReleases.model_fields:
        tag = getattr(result, name).release
        if tag not in known:
            raise BadReleaseDataError(
                f"{path}: field {name}.release: {tag!r} is not a supported release; fix: "
                f"name one of {', '.join(known)}, or add its data file to {data_dir}"
            )
    serve_llm = known[result.serve_llm.release]
    if serve_llm.pairing.ray is None:
        paired = [tag for tag, data in known.items() if data.pairing.ray is not None]
        raise BadReleaseDataError(
            f"{path}: field serve_llm.release: {serve_llm.tag} pairs with no Ray, so Ray "
            f"Serve LLM can't run on it; fix: name a release the data pairs with a Ray "
            f"({', '.join(paired)})"
        )
    compose = known[result.compose.release]
    if compose.rules is None:
        raise BadReleaseDataError(
            f"{path}: field compose.release: {compose.tag} has no checker rules, and the "
            "checker judges the Compose files by their image's release; fix: name a release "
            "with rules, or write its rules file first"
        )
    return result


def load_unread_releases(
    path: Path = UNREAD_FILE, data_dir: Path = DATA_DIR
) -> dict[str, UnreadRelease]:
    """The releases that can't be read here, oldest first, by tag;
    :class:`BadReleaseDataError` for one that has a data file too, that is not newer than
    every supported release, or that is listed twice."""
    listed: UnreadReleases = _read_mapping(path, UnreadReleases)
    supported = _load_all(data_dir)
    by_tag: dict[str, UnreadRelease] = {}
    for index, entry in enumerate(listed.releases):
        field = f"field releases.{index}.tag"
        if entry.tag in supported:
            raise BadReleaseDataError(
                f"{path}: {field}: {entry.tag} has a data file ({entry.tag}.yaml), so it is "
                "read, not unread; fix: remove its entry here"
            )
        newest = next(reversed(supported), None)
        if newest is not None and _tag_order(entry.tag) <= _tag_order(newest):
            raise BadReleaseDataError(
                f"{path}: {field}: {entry.tag} is not newer than the newest supported release, "
                f"{newest}; fix: list here only releases published after it"
            )
        if entry.tag in by_tag:
            raise BadReleaseDataError(
                f"{path}: {field}: {entry.tag} is listed twice; fix: keep one"
            )
        by_tag[entry.tag] = entry
    return dict(sorted(by_tag.items(), key=lambda item: _tag_order(item[0])))
