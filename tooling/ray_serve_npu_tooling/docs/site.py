"""Build the site's editions the way ``nox -s docs`` does, for the tests to inspect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def build_site(docs: Path, out: Path) -> Path:
    """Every edition as HTML: English at ``out``, each translation in its directory below."""
    for language, directory in EDITIONS.items():
        build(docs, out / directory, language=language)
    return out
