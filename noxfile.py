"""Sessions: the suite's three tiers, ``nox -s tests`` (the fast tier, after every change),
``nox -s recipes`` (the fake-NPU tier) and ``nox -s compat`` (the plugin at the older
tested Rays); ``nox -s docs`` (the site in every edition), ``nox -s lint`` (code and page
style), ``nox -s docs-po`` (update translations), ``nox -s pairings`` (which Ray runs
beside which vLLM, measured), ``nox -s bench`` (direct vLLM against
Ray Serve LLM on the fake-NPU tier), ``nox -s release`` (build the sdist and wheel and
check them as .github/workflows/release.yml does)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import nox
from nox.virtualenv import VirtualEnv

# The site's editions (language -> directory below the built site) have one owner, the
# tooling's site module, which imports nothing: read it from source.
sys.path.insert(0, str(Path(__file__).parent / "tooling"))
from ray_serve_npu_tooling.docs.site import EDITIONS  # noqa: E402

nox.options.sessions = ["lint", "tests", "docs"]
#: Locally, reuse session virtualenvs; CI builds them fresh, so nothing
#: installed by hand can hide a missing install step.
FRESH_VIRTUALENVS = os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}
nox.options.reuse_existing_virtualenvs = not FRESH_VIRTUALENVS

ROOT = Path(__file__).parent
#: The repository's tooling (tooling/pyproject.toml): the docs harness, the mock engine,
#: the site's checks. Installed beside the product wherever they run; never in its wheel.
TOOLING = "./tooling"
#: Built site and test artifacts live outside the source tree.
BUILD = ROOT / "build"

#: Test environment for each tested point of the supported Ray range
#: (src/ray_serve_npu/compat.py, TESTED_RAY). Each Ray's Serve LLM needs the vLLM it
#: pins (RAY_VLLM_PINS); at 2.60 that is vLLM's CPU build, which runs the engine
#: here; at the older points (2.56.1, 2.57.1, 2.58.1) it is PyPI's CUDA build, which
#: imports without a GPU but cannot run an engine.
RAY_STACKS: dict[str, list[str]] = {
    # bench: tests/bench run the sweep tool, which draws its plots with matplotlib.
    "2.60.0": ["ray[serve]==2.60.0", ".[cpu-engine,test,bench]"],
    # fastapi: with vLLM 0.22.0, pip takes the newest fastapi, and Ray 2.56.1's
    # Serve answers 400 to every request under fastapi 0.137 and later
    # (src/ray_serve_npu/compat.py, RAY_2_56_FASTAPI); 0.136.3 is what the 2.57.1
    # stack resolves under vLLM 0.25.1's cap.
    "2.56.1": ["ray[serve]==2.56.1", "vllm==0.22.0", "fastapi==0.136.3", "pyarrow", ".[test]"],
    # The Ray whose Serve LLM pins vLLM 0.25.1, the vLLM of vLLM-Ascend v0.25.1rc1.
    # pyarrow: ray.serve.llm imports pyarrow.fs, which ray[serve] does not bring.
    # No fastapi pin: vLLM 0.25.1 caps fastapi below 0.137, and Ray 2.57's Serve
    # pickles the lock of newer ones (ray/serve/_private/utils.py).
    "2.57.1": ["ray[serve]==2.57.1", "vllm==0.25.1", "pyarrow", ".[test]"],
    # The Ray whose Serve LLM pins vLLM 0.26.0, the vLLM of vLLM-Ascend v0.26.0rc1.
    "2.58.1": ["ray[serve]==2.58.1", "vllm==0.26.0", "pyarrow", ".[test]"],
}

#: The newest tested Ray: its vLLM is the CPU build, which runs an engine here, so the
#: fast tier and the fake-NPU tier both run on its stack.
NEWEST_RAY = "2.60.0"
#: The other tested Rays, whose vLLM (PyPI's CUDA build) imports here but runs no engine:
#: ``nox -s compat`` runs the plugin's tests of both tiers at each.
OLDER_RAYS = [ray for ray in RAY_STACKS if ray != NEWEST_RAY]

#: What each session runs (tooling/ray_serve_npu_tooling/tiers.py says what a tier
#: selects), and the minutes it is designed to fit from a fresh clone on a two-core
#: machine, install included: logged beside its time, not enforced, since the machine's
#: speed varies between runs (README gives the last measured figures).
TIER_ARGS: dict[str, list[str]] = {
    # Every test that starts no vLLM engine; the pages' blocks checked statically.
    "tests": [],
    # Every page run on the fake-NPU tier and every test marked fake_npu.
    "recipes": ["--run-recipes"],
    # The plugin's tests of both tiers, at each older Ray. Which module imports Ray, and
    # whether any import circle exists, is the plugin's own layering, not Ray's: the
    # fast tier checks it at the newest Ray, in fresh interpreters.
    "compat": ["--tier", "all", "tests/plugin", "--ignore=tests/plugin/test_import_cost.py"],
}
BUDGET_MINUTES: dict[str, int] = {"tests": 10, "recipes": 25, "compat": 10}

#: Two pytest-xdist workers where tests can run side by side, each group of tests that
#: share something in one of them (tooling/ray_serve_npu_tooling/worker_groups.py). The
#: fake-NPU tier runs in one process: each of its tests starts a Ray cluster, an engine or
#: a server, and one such cluster already keeps both cores busy (worker_groups.RAY_GROUP).
PYTEST_WORKERS: dict[str, list[str]] = {
    "tests": ["-n", "2", "--dist", "loadgroup"],
    "recipes": [],
    "compat": ["-n", "2", "--dist", "loadgroup"],
}
#: Every session lists its 25 slowest tests, to show where its budget goes.
PYTEST_DURATIONS = "--durations=25"

#: Keep Ray's files and tokens out of the home directory. Unset
#: PYTHONDONTWRITEBYTECODE (None removes a variable): the sessions install with
#: --no-compile, so with it set no .pyc is ever written, and every Ray worker and
#: engine process compiles each module it imports again. One fake-tier module from an
#: empty bytecode cache took 381 s with the variable set against 205 s without (one
#: run each, 2026-12-01).
TEST_ENV: dict[str, str | None] = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "PYTHONDONTWRITEBYTECODE": None,
}
#: Where the fake tier keeps its tiny models across runs
#: (ray_serve_npu.envs.CACHE_DIR_ENV_VAR).
TINY_MODEL_CACHE_ENV_VAR = "RAY_SERVE_NPU_TMPDIR"


@nox.session
def tests(session: nox.Session) -> None:
    """The fast tier, README's test command: every test that starts no vLLM engine, and
    every page's blocks checked statically, at the newest tested Ray."""
    _run_tier(session, "tests", NEWEST_RAY)


