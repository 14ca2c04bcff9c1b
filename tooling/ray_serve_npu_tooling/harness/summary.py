"""The tally of a run, printed at its end: pages, blocks, run, checked statically, skipped."""

from __future__ import annotations

from dataclasses import dataclass, field

from .problems import Location, PageProblem
from .status import Outcome, Status


@dataclass
class Tally:
    #: The tier that ran the pages (``fake-npu``, ``ascend``), None without ``--run-recipes``.
    tier: str | None
    shellcheck: bool
    #: Page (as shown) → number of blocks, from collection.
    pages: dict[str, int] = field(default_factory=dict)
    #: What happened to each block that finished its test, in the order they finished.
    outcomes: dict[Location, Outcome] = field(default_factory=dict)
    #: Blocks whose outcome differs from the one their page declares.
    mismatches: list[PageProblem] = field(default_factory=list)
    #: Languages shown on pages that have no checker (``text`` outside expected output...).
    unchecked: dict[str, int] = field(default_factory=dict)

    def record(self, where: Location, outcome: Outcome) -> None:
        self.outcomes[where] = outcome

    def _with(self, status: Status) -> list[tuple[Location, Outcome]]:
        return [(where, o) for where, o in self.outcomes.items() if o.status is status]

    @property
    def run(self) -> list[str]:
        return [str(where) for where, _ in self._with(Status.RUN)]

    @property
    def static(self) -> list[str]:
        return [str(where) for where, _ in self._with(Status.STATIC)]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """(where, why): blocks that did not run, each with the page's reason."""
        return [(str(where), o.reason) for where, o in self._with(Status.SKIPPED)]

    def lines(self) -> list[str]:
        blocks = sum(self.pages.values())
        mode = f"tier {self.tier}" if self.tier else "static checks only, no --run-recipes"
        lines = [
            f"docs harness ({mode}): {len(self.pages)} pages, {blocks} blocks: "
            f"{len(self.run)} run, {len(self.static)} checked statically, "
            f"{len(self.skipped)} skipped with reason"
        ]
        if not self.pages:
            lines.append("  no pages found under docs/")
        if not self.shellcheck:
            lines.append("  shellcheck is not installed: shell blocks got bash -n only")
        if self.unchecked:
            shown = ", ".join(f"{name} ({count})" for name, count in sorted(self.unchecked.items()))
            lines.append(f"  shown only, no checker for: {shown}")
        if self.skipped:
            lines.append("  skipped with reason:")
            lines += [f"    {where}: {why}" for where, why in self.skipped]
        if self.mismatches:
            lines.append(f"  {len(self.mismatches)} block(s) differ from their declared status:")
            lines += [f"    {problem.where}: {problem.what}" for problem in self.mismatches]
        elif self.outcomes:
            lines.append(f"  all {len(self.outcomes)} finished blocks match their declared status")
        return lines
