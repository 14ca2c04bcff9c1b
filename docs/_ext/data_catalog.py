"""The translations of the data's own sentences that the generated tables show.

The release matrix and the pairings table quote sentences from the release data and
the pairing session's file (a pairing's reason, where a release was read, how a pair
was installed). Sphinx's gettext builder never sees them (generated nodes carry no
source), so they have a catalogue of their own, ``<locale>/<language>/LC_MESSAGES/
release-data.po``, one message per sentence as the data writes it (whitespace
collapsed). ``nox -s docs-po`` rewrites it from the data (:func:`write_catalog`): new
sentences arrive untranslated, sentences the data no longer has leave. A build in
another language than English translates each sentence through it
(:func:`translator`), and fails on one it has no translation for, naming the sentence
and the fix. Error messages quoted verbatim are not data sentences: they stay as the
software printed them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

#: The catalogue's name beside the pages' (``release-data.po``).
DOMAIN = "release-data"


class MissingTranslation(LookupError):
    """A data sentence that the build's language has no translation for."""


def normalized(text: str) -> str:
    """A data sentence as the catalogue keys it: whitespace collapsed, as the tables show it."""
    return " ".join(text.split())


def catalog_path(locale_dir: Path, language: str) -> Path:
    return locale_dir / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def translator(locale_dir: Path, language: str | None) -> Callable[[str], str]:
    """Each data sentence in ``language``: itself in English; else its translation, or
    :class:`MissingTranslation` naming the sentence and the catalogue."""
    if language in (None, "en"):
        return normalized
    path = catalog_path(locale_dir, language)
    translations: dict[str, str] = {}
    if path.is_file():
        with path.open("rb") as stream:
            for message in read_po(stream):
                if message.id and message.string and not message.fuzzy:
                    translations[str(message.id)] = str(message.string)

    def translate(text: str) -> str:
        key = normalized(text)
        try:
            return translations[key]
        except KeyError:
            raise MissingTranslation(
                f"{path}: no {language} translation of the data sentence {key!r}; fix: run "
                "`nox -s docs-po`, then translate it there"
            ) from None

    return translate


def write_catalog(locale_dir: Path, language: str, sentences: Iterable[str]) -> list[str]:
    """Rewrite the language's catalogue to hold exactly ``sentences``, keeping each one's
    translation; return the sentences that have none yet."""
    path = catalog_path(locale_dir, language)
    kept: dict[str, tuple[str, bool]] = {}
    if path.is_file():
        with path.open("rb") as stream:
            kept = {str(m.id): (str(m.string), m.fuzzy) for m in read_po(stream) if m.id}
    catalog = Catalog(locale=language, project="ray-serve-npu", domain=DOMAIN)
    untranslated = []
    for sentence in dict.fromkeys(normalized(s) for s in sentences):
        # A translation in progress (fuzzy) stays, and still counts as missing.
        string, fuzzy = kept.get(sentence, ("", False))
        catalog.add(sentence, string, flags=["fuzzy"] if fuzzy else [])
        if not string or fuzzy:
            untranslated.append(sentence)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        write_po(stream, catalog, width=0, omit_header=True)
    return untranslated
