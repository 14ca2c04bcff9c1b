"""Style checks for the site's pages, after Ray's documentation style guide.

``python -m ray_serve_npu_tooling.docs.style docs`` prints one ``file:line: rule: message
(fix: ...)`` line per finding and exits 1 if there is any; ``nox -s lint`` runs it.
Ray's docs team checks these by hand in review (ray-project/ray,
``doc/source/ray-contribute/writing-style.md``); here CI checks them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ray_serve_npu import myst
from ray_serve_npu.hardware import NODE_KINDS
from ray_serve_npu_tooling.docs.pages import NUMBER_WORDS, Page, read_page

#: Names that keep their capitals inside a sentence-case heading. Words with a
#: capital after the first letter (NPU, vLLM, DeepSeek-V4, KubeRay) pass anyway.
PROPER_NOUNS: tuple[str, ...] = (
    "Ray Serve LLM",
    "Ray Serve",
    "Ray",
    "Docker Compose",
    "Docker",
    "Compose",
    "Ascend",
    "Atlas",
    "Huawei",
    "DeepSeek",
    "ModelScope",
    "Kubernetes",
    "Python",
    "Ubuntu",
    "Chinese",
    "English",
    "Sphinx",
    "Linux",
    # The node kinds, by the names the plugin gives them.
    *NODE_KINDS,
)

#: Phrases the style guide asks to replace: (pattern, what is wrong, the fix).
BANNED_PHRASES: tuple[tuple[str, str, str], ...] = (
    (r"\be\.g\.", "Latin abbreviation 'e.g.'", "write 'for example'"),
    (r"\bi\.e\.", "Latin abbreviation 'i.e.'", "write 'that is'"),
    (r"\betc\.", "'etc.'", "end the list, or write 'and so on'"),
    (r"\bvs\.", "'vs.'", "write 'versus' or 'compared with'"),
    (r"\bit is recommended\b", "passive recommendation", "give the advice in the imperative"),
    (r"\bcurrently\b", "'currently' dates the page", "state the fact, or name the version"),
    (r"\brefer to\b", "'refer to'", "write 'see'"),
    (r"\bin order to\b", "'in order to'", "write 'to'"),
    (r"\bsimply\b", "'simply'", "drop it"),
    (r"\*\*Note:\*\*", "bold 'Note:' label", "use a :::{note} admonition"),
)

#: Terms a reader may not know: the first use of each on a page links to its
#: glossary entry, with ``{term}`gang``` or ``{term}`gangs <gang>```.
LINKED_TERMS: tuple[str, ...] = (
    "bundle",
    "community guide",
    "data parallelism",
    "direct ingress",
    "direct streaming",
    "DP",
    "EP",
    "expert parallelism",
    "gang",
    "GCS",
    "HAProxy",
    "PACK",
    "raylet",
    "STRICT_PACK",
    "tensor parallelism",
    "TP",
    "TPOT",
    "TTFT",
)

#: Adjectives that sell rather than inform; two of them in a list make a benefits list.
_BENEFIT_WORDS = (
    r"(scalable|efficient|seamless|powerful|robust|flexible|reliable|easy|fast|"
    r"high-performance|cost-effective|production-ready|OpenAI-compatible)"
)
_BENEFITS_LIST = re.compile(
    rf"\b{_BENEFIT_WORDS}(,\s*(and\s+)?|\s+and\s+){_BENEFIT_WORDS}\b", re.IGNORECASE
)
_SELLING_WORDS = re.compile(
    r"\b(seamless(ly)?|effortless(ly)?|blazing(ly)?|cutting-edge|state-of-the-art|"
    r"best-in-class|powerful)\b",
    re.IGNORECASE,
)

#: A lone digit in prose, unless it is part of a number, name, version or unit.
_SMALL_NUMBER = re.compile(
    r"(?<![\w.\-/×#])(?P<digit>[0-9])(?![\w.,:/%×\-]|\s*(GB|GiB|MB|K|M|G|ms|s|x)\b)"
)
#: "Step 1:" titles and "1M" sizes keep numerals; so do ranges of device ids.
_NUMBERED_TITLE = re.compile(r"\b(Step|step|Figure|Table)\s+\d+")

_SHELL_PROMPT = re.compile(r"^\s*\$\s")
_RAY_LATEST = re.compile(r"https?://docs\.ray\.io/en/latest/\S*?([\w-]+)\.html")


@dataclass(frozen=True)
class Finding:
    """One style problem at one line of one page."""

    path: Path
    line: int
    rule: str
    message: str
    fix: str

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message} (fix: {self.fix})"


@dataclass(frozen=True)
class Site:
    """What a rule may need to know beyond its page."""

    #: The site's page names (file stems).
    pages: frozenset[str] = frozenset()
    #: The terms the glossary page defines; empty when the glossary isn't checked.
    glossary: frozenset[str] = frozenset()


Rule = Callable[[Page, Site], Iterator[Finding]]

GLOSSARY_PAGE = "glossary"
_TERM_ROLE = re.compile(r"\{term\}`(?:[^`<]*<(?P<target>[^>`]+)>|(?P<text>[^`]+))`")


def glossary_terms(path: Path) -> frozenset[str]:
    """The terms of a page's ``{glossary}`` blocks: their unindented lines."""
    return frozenset(
        line.strip()
        for fence in myst.fences(path.read_text(encoding="utf-8"))
        if fence.directive == "glossary"
        for line in fence.body
        if line.strip() and not line[:1].isspace()
    )


