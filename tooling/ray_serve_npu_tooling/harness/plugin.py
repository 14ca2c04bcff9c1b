"""The pytest plugin: Sybil collects ``docs/**/*.md``; each block is one test, in page order.

Without ``--run-recipes`` every block gets its static checks. With it, each page also runs
as one scenario on the selected tier (:func:`.ascend_tier.select_tier`).
Either way, a block whose outcome (run, checked statically, skipped, shown only) differs from
the one its page declares (:mod:`.status`) fails, naming both.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.integration.pytest import SybilItem

from ray_serve_npu.envs import CLIENT_API_KEY_ENV_VAR
from ray_serve_npu_tooling.harness.tier import Tier

from ..tiers import RECIPE_TIER_MARKER
from .blocks import Block, Language, PageItem, read_page
from .client_checks import check_client_block
from .markers import MarkerKind
from .problems import PageProblem, display_path
from .scenario import PageScenario, reader_home
from .server_config import ServerConfig, server_config
from .servers import ServerKeeper
from .static_checks import STATIC_CHECKS, shellcheck_path
from .status import SHOWN, STATIC, Mode, Outcome, declared_outcomes, same_status
from .substitutions import code_substituter
from .summary import Tally

RUN_RECIPES = "--run-recipes"
#: ``@pytest.mark.joins_page("docs/PAGE.md")``: the test needs the server that page starts
#: to be up (``fake_tier_servers``); with ``--run-recipes`` it runs right after the page.
JOINS_PAGE = "joins_page"


@dataclass(frozen=True)
class TierChoice:
    """The tier pages run on: its name (known at collection, for test ids) and how to start it."""

    name: str
    #: Whether it fakes the NPUs (``Tier.fake``): what the pages declare for it depends on it.
    fake: bool
    start: Callable[[Path], contextlib.AbstractContextManager[Tier]]


#: Set by a conftest's ``pytest_configure`` to run pages on another tier (the self-tests' mock).
TIER_CHOICE = pytest.StashKey[TierChoice]()
_TALLY = pytest.StashKey[Tally]()
_SYBIL = pytest.StashKey[Sybil]()
#: The key of the tally's lines in an xdist worker's output, and the lines the controller got.
_WORKER_TALLY = "docs_harness_tally"
_TALLIES_OF_WORKERS = pytest.StashKey[list[list[str]]]()


@dataclass(frozen=True)
class BlockInPage:
    """A page item with what its checks need from the rest of the page."""

    item: PageItem
    #: The server block the item's clients talk to (the last one before it).
    server: Block | None
    #: The block right before it (what an expected-output block belongs to).
    previous: Block | None
    #: What the page declares for the block in this run (None for a page problem).
    declared: Outcome | None


@dataclass
class PageRun:
    """One page's state while its blocks are tested (the ``docs_page`` fixture)."""

    tally: Tally
    recipes: Path
    scenario: PageScenario | None
    server_configs: dict[int, ServerConfig | PageProblem] = field(default_factory=dict)

    def server_config(self, server: Block) -> ServerConfig:
        if server.line not in self.server_configs:
            try:
                self.server_configs[server.line] = server_config(server, self.recipes)
            except PageProblem as problem:
                self.server_configs[server.line] = problem
        found = self.server_configs[server.line]
        if isinstance(found, PageProblem):
            raise found
        return found


def check_block(in_page: BlockInPage, page_run: PageRun) -> None:
    """Static checks of one block, then (with a scenario) its run; raises PageProblem."""
    if in_page.item.problem is not None:
        raise in_page.item.problem
    block = in_page.item.block
    assert block is not None
    check = STATIC_CHECKS.get(block.language)
    if check is None and block.kind is not MarkerKind.OUTPUT:
        # Shown only (``text``...): nothing to check or run; the summary counts it.
        unchecked = page_run.tally.unchecked
        unchecked[block.language_name] = unchecked.get(block.language_name, 0) + 1
        page_run.tally.record(block.where, SHOWN)
        return
    if check is not None:
        check(block)
    if block.kind is MarkerKind.OUTPUT and (
        in_page.previous is None or in_page.previous.language is not Language.SHELL
    ):
        raise PageProblem(
            block.where,
            "expected output that follows no shell block",
            "put `% test: output` right after the bash block whose output it shows",
        )
    config = None
    if block.kind is MarkerKind.SERVER:
        config = page_run.server_config(block)
    elif in_page.server is not None:
        try:
            served = page_run.server_config(in_page.server)
        except PageProblem:
            served = None  # the server block's own test reports it
        if served is not None:
            check_client_block(block, served, page_run.recipes)
    if page_run.scenario is None:
        page_run.tally.record(block.where, STATIC)
    else:
        page_run.scenario.run(block, config)


