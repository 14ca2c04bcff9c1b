"""Find one setting described differently on two pages.

A fact that several pages state (a setting's default, whether to set a variable,
the value a command sets it to) has one owner page; the others include the
owner's words (``{include}`` between ``% __name_start__`` / ``% __name_end__``
markers) or link to them. This checker reads what each page claims about each
setting and reports the settings whose claims disagree, so a second wording
that drifts from the owner's fails CI:

``set``
    A shell block sets an environment variable (``export NAME=value``,
    ``NAME=value command``, ``docker run -e NAME=value``).
``unset``
    The prose tells the reader not to set a variable: "don't set `NAME`",
    "never set", "leave `NAME` unset", "leave `NAME` ... out of", "set neither".
``default``
    The prose gives a setting's default: "`NAME` defaults to `V`", or, in the
    definition of a definition-list term or the row of a table that names the
    setting, "`V` is the default", "the default is `V`", "defaults to `V`".

Contradictions: a variable that one page tells the reader not to set and a shell
block sets; two different defaults for one setting; one variable set to two
different literal values by the shell blocks of two pages (values that read
another variable, ``$X``, are not literals).

``{{ name }}`` substitutions are filled in before reading, so a page that writes
a variable through a substitution and a page that writes it out are compared.
``python -m ray_serve_npu_tooling.docs.consistency docs`` prints one ``file:line`` line
per claim of each contradiction and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ray_serve_npu import myst
from ray_serve_npu_tooling.docs.pages import read_page

ClaimKind = Literal["set", "unset", "default"]

_SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh"})
_ENV_NAME = r"[A-Z][A-Z0-9]*_[A-Z0-9_]+"
_SUBSTITUTION = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: ``export NAME=value``, ``NAME=value cmd``, ``-e NAME=value``; the value up to a space.
_SHELL_SET = re.compile(
    rf"(?:^|[\s;&(])(?:export\s+)?(?P<name>{_ENV_NAME})=(?P<value>\"[^\"]*\"|'[^']*'|[^\s;)&|]*)"
)
#: Words that tell the reader not to set what the sentence names.
_PROHIBITION = re.compile(
    r"\b(?:don't|do not|never|Don't|Do not|Never)\s+(?:export|set)\b"
    r"|\b[Ll]eave\b.+?\b(?:unset|out of)\b"
    r"|\b[Ss]et neither\b"
)
_NAMED_DEFAULT = re.compile(r"`(?P<name>[^`]+)`\s+defaults to\s+`(?P<value>[^`]+)`")
_SUBJECTLESS_DEFAULT = re.compile(
    r"`(?P<a>[^`]+)` is the default|[Dd]efault is\s+`(?P<b>[^`]+)`|defaults to\s+`(?P<c>[^`]+)`"
)
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


@dataclass(frozen=True)
class Claim:
    """One thing one page says about one setting."""

    setting: str
    kind: ClaimKind
    #: The value set, or the default; empty for ``unset``.
    value: str
    path: Path
    line: int

    def format(self) -> str:
        what = {
            "set": f"sets {self.setting}={self.value}",
            "unset": f"says not to set {self.setting}",
            "default": f"says {self.setting} defaults to {self.value}",
        }[self.kind]
        return f"{self.path}:{self.line}: {what}"


@dataclass(frozen=True)
class Contradiction:
    """Claims about one setting that can't all be true."""

    setting: str
    why: str
    claims: tuple[Claim, ...]

    def format(self) -> str:
        lines = [f"{self.setting}: {self.why}"]
        lines += [f"  {claim.format()}" for claim in self.claims]
        lines.append(
            "  fix: state the fact once, on its owner page, and {include} or {ref} it elsewhere"
        )
        return "\n".join(lines)


def setting_key(name: str) -> str:
    """The name claims are compared under: ``--gpu-memory-utilization`` and
    ``gpu_memory_utilization`` are one setting, and so are
    ``ascend_compilation_config.enable_static_kernel`` and ``enable_static_kernel``."""
    name = name.strip().split("=", 1)[0].strip()
    name = name.lstrip("-").replace("-", "_")
    return name.rsplit(".", 1)[-1]


def _value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text.lower() if text.lower() in ("true", "false") else text


def _fill(text: str, values: Mapping[str, str]) -> str:
    return _SUBSTITUTION.sub(lambda found: str(values.get(found.group(1), found.group(0))), text)


