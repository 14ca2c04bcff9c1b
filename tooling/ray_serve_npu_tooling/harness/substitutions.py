"""The site's own ``{{ name }}`` substitution in code fences: blocks read as built pages show.

Sphinx runs ``docs/conf.py``, whose ``myst_substitutions`` the ``code_substitutions``
extension (``docs/_ext``) applies inside fences; the harness does the same.
"""

from __future__ import annotations

import functools
import runpy
from collections.abc import Callable
from pathlib import Path

#: The docs extension that substitutes inside fences.
EXTENSION = "code_substitutions"


def _unchanged(text: str) -> str:
    return text


@functools.lru_cache(maxsize=4)
def code_substituter(docs_root: Path) -> Callable[[str], str]:
    """The build's code substitutions, as a function; no change where the site has none."""
    conf = docs_root / "conf.py"
    if not conf.is_file():
        return _unchanged
    # As Sphinx: conf.py runs (and puts docs/_ext on sys.path), then the extension imports.
    namespace = runpy.run_path(str(conf))
    if EXTENSION not in namespace.get("extensions", []):
        return _unchanged
    substitute_code = __import__(EXTENSION).substitute_code
    values = dict(namespace.get("myst_substitutions", {}))
    return lambda text: substitute_code(text, values)
