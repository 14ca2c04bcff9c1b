"""The harness end to end: seeded pages run through the real root conftest in a nested pytest.

Each breakage the harness exists to catch is applied to a copy of a good page; the nested
run must fail with a message naming the page and the line. Runs use the mock tier.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from ray_serve_npu_tooling.harness.plugin import TIER_CHOICE, TierChoice

from ray_serve_npu.fake_npu.processes import free_port

from .mock_tier import MockTier

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SEEDED = Path(__file__).parent / "pages"
PAGE = "docs/page.md"
#: The seeded files name the contract's port; each run swaps in a free one.
PAGE_PORT = "8000"


@dataclass
class SeededRepo:
    pytester: pytest.Pytester
    port: int
    tier: MockTier

    def edit(self, path: str, old: str, new: str) -> int:
        """Replace the one ``old`` in ``path`` by ``new``; the line where ``new`` starts."""
        file = self.pytester.path / path
        text = file.read_text()
        old, new = (s.replace(PAGE_PORT, str(self.port)) for s in (old, new))
        assert text.count(old) == 1, f"{old!r} must occur once in {path}"
        file.write_text(text.replace(old, new))
        return text.count("\n", 0, text.index(old)) + 1

    def run(self, *args: str) -> pytest.RunResult:
        tier = self.tier

        class MockTierChoice:
            @staticmethod
            def pytest_configure(config: pytest.Config) -> None:
                config.stash[TIER_CHOICE] = TierChoice(
                    tier.name, tier.fake, lambda _workdir: contextlib.nullcontext(tier)
                )

        return self.pytester.runpytest_inprocess("-p", "no:cacheprovider", *args,
                                                 plugins=[MockTierChoice()])  # fmt: skip


@pytest.fixture
def seeded(pytester: pytest.Pytester) -> SeededRepo:
    """A repository with the real root conftest and the seeded docs/ and recipes/."""
    port = free_port()
    shutil.copy(REPO / "conftest.py", pytester.path / "conftest.py")
    (pytester.path / "pytest.ini").write_text("[pytest]\naddopts = -ra\n")
    for seeded_file in SEEDED.rglob("*"):
        if seeded_file.is_file():
            target = pytester.path / seeded_file.relative_to(SEEDED)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(seeded_file.read_text().replace(PAGE_PORT, str(port)))
    return SeededRepo(pytester, port, MockTier("mock-model"))


def test_good_page_passes_static_checks_with_a_summary(seeded: SeededRepo) -> None:
    result = seeded.run()
    result.assert_outcomes(passed=19)
    result.stdout.fnmatch_lines([
        "*docs harness (static checks only, no --run-recipes): 1 pages, 19 blocks: "
        "0 run, 18 checked statically, 0 skipped with reason",
        "*shown only, no checker for: text (1)",
    ])  # fmt: skip
    assert seeded.tier.served == []


def test_good_page_runs_on_the_mock_tier_in_page_order(seeded: SeededRepo) -> None:
    result = seeded.run("--run-recipes", "-v")
    result.assert_outcomes(passed=16, skipped=3)
    result.stdout.fnmatch_lines([
        "*docs/page.md::line:6,bash-cluster[[]mock[]] SKIPPED*",
        "*docs/page.md::line:13,bash-server[[]mock[]] PASSED*",
        "*docs/page.md::line:28,bash[[]mock[]] PASSED*",
        "*docs harness (tier mock): 1 pages, 19 blocks: 9 run, 6 checked statically, "
        "3 skipped with reason",
        "*docs/page.md:6: replaced by the mock tier's own Ray cluster",
        "*docs/page.md:*: [[]skip[]] downloads the weights (hundreds of GB)",
        "*docs/page.md:*: [[]skip-fake[]] npu-smi needs Ascend devices",
    ])  # fmt: skip
    assert [(command, port) for command, _, port in seeded.tier.served] == [
        ("python serve_mock.py", seeded.port)
    ]
    assert seeded.tier.stopped == [seeded.port]
    result.stdout.fnmatch_lines(["SKIPPED * docs/page.md:118: [[]skip[]] downloads the weights*"])


@dataclass(frozen=True)
class Breakage:
    """One edit that must break the suite, and the message it must break it with."""

    name: str
    path: str
    old: str
    new: str
    message: str
    #: Breakages only a run can see need --run-recipes.
    run: bool = False


BREAKAGES = [
    Breakage(
        "curl-model-differs-from-model-id",
        PAGE,
        '"model": "mock-model", "messages"',
        '"model": "other-model", "messages"',
        "model 'other-model' is not what the server serves: 'mock-model' "
        "(from recipes/serve_mock.py)",
    ),
    Breakage(
        "wrong-port",
        PAGE,
        "curl -s http://127.0.0.1:8000/v1/models",
        "curl -s http://127.0.0.1:1/v1/models",
        "http://127.0.0.1:1 uses port 1; the server listens on {port} (from recipes/serve_mock.py)",
    ),
    Breakage(
        "missing-literalinclude-marker",
        PAGE,
        ":start-after: __client_start__",
        ":start-after: __client_begin__",
        "literalinclude ../recipes/client_openai.py: start-after pattern not found: "
        "__client_begin__",
    ),
    Breakage(
        "python-syntax-error",
        PAGE,
        'client = OpenAI(base_url="http://localhost:8000/v1", api_key="not-used")',
        'client = OpenAI(base_url="http://localhost:8000/v1", api_key="not-used"',
        "Python syntax error: '(' was never closed",
    ),
    Breakage(
        "shell-syntax-error",
        PAGE,
        "ray start --head --resources '{\"NPU\": 8}'",
        'ray start --head --resources \'{"NPU": 8}',
        "shell syntax error (bash -n): unexpected EOF while looking for matching",
    ),
    Breakage(
        "output-no-longer-matches",
        "recipes/client_openai.py",
        'print("Reply:", ',
        'print("Answer:", ',
        "the output of the block at docs/page.md:75 no longer matches:",
        run=True,
    ),
]


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda b: b.name)
def test_breakage_fails_the_suite_naming_page_and_line(
    seeded: SeededRepo, breakage: Breakage
) -> None:
    line = seeded.edit(breakage.path, breakage.old, breakage.new)
    result = seeded.run(*(["--run-recipes"] if breakage.run else []))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1, passed=result.parseoutcomes()["passed"],
                           skipped=result.parseoutcomes().get("skipped", 0))  # fmt: skip
    where = f"{PAGE}:{line}" if breakage.path == PAGE else f"{PAGE}:80"
    message = breakage.message.format(port=seeded.port)
    result.stdout.fnmatch_lines([f"{where}: {message}*", "  fix: *"])
    if breakage.run:
        # The page's server stops after its last block, also when a block failed.
        assert seeded.tier.stopped == [seeded.port]


def test_without_pages_run_recipes_says_so_and_needs_no_server(seeded: SeededRepo) -> None:
    shutil.rmtree(seeded.pytester.path / "docs")
    # A test of the recipe tier (tooling's tiers module): --run-recipes selects it.
    seeded.pytester.makepyfile(
        test_other="import pytest\n\n@pytest.mark.fake_npu\ndef test_other():\n    assert True\n"
    )
    result = seeded.run("--run-recipes")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*tier mock): 0 pages, 0 blocks*", "*no pages found under docs/"])
    assert seeded.tier.served == []


JOINING_TEST = """\
import pytest
from ray_serve_npu_tooling.harness.blocks import named_block
from ray_serve_npu_tooling.harness.server_config import server_config

