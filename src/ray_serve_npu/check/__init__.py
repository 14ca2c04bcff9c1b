"""Check serving configurations against the rules of a pinned vLLM-Ascend release.

``check_file`` reads a Docker Compose file, Serve YAML, LLMConfig YAML, a KubeRay
RayService manifest, a Ray Serve LLM Python recipe, a Markdown page or shell command
lines, and returns a finding for every rule of ``rules/<release>.yaml`` it breaks. A
file it cannot read as one of these raises ``InputError`` (a recipe's ``RecipeError``
is one): its findings would mean nothing.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ray_serve_npu.check.arguments import judge_arguments
from ray_serve_npu.check.checks import CHECKS, image_release
from ray_serve_npu.check.cmdline import parse_commands
from ray_serve_npu.check.compose import parse_compose
from ray_serve_npu.check.findings import Finding, Severity
from ray_serve_npu.check.model import Deployment, ParsedFile
from ray_serve_npu.check.problems import InputError, NothingToCheck, read_text
from ray_serve_npu.check.recipe import RecipeError, parse_recipe, run_deployment
from ray_serve_npu.check.rules import (
    RuleSet,
    available_releases,
    default_release,
    load_rules,
    no_rules,
)
from ray_serve_npu.check.yamlnodes import Document, load_documents
from ray_serve_npu.releases import RELEASES
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.vllm_flags import stored_flags

__all__ = [
    "Finding",
    "InputError",
    "NothingToCheck",
    "RecipeError",
    "Severity",
    "check_file",
    "Report",
    "check_paths",
    "check_serve_run",
    "parse_file",
]

#: Suffixes a directory is searched for; any other file is read as shell commands.
SUFFIXES = (".py", ".yaml", ".yml", ".md", ".sh")
#: Configurations' lines are short; the YAML, Markdown and shell readers (ruamel.yaml's
#: scanner, the flag checks) took minutes on a line of megabytes.
MAX_LINE = 64 * 2**10
_WHAT_IS_READ = (
    "a Compose file (services), a Serve config (applications), "
    "an LLMConfig (model_loading_config) or a RayService (kind: RayService)"
)


def _kind(data: object) -> str | None:
    """Which configuration a YAML document is, by the keys the checker reads."""
    if not isinstance(data, dict):
        return None
    if data.get("kind") == "RayService":
        return "rayservice"
    if "services" in data:
        return "compose"
    if "applications" in data or "model_loading_config" in data:
        return "serve"
    return None


def _parse_yaml(path: str, text: str, first_line: int = 1, page: bool = False) -> list[Deployment]:
    """Deployments of every document the checker recognises.

    A YAML file must hold one; a page's YAML block may be anything, since pages show
    other YAML too.
    """
    # Imported here, as the Markdown reader is: they need the `check` extra's packages,
    # which check_serve_run doesn't, in the image where serve_model.py runs.
    from ray_serve_npu.check.serve_yaml import (
        SERVE_YAML_VERSION,
        parse_rayservice,
        parse_serve_yaml,
    )
    from ray_serve_npu.check.validation import validate_compose

    documents = load_documents(text, first_line)
    deployments: list[Deployment] = []
    # The same documents as Ray reads Serve configs, parsed once if a Serve config is found.
    serve_documents: list[Document] | None = None
    recognised = False
    for index, document in enumerate(documents):
        kind = _kind(document.data)
        try:
            if kind == "compose":
                validate_compose(document)
                services = parse_compose(path, document.data, document.lines)
                if not services:
                    raise NothingToCheck(
                        "the Compose file holds no service to check",
                        "add the service that runs vLLM-Ascend under services",
                    )
                deployments += services
            elif kind == "serve":
                if serve_documents is None:
                    serve_documents = load_documents(text, first_line, SERVE_YAML_VERSION)
                deployments += parse_serve_yaml(path, serve_documents[index])
            elif kind == "rayservice":
                deployments += parse_rayservice(path, document)
        except NothingToCheck:
            # A page may show a Serve config that only names LLMConfig files.
            if not page:
                raise
            continue
        recognised = recognised or kind is not None
    if not recognised and not page:
        found = "nothing it reads" if documents else "no YAML document (empty, or all comments)"
        raise NothingToCheck(
            f"the checker found {found}: it reads {_WHAT_IS_READ}",
            "pass one of those; to check other YAML, this checker is not the tool",
        )
    return deployments


def _check_line_lengths(lines: list[str]) -> None:
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE:
            raise InputError(
                f"a line longer than {MAX_LINE // 2**10} KiB, which no configuration holds",
                "pass the configuration file itself",
                number,
            )


def parse_file(
    path: str | Path, execute_recipes: bool = False, release: str | None = None
) -> ParsedFile:
    """Read one file into deployments, choosing the parser by its suffix, and judge its
    ``vllm serve`` flags and engine keywords by the stored flags of its release's vLLM.

    ``release`` forces the release, else the file's images choose (the default release
    where they name none). ``execute_recipes`` runs a Python recipe's module-level code
    to read it, instead of reading its source.

    Raises ``InputError``, with ``file`` set, for a file that cannot be read as what its
    suffix says (``RecipeError`` for a recipe).
    """
    name = str(path)
    try:
        text = read_text(Path(path))
        parsed = ParsedFile(path=name, lines=text.splitlines())
        suffix = Path(path).suffix.lower()
        if suffix != ".py":
            # Python's own parser takes long lines in its stride; recipe.py bounds its depth.
            _check_line_lengths(parsed.lines)
        if suffix == ".py":
            parsed.deployments = parse_recipe(name, text, execute_recipes)
        elif suffix in (".yaml", ".yml"):
            parsed.deployments = _parse_yaml(name, text)
        elif suffix == ".md":
            from ray_serve_npu.check.markdown import SHELL, YAML, code_blocks, has_warning

            parsed.has_warning = has_warning(text)
            for language, body, first in code_blocks(text):
                if language in SHELL:
                    parsed.deployments += parse_commands(name, body, first)
                elif language in YAML:
                    parsed.deployments += _parse_yaml(name, body, first, page=True)
        else:
            parsed.deployments = parse_commands(name, text)
        parsed.release = release or _release_for(parsed, default_release())
        flags = stored_flags(RELEASES[parsed.release].vllm)
        for deployment in parsed.deployments:
            judge_arguments(deployment, flags)
    except InputError as error:
        error.file = name
        raise
    except ValueError as error:
        # A value a parser could not split or decode (an unclosed quote in a command).
        unreadable = InputError(f"could not be read: {error}", "correct what the message names")
        unreadable.file = name
        raise unreadable from error
    return parsed


def _release_for(parsed: ParsedFile, fallback: str) -> str:
    """The release the file's vLLM-Ascend images name, else ``fallback``.

    Raises ``InputError`` at the image's line when an image names a release the checker
    has no rules for, or when two images name different releases: judged by other rules,
    the file's findings would be wrong.
    """
    known = available_releases()
    named: dict[str, int] = {}
    for dep in parsed.deployments:
        if not dep.image or not (release := image_release(str(dep.image.value))):
            continue
        if release not in known:
            raise InputError(
                f"image {dep.image.value}: {no_rules(release)}",
                "use an image of one of those releases, or pass --release RELEASE to judge "
                "the file by that release's rules",
                dep.image.line,
            )
        named.setdefault(release, dep.image.line)
    if len(named) > 1:
        lines = ", ".join(f"{release} (line {line})" for release, line in named.items())
        raise InputError(
            f"the images name more than one vLLM-Ascend release: {lines}",
            "use images of one release, or pass --release RELEASE to choose the rules",
            max(named.values()),
        )
    return next(iter(named), fallback)


def run_rules(parsed: ParsedFile, rules: RuleSet) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules.rules:
        if not rule.applies:
            continue
        if rule.check not in CHECKS:
            raise ValueError(
                f"rules {rules.release}: rule {rule.id!r} has check: {rule.check!r}, which is not "
                f"one of {sorted(CHECKS)}; fix the check name, or add the check to the "
                "CHECKS registry in check/checks/__init__.py"
            )
        findings += CHECKS[rule.check](rule, parsed, rules)
    return findings


def check_file(
    path: str | Path,
    release: str | None = None,
    execute_recipes: bool = False,
    node_kind: str | None = None,
) -> list[Finding]:
    """Findings for one file; ``release`` forces the rule file, else the image tag chooses.

    ``node_kind`` (a key of ``hardware.NODE_KINDS``) is the node every deployment of the
    file runs on, judged as its accelerator type is.
    """
    parsed = parse_file(path, execute_recipes, release)
    for deployment in parsed.deployments:
        deployment.node_kind = node_kind
    findings = run_rules(parsed, load_rules(parsed.release))
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule_id))


def check_serve_run(run: ServeRun) -> list[Finding]:
    """The findings of the recipe that ``recipe_for`` builds from ``run``, by its release's
    rules, each naming the run and its line in vLLM-Ascend's repository: what
    ``ray-serve-npu check serve_model.py`` says of that run."""
    parsed = ParsedFile(path=run.path, lines=[], release=run.release)
    parsed.deployments = [run_deployment(run.path, run, run.line)]
    for deployment in parsed.deployments:
        judge_arguments(deployment, stored_flags(RELEASES[run.release].vllm))
    return run_rules(parsed, load_rules(run.release))


@dataclass
class Report:
    """What ``check_paths`` found: the findings of the files it read, and a line for each
    path it could not read or skipped."""

    checked: int = 0
    findings: list[Finding] = field(default_factory=list)
    # `FILE[:LINE]: problem. Fix: ...` for each path that could not be read: its own
    # findings are unknown.
    unreadable: list[str] = field(default_factory=list)
    # `skipped FILE: why` for each file of a walked directory that the checker does not read.
    skipped: list[str] = field(default_factory=list)


def _unreadable(path: Path, problem: str, fix: str) -> str:
    error = InputError(problem, fix)
    error.file = str(path)
    return str(error)


def _files_to_check(paths: Iterable[str | Path], report: Report) -> list[tuple[Path, bool]]:
    """Each file to check, and whether it was named (else found in a named directory);
    each path that is not one goes to ``report`` with its reason."""
    files: list[tuple[Path, bool]] = []
    for path in map(Path, paths):
        try:
            is_dir = stat.S_ISDIR(path.stat().st_mode)
        except OSError as error:
            # A symlink loop or a link to nothing: the stat error says which.
            report.unreadable.append(
                _unreadable(
                    path,
                    f"cannot be read: {error.strerror}",
                    "pass the file itself, or correct the link",
                )
            )
            continue
        if not is_dir:
            files.append((path, True))
            continue
        found = sorted(
            p
            for p in path.rglob("*")
            if p.suffix.lower() in SUFFIXES
            # Hidden folders hold tools' files (.git, .venv), not configurations.
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
            and not p.is_dir()
        )
        for p in found:
            try:
                regular = stat.S_ISREG(p.stat().st_mode)
            except OSError as error:
                report.skipped.append(f"skipped {p}: cannot be read: {error.strerror}")
                continue
            if regular:
                files.append((p, False))
            else:
                report.skipped.append(f"skipped {p}: not a regular file")
        if not found:
            report.unreadable.append(
                _unreadable(
                    path,
                    f"holds no file the checker reads ({', '.join(SUFFIXES)} files, "
                    "outside hidden folders)",
                    "pass the directory or files that hold the configurations",
                )
            )
    return files


def check_paths(
    paths: Iterable[str | Path],
    release: str | None = None,
    execute_recipes: bool = False,
    node_kind: str | None = None,
) -> Report:
    """Findings for every file (directories are walked for the kinds the checker reads).

    A file that cannot be read, named or walked, gets its line in ``unreadable``; a file
    of a walked directory that holds nothing the checker reads is ``skipped``.
    """
    report = Report()
    files = _files_to_check(paths, report)
    for file, named in files:
        try:
            report.findings += check_file(file, release, execute_recipes, node_kind)
            report.checked += 1
        except NothingToCheck as error:
            if named:
                report.unreadable.append(str(error))
            else:
                report.skipped.append(f"skipped {error}")
        except InputError as error:
            report.unreadable.append(str(error))
    return report
