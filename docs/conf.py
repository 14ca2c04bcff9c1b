"""Sphinx configuration for the ray-serve-npu site (``nox -s docs``).

Every version and image tag on the pages comes from ``ray_serve_npu.compat`` and
``ray_serve_npu.hardware`` through ``myst_substitutions``; no number is restated here.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(DOCS / "_ext"))

from ray_serve_npu import compat, envs, hardware  # noqa: E402
from ray_serve_npu.releases import (  # noqa: E402
    COMPOSE_RELEASE,
    GUIDE_RELEASE,
    RELEASES,
    UNREAD_RELEASES,
    Release,
)
from ray_serve_npu.releases.pairings import pairings  # noqa: E402

if TYPE_CHECKING:
    from ray_serve_npu_tooling.bench.compare import Comparison

project = "ray-serve-npu"
author = "ray-serve-npu developers"
copyright = "2026, ray-serve-npu developers"

extensions = [
    "myst_nb",
    "sphinx_design",
    "sphinx_copybutton",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "code_substitutions",
    "recipe_pins",
    "editions",
    "checker_rules",
    "upstream_links",
    "test_status",
    "release_matrix",
    "nightly_runs",
    "model_architectures",
    "model_settings",
    "model_dry_run_table",
    "model_compose_file",
    "model_source_diffs",
    "table_words",
    "node_kinds",
    "bench_readings",
    "measured_figures",
]

# _generated holds tables the extensions write for pages to include.
# _static/bench holds the committed run of `nox -s bench` that pages include.
exclude_patterns = [
    "_build",
    "_generated",
    "_static/bench",
    "Thumbs.db",
    ".DS_Store",
    "**/.pytest_cache",
]
nitpicky = True
# Targets in Ray, pydantic and the standard library that this site has no inventory
# for (no intersphinx: the build must work without network access).
nitpick_ignore_regex = [
    (r"py:.*", r"(ray|pydantic|packaging|enum)\..*"),
    (r"py:.*", r"(PlacementGroup|Application|SpecifierSet|NodeKind|AscendRelease)"),
    (r"py:.*", r"(Literal|Any|Mapping|Enum|ASGIApp)"),
    # compat.AscendRelease is an alias of the release data's model, which the API
    # page does not document yet.
    (r"py:class", r"ray_serve_npu\.releases\.model\.Release"),
]

# MyST through myst-nb; no notebook is executed.
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "substitution", "deflist", "fieldlist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"

# -- Versions and image tags: defined once, from the package -----------------

_release = compat.VLLM_ASCEND
_ray = _release.ray
_newest_ray = compat.TESTED_RAY[-1]
# The releases that can't be read here whose vLLM the newest Ray served when measured: the
# first page names them where it says no supported release pairs with that Ray.
_newest_ray_unread = [
    tag for tag, data in UNREAD_RELEASES.items() if pairings().serves(_newest_ray, data.vllm)
]
if not _newest_ray_unread:
    raise ValueError(
        f"docs/conf.py: Ray {_newest_ray} served the vLLM of no unread release; fix the first "
        "page's sentence on it (index.md, {{ newest_ray_unread }})"
    )


def _release_facts(prefix: str, data: Release) -> dict[str, str]:
    """A release's versions, images and jemalloc paths, each name with ``prefix``: the
    Ray Serve LLM path's release unprefixed, the Compose path's as ``compose_*``."""
    facts = {
        "vllm_ascend_version": data.tag,
        "vllm_version": data.vllm,
        "cann_version": data.cann,
        "torch_version": data.torch,
        "torch_npu_version": data.torch_npu,
        "image_a2": data.image("A2"),
        "image_a3": data.image("A3"),
        "image_a2_openeuler": data.image("A2", "openeuler"),
        "jemalloc_ubuntu": data.jemalloc_paths["ubuntu"],
        "jemalloc_openeuler": data.jemalloc_paths["openeuler"],
    }
    return {f"{prefix}{name}": value for name, value in facts.items()}


def _readable_range(specifiers: object) -> str:
    """``>= 2.56.1, < 2.61`` for ``SpecifierSet(">=2.56.1,<2.61")``: lower bounds first."""
    order = {">": 0, ">=": 0, "~=": 1, "==": 1, "!=": 2, "<=": 3, "<": 3}
    ranked = sorted(specifiers, key=lambda s: (order.get(s.operator, 1), s.version))  # type: ignore[attr-defined]
    return ", ".join(f"{s.operator} {s.version}" for s in ranked)


def _run_when(levers_or_comparison: Path) -> str:
    """When a committed benchmark run was made: its file's first line, as the harness
    writes it ("Fake-NPU tier, 2026-12-01 09:33 UTC: ...")."""
    first = levers_or_comparison.read_text().splitlines()[0]
    found = re.match(r"Fake-NPU tier, (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC): ", first)
    if found is None:
        raise ValueError(f"{levers_or_comparison}: its first line names no run: {first!r}")
    return found[1]


def _bench_figures() -> dict[str, str]:
    """The figures the benchmarks page's prose cites, from the committed run of
    ``nox -s bench`` (docs/_static/bench/, copied from build/bench/)."""
    from ray_serve_npu_tooling.npu_pacing import BASELINE_OUTPUT_TOKENS_PER_S

    points = json.loads((DOCS / "_static" / "bench" / "capacity.json").read_text())
    levels = sorted({point["concurrency"] for point in points})

    def median(level: int, read: object) -> float:
        return statistics.median(read(p) for p in points if p["concurrency"] == level)  # type: ignore[operator]

    per_core = median(levels[-1], lambda p: p["output_tokens_per_cpu_s"])
    ttft = median(levels[0], lambda p: p["result"]["latency_ms"]["ttft"]["p50"])
    cpu_ms = median(levels[0], lambda p: p["cpu_ms_per_request"])
    rounds = len({point["round"] for point in points})

    def levels_of(regime: str) -> str:
        """The concurrency levels of one regime's comparison in the committed run."""
        run = _committed_run(DOCS / "_static" / "bench" / regime / "comparison.json")
        return ", ".join(str(level) for level in sorted({c.concurrency for c in run}))

    return {
        "bench_rounds": str(rounds),
        # One ratio's rounds all on one side of 1 by chance alone: one run in this many.
        "bench_chance": str(2 ** (rounds - 1)),
        "bench_paced_levels": levels_of("npu-paced"),
        "bench_unpaced_levels": levels_of("unpaced"),
        "bench_run_when": _run_when(DOCS / "_static" / "bench" / "comparison.md"),
        "vs_direct_npu_paced_when": _run_when(
            DOCS / "_static" / "bench" / "direct-streaming" / "npu-paced" / "levers.md"
        ),
        "bench_path_top_concurrency": str(levels[-1]),
        "bench_path_tokens_per_core": f"{per_core:.0f}",
        "bench_path_ttft_ms": f"{ttft:.0f}",
        "bench_path_cpu_ms_per_request": f"{cpu_ms:.0f}",
        "bench_baseline_output": str(BASELINE_OUTPUT_TOKENS_PER_S),
        "bench_baseline_core_share": f"{BASELINE_OUTPUT_TOKENS_PER_S / per_core:.2f}",
        **_bench_profile_figures(),
        **_bench_lever_figures(),
        **_soak_figures(),
    }