@nox.session
def recipes(session: nox.Session) -> None:
    """The fake-NPU tier (pytest --run-recipes): every page run, every fake_npu test."""
    _run_tier(session, "recipes", NEWEST_RAY)


# uv builds the older Rays' environments (PyPI's CUDA torch, about 9 GB each) faster
# than pip; without uv installed, nox falls back to virtualenv and pip.
@nox.session(venv_backend="uv|virtualenv")
@nox.parametrize("ray", OLDER_RAYS)
def compat(session: nox.Session, ray: str) -> None:
    """The plugin's tests of both tiers at an older tested Ray, beside the vLLM it pins."""
    _run_tier(session, "compat", ray)


def _run_tier(session: nox.Session, tier: str, ray: str) -> None:
    """Install ``ray``'s stack, run ``tier``'s pytest, and log its wall time and budget."""
    started = time.monotonic()
    tmp = BUILD / f"tmp-{tier}-ray-{ray}"
    tmp.mkdir(parents=True, exist_ok=True)
    installed_only = False
    try:
        _install_stack(session, ray)
        ran = session.run(
            "pytest",
            *PYTEST_WORKERS[tier],
            PYTEST_DURATIONS,
            *TIER_ARGS[tier],
            *session.posargs,
            env={**TEST_ENV, TINY_MODEL_CACHE_ENV_VAR: str(tmp)},
        )
        # --install-only: nox skips pytest (run returns None); the environment is the point.
        installed_only = ran is None
    finally:
        if not installed_only:
            _drop_unreused_virtualenv(session)
        minutes = (time.monotonic() - started) / 60
        session.log(
            f"{session.name}: {minutes:.1f} min, install included; nox -s {tier}'s budget "
            f"is {BUDGET_MINUTES[tier]} min on a two-core machine"
            + (" for every older Ray together" if tier == "compat" else "")
        )