def evaluate(example: Example) -> str | None:
    in_page: BlockInPage = example.parsed
    page_run: PageRun = example.namespace["docs_page"]
    try:
        check_block(in_page, page_run)
    except PageProblem as problem:
        return str(problem)
    except pytest.skip.Exception:
        mismatch = declared_mismatch(in_page, page_run)
        if mismatch is not None:
            return mismatch
        raise
    return declared_mismatch(in_page, page_run)


def declared_mismatch(in_page: BlockInPage, page_run: PageRun) -> str | None:
    """A failure message where the block's outcome is not the one its page declares."""
    block, declared = in_page.item.block, in_page.declared
    if block is None or declared is None:
        return None
    actual = page_run.tally.outcomes.get(block.where)
    if actual is not None and same_status(declared, actual):
        return None
    tier = page_run.tally.tier or "static"
    problem = PageProblem(
        block.where,
        f"the page declares this block {declared} on the {tier} tier, "
        f"but it was {actual or 'not recorded'}",
        "fix the block's `% test:` marker, or the harness where it no longer does what "
        "the marker declares (tooling/ray_serve_npu_tooling/harness/status.py)",
    )
    page_run.tally.mismatches.append(problem)
    return str(problem)


class DocsSybil(Sybil):
    """Sybil over ``docs/``: MyST pages outside ``_build``-like folders, ids naming the tier."""

    def __init__(self, docs_root: Path, tier_label: str, mode: Mode, tally: Tally) -> None:
        super().__init__(
            parsers=[self.parse_page], path=str(docs_root), fixtures=["docs_page"], name="docs"
        )
        self.docs_root = docs_root
        self.tier_label = tier_label
        self.mode = mode
        self.tally = tally

    @functools.cached_property
    def substitute(self) -> Callable[[str], str]:
        return code_substituter(self.docs_root)

    def parse(self, path: Path) -> Document:
        """As Sybil's, on the page text after the build's code substitutions (same lines)."""
        document = Document(self.substitute(path.read_text(encoding=self.encoding)), str(path))
        for parser in self.parsers:
            for region in parser(document):
                document.add(region)
        return document

    def should_parse(self, path: Path) -> bool:
        try:
            relative = path.relative_to(self.docs_root)
        except ValueError:
            return False
        return path.suffix == ".md" and not any(p.startswith(("_", ".")) for p in relative.parts)

    def identify(self, example: Example) -> str:
        in_page: BlockInPage = example.parsed
        label = in_page.item.block.label if in_page.item.block else "page"
        return f"line:{example.line},{label}[{self.tier_label}]"

    def parse_page(self, document: Document) -> Iterator[Region]:
        items = read_page(document.text, Path(document.path), self.docs_root)
        self.tally.pages[display_path(Path(document.path))] = len(items)
        declared = {block.where: outcome for block, outcome in declared_outcomes(items, self.mode)}
        server = previous = None
        for item in items:
            outcome = declared.get(item.block.where) if item.block else None
            yield Region(
                item.start, item.end, BlockInPage(item, server, previous, outcome), evaluate
            )
            if item.block is not None:
                previous = item.block
                if item.block.kind is MarkerKind.SERVER:
                    server = item.block