def _soak_figures() -> dict[str, str]:
    """What the testing page says of the committed run of ``nox -s bench -- --soak 30m``
    (docs/_static/bench/soak/, copied from build/bench/soak/)."""
    from ray_serve_npu_tooling.bench.soak_figures import SoakRun

    run = SoakRun.model_validate_json(
        (DOCS / "_static" / "bench" / "soak" / "soak.json").read_text()
    )
    counts = run.window(run.minutes)
    growth = {name: g for name, g in run.memory_growth().items() if g is not None}
    if not growth:
        raise ValueError(
            "docs/_static/bench/soak/soak.json: no process lived from the soak's start to its "
            "end, so the page has no growth to state; commit a run whose processes did"
        )
    largest = max(growth, key=lambda name: growth[name])
    return {
        "soak_minutes": str(len(run.minutes)),
        "soak_concurrency": str(run.settings.concurrency),
        "soak_when": run.started_at,
        "soak_command": run.command,
        "soak_completed": str(counts["completed"]),
        "soak_failed": str(counts["errors"]),
        "soak_hung": str(counts["hung"]),
        "soak_processes": str(len(run.rss_mib_at_start)),
        "soak_processes_gone": str(len(run.rss_mib_at_start) - len(growth)),
        "soak_largest_growth": f"{growth[largest]:+.1f} %",
        # `ray::ServeReplica:serve-npu:LLMServer:deepseek-v4-flash (pid 3272)` -> without pid
        "soak_largest_growth_process": largest.rsplit(" (pid ", 1)[0],
    }