def _install_stack(session: nox.Session, ray: str) -> None:
    """``ray``'s stack and the tooling; without torchvision and torchaudio."""
    uv = session.venv_backend == "uv"
    # --no-compile: pip would byte-compile all of torch, vLLM and Ray (gigabytes) at
    # install; the tests import a fraction of it, compiled on first import. Beside it,
    # the 2.57.1 stack installed in 257 s against 367 s (one run each, 2026-11-30).
    # uv compiles nothing unless asked.
    session.install(*([] if uv else ["--no-compile"]), *RAY_STACKS[ray], TOOLING)
    # vLLM's CPU build pulls CUDA builds of torchvision and torchaudio, which
    # break `import vllm` beside torch's CPU build; the engine needs neither.
    uninstall = ["uv", "pip", "uninstall"] if uv else ["pip", "uninstall", "-y", "-q"]
    session.run_install(*uninstall, "torchvision", "torchaudio", external=uv)


def _drop_unreused_virtualenv(session: nox.Session) -> None:
    """Delete a session's virtualenv that no later run will reuse (with CI set, or -N).

    The older Rays' stacks carry PyPI's CUDA torch, 8 to 9.5 GB each; kept
    side by side with the 2.60 one they filled CI's disk while 2.57.1 installed
    ("No space left on device", CI at 0f1c1e1). A failed install is deleted too.
    """
    venv = session.virtualenv
    if isinstance(venv, VirtualEnv) and not venv.reuse_existing:
        shutil.rmtree(venv.location, ignore_errors=True)


@nox.session(venv_backend="uv|virtualenv")
def pairings(session: nox.Session) -> None:
    """Which Ray runs beside which vLLM, measured pair by pair in environments of their own
    (ray_serve_npu_tooling.pairings); on demand, not in CI. Writes
    src/ray_serve_npu/releases/pairings.json. ``-- --pair 2.58.1:0.26.0`` measures one."""
    # The tooling editable: it finds the checkout (recipes/, the results file) beside itself.
    session.install("uv", ".", "-e", TOOLING)
    session.run("python", "-m", "ray_serve_npu_tooling.pairings", *session.posargs, env=TEST_ENV)


@nox.session(name="vllm-flags", venv_backend="uv|virtualenv")
def vllm_flags(session: nox.Session) -> None:
    """Store ``vllm serve``'s flags at one vLLM, which the checker judges flags by
    (ray_serve_npu_tooling.vllm_flags); on demand, not in CI. ``-- 0.23.0`` writes
    src/ray_serve_npu/releases/vllm_serve/0.23.0.json from vLLM 0.23.0's own parser."""
    if len(session.posargs) != 1:
        session.error("name one vLLM version: nox -s vllm-flags -- 0.23.0")
    (version,) = session.posargs
    # The PyPI build of that vLLM: the parser is the same in every build of it.
    session.install(f"vllm=={version}", "ruamel.yaml", "packaging")
    # Neither needs Ray to store flags; the product's own dependencies would bring it.
    session.install("--no-deps", ".", TOOLING)
    out = ROOT / "src" / "ray_serve_npu" / "releases" / "vllm_serve" / f"{version}.json"
    made_by = f"nox -s vllm-flags -- {version}"
    session.run("python", "-m", "ray_serve_npu_tooling.vllm_flags", "--made-by", made_by, str(out))


@nox.session
def bench(session: nox.Session) -> None:
    """Ray Serve LLM's request path in front of a mock engine, then direct vLLM against
    Ray Serve LLM with the engine unpaced and NPU-paced, side by side.

    On the fake-NPU tier (vLLM's CPU build, a tiny random model): ratios between
    the paths, not NPU figures. Not part of ``nox -s tests``; see docs/benchmarks.md.
    """
    # The end of the range whose vLLM (the CPU build) runs an engine here.
    session.install("ray[serve]==2.60.0", ".[cpu-engine,bench]", TOOLING)
    session.run_install("pip", "uninstall", "-y", "-q", "torchvision", "torchaudio")
    out = BUILD / "bench"
    tmp = BUILD / "tmp-bench"
    tmp.mkdir(parents=True, exist_ok=True)
    session.chdir(ROOT / "recipes")
    session.run(
        "python",
        "-m",
        "ray_serve_npu_tooling.bench.paths",
        "--out-dir",
        str(out),
        *session.posargs,
        env={**TEST_ENV, TINY_MODEL_CACHE_ENV_VAR: str(tmp)},
    )


@nox.session
def docs(session: nox.Session) -> None:
    """Build every edition of the site with warnings as errors."""
    session.install(".[docs]", TOOLING)
    out = BUILD / "docs" / "html"
    for language, directory in EDITIONS.items():
        session.run(
            "sphinx-build",
            "-W",
            "-n",
            "--keep-going",
            "-b",
            "html",
            "-D",
            f"language={language}",
            "docs",
            str(out / directory),
            env=TEST_ENV,
        )
    session.log(f"Site: {out / 'index.html'}")


