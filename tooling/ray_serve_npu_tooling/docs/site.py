"""Build the site's editions the way ``nox -s docs`` does, for the tests to inspect.

Within a test run, :func:`built` builds each builder and edition once: the run's first
caller builds it into :data:`SITE_CACHE_ENV_VAR`'s directory, which the root conftest
makes for the run, and every later caller in any pytest-xdist worker reads that build.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: Where a test run keeps the builds of :func:`built` (unset: each caller builds its own).
SITE_CACHE_ENV_VAR = "RAY_SERVE_NPU_SITE_CACHE"
#: The file a finished build leaves beside its output.
_FINISHED = ".built"

#: The site's editions: language -> directory below the built site. The English source
#: is the root; each translation comes from docs/locale/<language>/. nox, the tests and
#: the browser test read it here.
EDITIONS: dict[str, str] = {"en": "", "zh_CN": "zh_CN"}


def build(docs: Path, out: Path, *, language: str = "en", builder: str = "html") -> Path:
    """Run sphinx-build with warnings as errors; return ``out``. Raises on any warning."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q"]
    command += ["-b", builder, "-D", f"language={language}", str(docs), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return out


@contextlib.contextmanager
def built(docs: Path, *, builder: str, language: str = "en") -> Iterator[Path]:
    """The site built by ``builder`` in ``language``'s edition, as :func:`build` builds it.

    With :data:`SITE_CACHE_ENV_VAR` set, the build is the run's, made once under a lock:
    HTML editions sit as ``nox -s docs`` lays them out, English at the root and each
    translation in its directory below, so that the language switch's links hold, and
    other builders' editions side by side, one directory each. Without it, the build is
    this caller's alone, in a directory of its own removed when the block ends.
    """
    cache = os.environ.get(SITE_CACHE_ENV_VAR)
    if not cache:
        with tempfile.TemporaryDirectory(prefix=f"site-{builder}-") as out:
            yield build(docs, Path(out), language=language, builder=builder)
        return
    # A run may build other sources than the site's (a test's own pages): one place each.
    sources = hashlib.sha256(str(docs.resolve()).encode()).hexdigest()[:12]
    root = Path(cache) / sources / builder
    out = root / (EDITIONS[language] if builder == "html" else language)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{language}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        finished = out / _FINISHED
        if not finished.exists():
            build(docs, out, language=language, builder=builder)
            finished.touch()
    yield out