def _paragraphs(lines: Iterable[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """Runs of consecutive non-blank lines outside fences (comments and labels dropped)."""
    block: list[tuple[int, str]] = []
    previous = None
    for number, text in lines:
        skip = text.lstrip().startswith("%") or re.match(r"^\(.+\)=\s*$", text)
        if not text.strip() or skip or (previous is not None and number != previous + 1):
            if block:
                yield block
            block = []
        if text.strip() and not skip:
            block.append((number, text))
        previous = number
    if block:
        yield block


def _sentences(block: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Each sentence of a paragraph, with the line it starts on."""
    joined = ""
    starts: list[tuple[int, int]] = []
    for number, text in block:
        starts.append((len(joined), number))
        joined += text.strip() + " "
    position = 0
    for part in _SENTENCE_END.split(joined):
        offset = joined.index(part, position)
        position = offset + len(part)
        line = max((n for start, n in starts if start <= offset), default=block[0][0])
        yield line, part


def _subject(block: list[tuple[int, str]]) -> str | None:
    """The setting a definition-list entry or table row is about: its first code span."""
    first = block[0][1]
    if first.lstrip().startswith("|"):
        cells = [cell for cell in first.strip().strip("|").split("|")]
        return _first_code(cells[0]) if cells else None
    if len(block) > 1 and block[1][1].startswith(": "):
        return _first_code(first)
    return None


def _code(text: str) -> list[str]:
    """The code spans of ``text``, as :func:`ray_serve_npu.myst.inline_parts` reads them."""
    return [part.text for part in myst.inline_parts(text) if part.kind == "code"]


def _first_code(text: str) -> str | None:
    return next(iter(_code(text)), None)


def _rows(block: list[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """A table is one row per line; a definition list one entry per term."""
    if block[0][1].lstrip().startswith("|"):
        for row in block:
            yield [row]
        return
    entry: list[tuple[int, str]] = []
    for index, (number, text) in enumerate(block):
        is_term = (
            not text.startswith((": ", "  "))
            and index + 1 < len(block)
            and block[index + 1][1].startswith(": ")
        )
        if is_term and entry:
            yield entry
            entry = []
        entry.append((number, text))
    if entry:
        yield entry


def page_claims(path: Path, values: Mapping[str, str] | None = None) -> list[Claim]:
    """What one page claims about settings, with the line of each claim."""
    values = values or {}
    page = read_page(path)
    claims: list[Claim] = []
    for fence in page.fences:
        if fence.directive is not None or fence.language not in _SHELL_LANGUAGES:
            continue
        for number, text in fence.numbered_body:
            for found in _SHELL_SET.finditer(_fill(text, values)):
                value = _value(found.group("value"))
                if not value or "$" in value or "{{" in value:
                    continue
                claims.append(Claim(found.group("name"), "set", value, path, number))
    outside = [(number, _fill(text, values)) for number, text in page.text]
    for block in _paragraphs(outside):
        for row in _rows(block):
            subject = _subject(row)
            for number, sentence in _sentences(row):
                prohibition = _PROHIBITION.search(sentence)
                if prohibition:
                    for span in _code(sentence[prohibition.start() :]):
                        name = span.split("=", 1)[0]
                        if re.fullmatch(_ENV_NAME, name):
                            claims.append(Claim(name, "unset", "", path, number))
                named = list(_NAMED_DEFAULT.finditer(sentence))
                for found in named:
                    claims.append(
                        Claim(
                            setting_key(found.group("name")),
                            "default",
                            _value(found.group("value")),
                            path,
                            number,
                        )
                    )
                if subject is None or named:
                    continue
                for found in _SUBJECTLESS_DEFAULT.finditer(sentence):
                    value = found.group("a") or found.group("b") or found.group("c")
                    claims.append(
                        Claim(setting_key(subject), "default", _value(value), path, number)
                    )
    return claims


def contradictions(claims: Iterable[Claim]) -> list[Contradiction]:
    """The settings whose claims can't all hold, each with the claims that clash."""
    by_setting: dict[str, list[Claim]] = defaultdict(list)
    for claim in claims:
        by_setting[claim.setting].append(claim)
    found: list[Contradiction] = []
    for setting, said in sorted(by_setting.items()):
        sets = [claim for claim in said if claim.kind == "set"]
        unsets = [claim for claim in said if claim.kind == "unset"]
        defaults = [claim for claim in said if claim.kind == "default"]
        if sets and unsets:
            found.append(
                Contradiction(
                    setting, "one page says not to set it; another sets it", (*unsets, *sets)
                )
            )
        if len({claim.value for claim in defaults}) > 1:
            found.append(Contradiction(setting, "two different defaults", tuple(defaults)))
        set_values: dict[str, set[Path]] = defaultdict(set)
        for claim in sets:
            set_values[claim.value].add(claim.path)
        pages = {claim.path for claim in sets}
        if len(set_values) > 1 and len(pages) > 1:
            found.append(
                Contradiction(setting, "set to different values on different pages", tuple(sets))
            )
    return found


def page_paths(targets: Sequence[Path]) -> list[Path]:
    paths: list[Path] = []
    for target in targets:
        paths.extend(sorted(target.glob("*.md")) if target.is_dir() else [target])
    return paths


def check_pages(
    paths: Sequence[Path], values: Mapping[str, str] | None = None
) -> list[Contradiction]:
    claims = [claim for path in paths for claim in page_claims(path, values)]
    return contradictions(claims)


def site_substitutions(docs: Path) -> dict[str, str]:
    """The site's ``myst_substitutions``, read from its ``conf.py`` (needs its imports)."""
    namespace: dict[str, object] = {"__file__": str(docs / "conf.py")}
    exec(compile((docs / "conf.py").read_text(), str(docs / "conf.py"), "exec"), namespace)
    substitutions = namespace.get("myst_substitutions", {})
    assert isinstance(substitutions, dict)
    return {str(key): str(value) for key, value in substitutions.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ray_serve_npu_tooling.docs.consistency", description=__doc__
    )
    parser.add_argument("targets", nargs="+", type=Path, help="pages, or directories of pages")
    parser.add_argument(
        "--conf", type=Path, help="the docs directory whose conf.py gives the substitutions"
    )
    args = parser.parse_args(argv)
    values = site_substitutions(args.conf) if args.conf else {}
    paths = page_paths(args.targets)
    found = check_pages(paths, values)
    for contradiction in found:
        print(contradiction.format())
    print(f"{len(found)} contradiction(s) in {len(paths)} page(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
