"""Rewrite each edition's catalogue of the data sentences the generated tables show.

The release matrix and the pairings table quote sentences of the release data and of the
pairing session's file; docs/_ext/data_catalog.py says why they have a catalogue of their
own. ``nox -s docs-po`` runs this after it updates the pages' catalogues: new sentences
arrive untranslated (this prints them), and sentences the data no longer has leave.

    python tools/release_data_catalog.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from data_catalog import write_catalog  # noqa: E402
from editions import EDITIONS  # noqa: E402
from release_matrix import data_sentences  # noqa: E402

from ray_serve_npu.releases import PATH_RELEASES, RELEASES, UNREAD_RELEASES  # noqa: E402
from ray_serve_npu.releases.pairings import pairings  # noqa: E402


def main() -> int:
    sentences = data_sentences(
        RELEASES.values(), UNREAD_RELEASES.values(), PATH_RELEASES, pairings()
    )
    for language in EDITIONS:
        if language == "en":
            continue
        missing = write_catalog(ROOT / "docs" / "locale", language, sentences)
        for sentence in missing:
            print(f"{language}: untranslated: {sentence}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