def _term_pattern(term: str) -> re.Pattern[str]:
    """A term in prose: acronyms as written (``DP4`` counts), words in any case, plural too."""
    if term.isupper() or "_" in term:
        return re.compile(rf"(?<![\w-]){re.escape(term)}(?![A-Za-z_-])")
    return re.compile(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", re.IGNORECASE)


def _strip_proper_nouns(text: str) -> str:
    for noun in PROPER_NOUNS:
        # A placeholder, not nothing: a proper noun can be the clause's first word.
        text = re.sub(rf"\b{re.escape(noun)}\b", "_", text)
    return text


def _miscased_words(heading: str) -> list[str]:
    """Words of ``heading`` that sentence case would write in lower case."""
    words: list[str] = []
    # The first word of the heading and the first word after a colon keep their capital.
    for clause in re.split(r":\s+", heading):
        for word in re.findall(r"[^\s/()]+", _strip_proper_nouns(clause))[1:]:
            if word[:1].isupper() and not any(c.isupper() for c in word[1:]):
                words.append(word)
    return words


def heading_case(page: Page, _: Site) -> Iterator[Finding]:
    for line, text in page.headings:
        for word in _miscased_words(text):
            yield Finding(
                page.path,
                line,
                "heading-case",
                f"'{word}' is capitalized in a heading",
                f"sentence case: write '{word.lower()}', or add a proper noun to PROPER_NOUNS",
            )


def html_meta(page: Page, _: Site) -> Iterator[Finding]:
    myst = (page.front_matter or {}).get("myst")
    meta = myst.get("html_meta") if isinstance(myst, dict) else None
    if not (isinstance(meta, dict) and str(meta.get("description", "")).strip()):
        yield Finding(
            page.path,
            1,
            "html-meta",
            "no html_meta description in the front matter",
            "start the page with front matter 'myst: html_meta: description: ...'",
        )


def own_pages_on_docs_ray_io(page: Page, site: Site) -> Iterator[Finding]:
    for line, text in page.text:
        for found in _RAY_LATEST.finditer(text):
            target = found.group(1)
            if target in site.pages and target != "index":
                yield Finding(
                    page.path,
                    line,
                    "latest-link",
                    f"docs.ray.io/en/latest link to this site's page '{target}'",
                    f"cross-reference it: {{doc}}`{target}`",
                )


def shell_prompts(page: Page, _: Site) -> Iterator[Finding]:
    for fence in page.fences:
        for line, text in fence.numbered_body:
            if _SHELL_PROMPT.match(text):
                yield Finding(
                    page.path,
                    line,
                    "shell-prompt",
                    "'$' prompt in a code block",
                    "drop the '$ ' so the copy button copies a runnable command",
                )


def fence_languages(page: Page, _: Site) -> Iterator[Finding]:
    for fence in page.fences:
        if fence.directive not in (None, "literalinclude", "code-block", "code"):
            continue
        if not fence.language:
            yield Finding(
                page.path,
                fence.line,
                "fence-language",
                "code block without a language",
                "name one: bash, python, yaml, json, toml, dockerfile or text",
            )


def banned_phrases(page: Page, _: Site) -> Iterator[Finding]:
    for line, text in page.prose:
        for pattern, what, fix in BANNED_PHRASES:
            if re.search(pattern, text, re.IGNORECASE):
                yield Finding(page.path, line, "banned-phrase", what, fix)
        if _BENEFITS_LIST.search(text) or _SELLING_WORDS.search(text):
            yield Finding(
                page.path,
                line,
                "benefits-list",
                "selling words or a list of benefits",
                "cut it: say what the page does, not why it is good",
            )


def small_numbers(page: Page, _: Site) -> Iterator[Finding]:
    for line, text in page.prose + page.headings:
        text = _NUMBERED_TITLE.sub(" ", text)
        # Markdown ordered-list markers are numerals by nature.
        text = re.sub(r"^\s*\d+\.\s", " ", text)
        for found in _SMALL_NUMBER.finditer(text):
            digit = int(found.group("digit"))
            yield Finding(
                page.path,
                line,
                "number-words",
                f"numeral {digit} in prose",
                f"write '{NUMBER_WORDS[digit]}' (zero to nine in words; units, versions "
                "and code keep numerals)",
            )


def glossary_links(page: Page, site: Site) -> Iterator[Finding]:
    """The first use of each of LINKED_TERMS on a page is a ``{term}`` link to it."""
    if page.path.stem == GLOSSARY_PAGE or not site.glossary:
        return
    linked: dict[str, int] = {}
    for line, text in page.text:
        for role in _TERM_ROLE.finditer(text):
            linked.setdefault((role.group("target") or role.group("text")).strip(), line)
    for term in LINKED_TERMS:
        pattern = _term_pattern(term)
        used = next((line for line, text in page.prose if pattern.search(text)), None)
        if used is None or linked.get(term, used + 1) <= used:
            continue
        if term not in site.glossary:
            yield Finding(
                page.path, used, "glossary-link", f"'{term}' has no glossary entry",
                f"define it in {GLOSSARY_PAGE}.md",
            )  # fmt: skip
        else:
            yield Finding(
                page.path, used, "glossary-link",
                f"first use of '{term}' on the page doesn't link to the glossary",
                f"write {{term}}`{term}` here (or {{term}}`text <{term}>`)",
            )  # fmt: skip


RULES: tuple[Rule, ...] = (
    heading_case,
    html_meta,
    own_pages_on_docs_ray_io,
    shell_prompts,
    fence_languages,
    banned_phrases,
    small_numbers,
    glossary_links,
)


def check_pages(paths: Iterable[Path]) -> list[Finding]:
    """Every finding of every rule on the pages, in file and line order."""
    pages = [read_page(path) for path in sorted(paths)]
    glossary = next((page for page in pages if page.path.stem == GLOSSARY_PAGE), None)
    site = Site(
        pages=frozenset(page.path.stem for page in pages),
        glossary=glossary_terms(glossary.path) if glossary else frozenset(),
    )
    findings = [finding for page in pages for rule in RULES for finding in rule(page, site)]
    return sorted(findings, key=lambda f: (str(f.path), f.line, f.rule))


def page_paths(targets: Sequence[Path]) -> list[Path]:
    """The pages named, and the ``*.md`` pages of the directories named."""
    paths: list[Path] = []
    for target in targets:
        paths.extend(sorted(target.glob("*.md")) if target.is_dir() else [target])
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ray_serve_npu_tooling.docs.style", description=__doc__
    )
    parser.add_argument("targets", nargs="+", type=Path, help="pages, or directories of pages")
    args = parser.parse_args(argv)
    paths = page_paths(args.targets)
    findings = check_pages(paths)
    for finding in findings:
        print(finding.format())
    print(f"{len(findings)} style finding(s) in {len(paths)} page(s)", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