def _bench_profile_figures() -> dict[str, str]:
    """The figures the page cites from the committed run of ``nox -s bench -- --profile``."""
    profile = json.loads((DOCS / "_static" / "bench" / "profile" / "profile.json").read_text())
    # The processes direct vLLM doesn't have: all but the engine's replica.
    hop = [p for p in profile["processes"] if not p["role"].startswith("LLMServer")]
    return {
        "bench_profile_concurrency": str(profile["concurrency"]),
        "bench_profile_hop_cores": f"{sum(p['cores'] for p in hop):.2f}",
    }


def _committed_run(path: Path) -> list[Comparison]:
    """A committed run's comparisons: a lever run's ``levers.json``, or a regime's
    ``comparison.json`` of the paths' comparison."""
    from ray_serve_npu_tooling.bench.compare import Comparison

    return [Comparison.model_validate(c) for c in json.loads(path.read_text())]


def _bench_lever_figures() -> dict[str, str]:
    """What the pages say around the committed lever runs' readings (which the
    ``bench-readings`` directive writes from the same files): the request path's
    targets, how many rounds and figures, how often chance alone leans a figure one
    way, and direct vLLM's own time to first token in the NPU-paced run."""
    from ray_serve_npu_tooling.bench.compare import (
        DEFAULT,
        DIRECT,
        PACED_THROUGHPUT_TARGET,
        PACED_TTFT_ADDED_TARGET_MS,
        PACED_TTFT_TARGET_CONCURRENCY,
        UNPACED_TARGET_CONCURRENCY,
        UNPACED_THROUGHPUT_TARGET,
    )
    from ray_serve_npu_tooling.bench.readings import readings

    bench = DOCS / "_static" / "bench"
    levers = _committed_run(bench / "levers" / "levers.json")
    rounds = len(levers[0].ttft_p50_ms)
    # A lever that changes nothing leans one way in every round once in this many runs;
    # each reading has two figures.
    chance = 2 ** (rounds - 1)
    figures_read = sum(len(r.figures) for r in readings(levers, DEFAULT, paced=False))
    paced = _committed_run(bench / "direct-streaming" / "npu-paced" / "levers.json")
    return {
        # The request path's targets, which the harness and the readings judge by.
        "target_paced_throughput": f"{PACED_THROUGHPUT_TARGET:g}",
        "target_paced_ttft_added_ms": f"{PACED_TTFT_ADDED_TARGET_MS:g}",
        # The two levels the pages name ("at concurrency 1 and 8").
        "target_paced_ttft_low": str(PACED_TTFT_TARGET_CONCURRENCY[0]),
        "target_paced_ttft_high": str(PACED_TTFT_TARGET_CONCURRENCY[-1]),
        "target_unpaced_throughput": f"{UNPACED_THROUGHPUT_TARGET:g}",
        "target_unpaced_concurrency": str(UNPACED_TARGET_CONCURRENCY),
        "lever_rounds": str(rounds),
        "lever_chance": str(chance),
        "lever_figures": str(figures_read),
        "lever_chance_figures": f"{figures_read / chance:.1f}",
        "vs_direct_npu_paced_rounds": str(len(paced[0].ttft_p50_ms)),
        **{
            f"vs_direct_npu_paced_direct_{c.concurrency}_ttft": f"{c.ttft:.0f}"
            for c in paced
            if c.target == DIRECT
        },
    }