def _tier_choice(config: pytest.Config) -> TierChoice:
    if TIER_CHOICE not in config.stash:
        from .ascend_tier import detect_npus, planned_tier_name, select_tier

        npus = detect_npus()
        config.stash[TIER_CHOICE] = TierChoice(
            planned_tier_name(npus), not npus, lambda workdir: select_tier(workdir, npus=npus)
        )
    return config.stash[TIER_CHOICE]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("docs harness").addoption(
        RUN_RECIPES,
        action="store_true",
        help="run every page's recipes: on Ascend NPUs where present, else on the fake-NPU tier",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = Tally(tier=None, shellcheck=shellcheck_path() is not None)
    config.addinivalue_line(
        "markers",
        f"{JOINS_PAGE}(page): needs the server the page (docs/...md) starts, and joins it",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if _SYBIL not in config.stash:
        tally = config.stash[_TALLY]
        mode = Mode.STATIC
        if config.getoption(RUN_RECIPES):
            choice = _tier_choice(config)
            tally.tier = choice.name
            mode = Mode.FAKE if choice.fake else Mode.ASCEND
        config.stash[_SYBIL] = DocsSybil(
            config.rootpath / "docs", tally.tier or "static", mode, tally
        )
    return config.stash[_SYBIL].pytest()(file_path, parent)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--run-recipes``, move each test marked ``joins_page`` right after its page's
    blocks, so that it finds the page's server still up; a page not collected moves nothing."""
    if not config.getoption(RUN_RECIPES):
        return
    joining: dict[Path, list[pytest.Item]] = {}
    for item in items:
        marker = item.get_closest_marker(JOINS_PAGE)
        if marker is not None:
            joining.setdefault(config.rootpath / marker.args[0], []).append(item)
    for page, tests in joining.items():
        blocks = [index for index, item in enumerate(items) if item.path == page]
        if not blocks:
            continue
        after = items[blocks[-1]]
        for test in tests:
            items.remove(test)
        at = items.index(after) + 1
        items[at:at] = tests


def pytest_itemcollected(item: pytest.Item) -> None:
    """With ``--run-recipes``, a page's blocks run on the recipe tier: mark them so (.tiers)."""
    if isinstance(item, SybilItem) and item.config.getoption(RUN_RECIPES):
        item.add_marker(RECIPE_TIER_MARKER)


@pytest.fixture(scope="session")
def recipe_tier(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tier]:
    """The tier every page runs on, started once for the session."""
    choice = _tier_choice(request.config)
    with choice.start(tmp_path_factory.mktemp("recipe-tier")) as tier:
        if (tier.name, tier.fake) != (choice.name, choice.fake):
            raise RuntimeError(f"tier {tier.name!r} started where {choice.name!r} was planned")
        yield tier


@pytest.fixture(scope="session")
def recipe_servers(recipe_tier: Tier, recipe_home: Path | None) -> Iterator[ServerKeeper]:
    """The pages' servers on the recipe tier, one at a time; the last stops with the session.
    They run in the pages' home, as the pages' other blocks do: a server block reads the
    key file there."""
    env = {"HOME": str(recipe_home)} if recipe_home else {}
    with ServerKeeper(recipe_tier, env) as servers:
        yield servers


@pytest.fixture(scope="session")
def fake_tier_servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerKeeper]:
    """Servers on the fake-NPU tier, for tests that need a recipe's server up.

    Where the pages run on the fake tier, these are the pages' own (``recipe_servers``),
    so a test joins the server a page left up; elsewhere (an Ascend host) a fake tier of
    the tests' own.
    """
    if _tier_choice(request.config).fake:
        yield request.getfixturevalue("recipe_servers")
        return
    # Imported here: the fake tier imports Ray.
    from ray_serve_npu.fake_npu.fake_tier import fake_npu_tier

    with fake_npu_tier(tmp_path_factory.mktemp("fake-tier")) as tier:
        home = reader_home(tmp_path_factory.mktemp("home"), tier.api_key)
        with ServerKeeper(tier, {"HOME": str(home)}) as servers:
            yield servers


@pytest.fixture(scope="session")
def recipe_home(recipe_tier: Tier, tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The pages' home directory on a fake tier, with the tier's API key in the pages' key
    file; None on the Ascend tier, whose blocks use the host's home as written."""
    # A tier that gives its clients no key (the harness's mock tier) leaves the home as is.
    api_key = recipe_tier.env().get(CLIENT_API_KEY_ENV_VAR)
    if not recipe_tier.fake or api_key is None:
        return None
    return reader_home(tmp_path_factory.mktemp("home"), api_key)


@pytest.fixture(scope="module")
def docs_page(request: pytest.FixtureRequest) -> Iterator[PageRun]:
    """One page's run; what its blocks started stops after its last block, also on failure,
    but for a server the tier's cluster outlives (``recipe_servers`` keeps it)."""
    config = request.config
    tally = config.stash[_TALLY]
    recipes = config.rootpath / "recipes"
    with contextlib.ExitStack() as stack:
        scenario = None
        if config.getoption(RUN_RECIPES):
            servers: ServerKeeper = request.getfixturevalue("recipe_servers")
            home: Path | None = request.getfixturevalue("recipe_home")
            scenario = PageScenario(servers, recipes, stack, tally, home)
        yield PageRun(tally, recipes, scenario)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker: hand the tally's lines to the controller, which prints them."""
    workeroutput = getattr(session.config, "workeroutput", None)
    tally = session.config.stash[_TALLY]
    # Every worker collects every page; only the one that ran blocks has a tally to show.
    if workeroutput is not None and (tally.outcomes or tally.mismatches):
        workeroutput[_WORKER_TALLY] = tally.lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """In the pytest-xdist controller: keep the lines of each worker that ran pages."""
    lines = getattr(node, "workeroutput", {}).get(_WORKER_TALLY)
    if lines:
        node.config.stash.setdefault(_TALLIES_OF_WORKERS, []).append(lines)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    tally = config.stash[_TALLY]
    if config.pluginmanager.has_plugin("dsession"):
        # The controller of xdist workers collects nothing: the workers' tallies are the run.
        tallies = config.stash.get(_TALLIES_OF_WORKERS, [])
    else:
        tallies = [tally.lines()] if tally.pages or config.getoption(RUN_RECIPES) else []
    if not tallies and not config.getoption(RUN_RECIPES):
        return
    terminalreporter.section("docs harness")
    if not tallies:
        terminalreporter.write_line("no worker ran a page")
    for lines in tallies:
        for line in lines:
            terminalreporter.write_line(line)