@nox.session(name="docs-po")
def docs_po(session: nox.Session) -> None:
    """After a page changes: extract its messages and merge them into each edition's .po files.

    New and changed messages arrive untranslated (or fuzzy); tests/i18n lists them.
    Messages keep their substitutions as written (``{{ vllm_ascend_version }}``, in prose,
    inline code and link targets alike; docs/_ext/code_substitutions.py), so a
    translation that keeps them takes a new release's values without an update.
    """
    session.install(".[docs]", TOOLING)
    pot = BUILD / "gettext"
    session.run("sphinx-build", "-q", "-b", "gettext", "docs", str(pot), env=TEST_ENV)
    for language in EDITIONS:
        if language != "en":
            # -w -1: the catalogues keep one line per message, as they are kept.
            update = ["sphinx-intl", "update", "-w", "-1", "-p", str(pot), "-l", language]
            session.run(*update, "-d", "docs/locale")
    # The data's sentences that the generated tables quote have a catalogue of their own.
    session.run("python", "tools/release_data_catalog.py", env=TEST_ENV)


#: What a clean virtualenv with the wheel must do: the wheel's .pth file loads the
#: import hook at start-up, and the hook teaches Ray Serve LLM the npu kind when Ray's
#: accelerator module loads, before anything imports ray_serve_npu.
ACTIVATION_CHECK = """
import sys
assert "ray_serve_npu_autoload" in sys.modules, "the wheel's .pth file did not run"
from pydantic import TypeAdapter
from ray.llm._internal.serve.core.configs import accelerators
config = TypeAdapter(accelerators.AnyAcceleratorConfig).validate_python({"kind": "npu"})
assert type(config).__name__ == "NPUConfig", config
import ray_serve_npu
print("activated:", type(config).__name__, "from", ray_serve_npu.__file__)
"""


@nox.session
def release(session: nox.Session) -> None:
    """Build the sdist and wheel, check them as PyPI would, install the wheel into a
    clean virtualenv and activate it there, and write the release notes.

    What .github/workflows/release.yml runs before it publishes. The wheel is built
    from the sdist, so a file missing from the sdist fails here. The notes are the
    changelog's section for this version (build/release-notes.md); with
    ``-- --tag vX.Y.Z`` the tag must name the version and the section its date.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    session.install("build", "twine", ".[docs]", TOOLING)
    dist = BUILD / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(dist))
    session.run("twine", "check", "--strict", *sorted(map(str, dist.iterdir())))
    (wheel,) = dist.glob("*.whl")
    # The wheel and the newest tested Ray, nothing else: no vLLM, no test tools.
    ray = max(RAY_STACKS, key=lambda v: tuple(map(int, v.split("."))))
    venv = BUILD / "release-venv"
    session.run(sys.executable, "-m", "venv", "--clear", str(venv), external=True)
    python = str(venv / "bin" / "python")
    session.run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        str(wheel),
        f"ray[serve]=={ray}",
        external=True,
    )
    session.run(python, "-c", ACTIVATION_CHECK, external=True, env=TEST_ENV)
    session.run(str(venv / "bin" / "ray-serve-npu"), "--help", external=True, env=TEST_ENV)
    notes = BUILD / "release-notes.md"
    session.run(
        "python",
        "-m",
        "ray_serve_npu_tooling.docs.release_notes",
        "docs",
        version,
        str(notes),
        *session.posargs,
    )
    session.log(f"Built: {', '.join(path.name for path in sorted(dist.iterdir()))}; notes: {notes}")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the code; the import contracts (pyproject.toml's [tool.importlinter]); the
    style checker over the pages (each finding as file:line)."""
    # The style checker reads pages with ray_serve_npu.myst (markdown-it-py and its plugins)
    # and takes the node kinds' names from ray_serve_npu.hardware, which reads the release
    # data (packaging, pydantic, ruamel.yaml).
    session.install(
        "ruff", "import-linter", "pyyaml", "markdown-it-py", "mdit-py-plugins",
        "packaging", "pydantic", "ruamel.yaml",
    )  # fmt: skip
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # Without installing the project (and Ray): its sources, read and imported from src/.
    from_source = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tooling")])}
    session.run("lint-imports", env=from_source)
    session.run("python", "-m", "ray_serve_npu_tooling.docs.style", "docs", env=from_source)