myst_substitutions = {
    **_release_facts("", _release),
    **_release_facts("compose_", COMPOSE_RELEASE),
    # The release the community guide names: the tuning page's corrections are traced at it.
    "guide_vllm_ascend_version": GUIDE_RELEASE.tag,
    # The newest supported release with checker rules (the data's order: oldest first).
    "newest_checked_vllm_ascend": [tag for tag, data in RELEASES.items() if data.rules][-1],
    "ray_version": _ray,
    "ray_series": compat.ray_series(_ray),
    # Rays of another series that nox -s pairings measured serving beside the Ray
    # path's vLLM (ray_serve_npu.releases.pairings); the image build accepts them too.
    "measured_rays": ", ".join(
        ray
        for ray in pairings().serving_rays(_release.vllm)
        if compat.ray_series(ray) != compat.ray_series(_ray)
    )
    or "none",
    "ray_vllm_pin": compat.RAY_VLLM_PINS[_ray],
    "newest_ray": _newest_ray,
    "newest_ray_vllm_pin": compat.RAY_VLLM_PINS[_newest_ray],
    "newest_ray_unread": ", ".join(_newest_ray_unread),
    "supported_ray": _readable_range(compat.SUPPORTED_RAY),
    "ray_2_56_fastapi": str(compat.RAY_2_56_FASTAPI),
    "tested_ray_low": compat.TESTED_RAY[0],
    "tested_ray_high": compat.TESTED_RAY[-1],
    "tested_ray": ", ".join(compat.TESTED_RAY),
    # nox -s compat's Rays: every tested one but the newest.
    "older_tested_ray": ", ".join(compat.TESTED_RAY[:-1]),
    "image_repository": hardware.IMAGE_REPOSITORY,
    "a2_devices": str(hardware.A2.devices_per_node),
    "a3_devices": str(hardware.A3.devices_per_node),
    "a2_last_device": str(hardware.A2.devices_per_node - 1),
    "a3_last_device": str(hardware.A3.devices_per_node - 1),
    "npu_resource": hardware.NPU_RESOURCE,
    "visible_devices_env": envs.VISIBLE_DEVICES_ENV_VAR,
    "noset_visible_devices_env": envs.NOSET_VISIBLE_DEVICES_ENV_VAR,
    **_bench_figures(),
    # The loads and bounds tests/resilience asserts, as docs/troubleshooting.md states them.
    **{
        f"resilience_{name}": str(value)
        for name, value in json.loads(
            (ROOT / "tests" / "resilience" / "guarantees.json").read_text()
        ).items()
    },
}

# -- Editions: English source, Chinese through gettext ----------------------

#: ``docs/locale/zh_CN/LC_MESSAGES/<page>.po``; ``-D language=zh_CN`` builds the Chinese edition.
locale_dirs = ["locale/"]
# One catalog per page, so a page's translation lives beside its name.
gettext_compact = False

# -- HTML -------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = "ray-serve-npu"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # The first page's release matrix and the models page's table need the width more
    # than the pages need their own table of contents (tests/browser checks every table
    # at 1280 px).
    "secondary_sidebar_items": {"**": ["page-toc"], "index": [], "models": []},
    # No page links in the header: past five the theme folds the rest into a "More"
    # menu. The left sidebar lists every page instead.
    "navbar_center": [],
    "navbar_end": ["language-switcher", "theme-switcher", "navbar-icon-links"],
}
# The theme's own sidebar starts one level below the root, which on this flat site
# is empty; _templates/site-nav.html shows the root toctree.
html_sidebars = {"**": ["site-nav.html"]}
# The theme's colour mode starts empty without this and logs a console error.
html_context = {"default_mode": "auto"}
templates_path = ["_templates"]
# Without an icon, every page load asks the server for /favicon.ico and logs a 404.
html_favicon = "_static/favicon.svg"
# Only the stylesheet: the images in _static reach the pages through their directives.
html_static_path = ["_static/css"]
html_css_files = ["site.css"]
html_show_sourcelink = False

# No prompts on the pages; strip none, copy what is shown.
copybutton_exclude = ".linenos, .gp, .go"


def _prose_aware_inline_attribute(original):
    """Wrap napoleon's reader of attribute docstrings.

    Napoleon reads the first line of a data or attribute docstring as
    ``type: description``. The package's ``#:`` comments are prose that often
    starts with ``Some words: ...``; a "type" with spaces in it is prose, so keep
    the whole docstring as the description.
    """

    def consume(self):
        first = self._lines.get(0)
        head = first.split(":", 1)[0].strip() if isinstance(first, str) else ""
        if ":" in (first or "") and " " in head:
            return "", self._dedent(self._consume_to_end())
        return original(self)

    return consume


def setup(app):
    from sphinx.ext.napoleon import docstring

    docstring.GoogleDocstring._consume_inline_attribute = _prose_aware_inline_attribute(
        docstring.GoogleDocstring._consume_inline_attribute
    )
