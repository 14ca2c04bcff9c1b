"""The tally of a run, printed at its end: pages, blocks, run, checked statically, skipped."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tally:
    #: The tier that ran the pages (``fake-npu``, ``ascend``), None without ``--run-recipes``.
    tier: str | None
    shellcheck: bool
    #: Page (as shown) → number of blocks, from collection.
    pages: dict[str, int] = field(default_factory=dict)
    run: list[str] = field(default_factory=list)
    static: list[str] = field(default_factory=list)
    #: (where, why): blocks that did not run, each with the page's reason.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Languages shown on pages that have no checker (``text`` outside expected output...).
    unchecked: dict[str, int] = field(default_factory=dict)

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
        return lines
