"""What each block of a page is declared to do on each tier, from the page's markers.

The one reader of a page's markers is :func:`.blocks.read_page`; this module turns its
blocks into declared outcomes. The harness fails a block whose outcome differs from its
declared one (:mod:`.plugin`), and the docs build shows the same outcomes on every page
and in the table of docs/testing.md (``docs/_ext/test_status.py``), so a page can't
claim a run the suite does not make.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .blocks import Block, Language, PageItem, read_page
from .markers import MarkerKind, skipped_on


class Status(enum.Enum):
    RUN = "run"
    STATIC = "checked statically"
    SKIPPED = "skipped"
    #: A language without a checker (``text``...): shown, neither checked nor run.
    SHOWN = "shown only"


class Mode(enum.Enum):
    """Where the blocks are tested: without ``--run-recipes``, or with it on a tier."""

    STATIC = "static checks only"
    FAKE = "fake-NPU tier"
    ASCEND = "Ascend runners"


@dataclass(frozen=True)
class Outcome:
    status: Status
    #: Why the block did not run (skipped only).
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.status.value} ({self.reason})" if self.reason else self.status.value


RUN = Outcome(Status.RUN)
STATIC = Outcome(Status.STATIC)
SHOWN = Outcome(Status.SHOWN)
#: The reason a ``cluster`` block is skipped on a fake tier (the harness adds the tier's name).
CLUSTER_ON_FAKE = "replaced by the fake tier's own Ray cluster"
OUTPUT_OF_SKIPPED = "expected output of the previous block, which did not run"
#: A shell line that runs ``docker`` (not a continuation naming ``docker-compose.yaml``).
#: The Ascend runners' job runs inside a container (.github/workflows/ascend-recipes.yml)
#: that has no Docker, so such a block can't run there.
_DOCKER_LINE = re.compile(r"^\s*(?:sudo\s+)?docker(?:\s|$)")


def declared_outcomes(items: Iterable[PageItem], mode: Mode) -> list[tuple[Block, Outcome]]:
    """Every block of a page (as :func:`.blocks.read_page` reads it) with its declared outcome.

    Items that are page problems have none: their test fails whatever the mode.
    """
    declared: list[tuple[Block, Outcome]] = []
    previous: tuple[Block, Outcome] | None = None
    for item in items:
        if item.block is None:
            continue
        outcome = _declared(item.block, previous, mode)
        declared.append((item.block, outcome))
        previous = (item.block, outcome)
    return declared


def _declared(block: Block, previous: tuple[Block, Outcome] | None, mode: Mode) -> Outcome:
    kind = block.kind
    if block.language is Language.OTHER and kind is not MarkerKind.OUTPUT:
        return SHOWN
    if mode is Mode.STATIC:
        return STATIC
    fake = mode is Mode.FAKE
    if block.marker is not None and skipped_on(kind, fake=fake):
        return Outcome(Status.SKIPPED, f"[{block.marker.kind.value}] {block.marker.reason}")
    if kind is MarkerKind.OUTPUT:
        # Compared with what the block before printed; server and cluster blocks print none.
        printed = (
            previous is not None
            and previous[1] == RUN
            and previous[0].language is Language.SHELL
            and previous[0].kind not in (MarkerKind.CLUSTER, MarkerKind.SERVER)
        )
        return RUN if printed else Outcome(Status.SKIPPED, OUTPUT_OF_SKIPPED)
    if block.language is not Language.SHELL:
        return STATIC
    if kind is MarkerKind.CLUSTER and fake:
        return Outcome(Status.SKIPPED, CLUSTER_ON_FAKE)
    return RUN


def calls_docker(block: Block) -> bool:
    """Whether a shell block runs ``docker`` (which the Ascend runners' container lacks)."""
    return block.language is Language.SHELL and any(
        _DOCKER_LINE.match(line) for line in block.text.splitlines()
    )


def same_status(declared: Outcome, actual: Outcome) -> bool:
    """Whether an outcome is what was declared (reasons may name the tier; statuses must agree)."""
    return declared.status is actual.status


@dataclass(frozen=True)
class PageStatus:
    """One page's blocks and their declared outcome in each mode a page is shown for."""

    page: Path
    fake: list[tuple[Block, Outcome]]
    ascend: list[tuple[Block, Outcome]]

    @property
    def blocks(self) -> int:
        return len(self.fake)

    def counts(self, mode: Mode) -> Counter[Status]:
        return Counter(outcome.status for _, outcome in self.outcomes(mode))

    def outcomes(self, mode: Mode) -> list[tuple[Block, Outcome]]:
        if mode is Mode.FAKE:
            return self.fake
        if mode is Mode.ASCEND:
            return self.ascend
        raise ValueError(f"pages show the fake-NPU and Ascend outcomes, not {mode.value!r}")

    def runs_docker(self, mode: Mode) -> int:
        """How many blocks declared to run in ``mode`` call ``docker``."""
        return sum(
            1
            for block, outcome in self.outcomes(mode)
            if outcome.status is Status.RUN and calls_docker(block)
        )


def page_status(text: str, page: Path, docs_root: Path) -> PageStatus:
    """The declared outcomes of a page's blocks on the fake-NPU tier and on Ascend runners."""
    items: Sequence[PageItem] = read_page(text, page, docs_root)
    return PageStatus(
        page, declared_outcomes(items, Mode.FAKE), declared_outcomes(items, Mode.ASCEND)
    )