pytestmark = [pytest.mark.fake_npu, pytest.mark.joins_page("docs/page.md")]


def test_joins_the_pages_server(fake_tier_servers, request):
    root = request.config.rootpath
    block = named_block(root / "docs" / "page.md", root / "docs", "mock_server")
    port = server_config(block, root / "recipes").port
    fake_tier_servers.serve(block.text, cwd=root / "recipes", port=port)
"""


def test_a_test_that_joins_a_page_runs_after_it_on_the_server_it_left_up(
    seeded: SeededRepo,
) -> None:
    seeded.edit(
        PAGE,
        "% test: server\n```bash\npython serve_mock.py\n```\n",
        "% __mock_server_start__\n% test: server\n```bash\npython serve_mock.py\n```\n"
        "% __mock_server_end__\n",
    )
    # Collected before docs/ ("checks" < "docs"), run after the page.
    (seeded.pytester.path / "checks").mkdir()
    (seeded.pytester.path / "checks" / "test_joining.py").write_text(JOINING_TEST)
    result = seeded.run("--run-recipes", "-v")
    result.assert_outcomes(passed=17, skipped=3)
    ran = [line for line in result.outlines if " PASSED" in line or " SKIPPED" in line]
    assert "checks/test_joining.py::test_joins_the_pages_server" in ran[-1]
    # One server for the page and the test; stopped once, when the session ended.
    assert [(command, port) for command, _, port in seeded.tier.served] == [
        ("python serve_mock.py", seeded.port)
    ]
    assert seeded.tier.stopped == [seeded.port]
