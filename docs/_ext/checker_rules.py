"""Render the checker's rules table (MyST/Markdown) from its rule files.

``render_rules(release)`` returns the table for one release; as a Sphinx
extension, ``setup`` writes every release's table to ``_generated/checker-rules.md``
at ``builder-inited``, for docs/checks.md to ``{include}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from upstream_links import role_for

from ray_serve_npu.check.rules import available_releases, load_rules


def _cell(text: str) -> str:
    # A pipe would end the cell; newlines would end the row.
    return " ".join(text.split()).replace("|", "\\|")


def render_rules(release: str) -> str:
    rules = load_rules(release)
    lines = [
        f"Rules for vLLM-Ascend {rules.release} (vLLM {rules.vllm_version}), generated from "
        f"`src/ray_serve_npu/check/rules/{rules.release}.yaml`.",
        "",
        "| Rule | Severity | What | Fix | Source |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in rules.rules:
        # The citation, linked to the file at its tag where a stored list holds it.
        source = rule.source.cite()
        source = (
            role_for(rule.source.repo, rule.source.ref, rule.source.file, rule.source.lines, source)
            or source
        )
        if not rule.source.verified_at_tag:
            source += " (not verified at the tag)"
        if rule.source.note:
            source += f". {rule.source.note}"
        # A rule the release's source contradicts never fires: say so instead of what it checks.
        severity, what, fix = rule.severity.value, rule.what, rule.fix
        if rule.not_applicable is not None:
            severity, what, fix = "none", f"Does not apply: {rule.not_applicable}", "None needed."
        lines.append(
            f"| `{rule.id}` | {severity} | {_cell(what)} | {_cell(fix)} | {_cell(source)} |"
        )
    return "\n".join(lines) + "\n"


def render_all_rules() -> str:
    """Every release's table, newest first, each under a heading of its own."""
    sections = [
        f"### vLLM-Ascend {release}\n\n{render_rules(release)}"
        for release in reversed(available_releases())
    ]
    return "\n".join(sections)


def _write_tables(app: Any) -> None:
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    (out / "checker-rules.md").write_text(render_all_rules())


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _write_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
