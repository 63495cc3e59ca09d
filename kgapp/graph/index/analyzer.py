"""The text analysis of the in-process BM25 index, the same as the `kg_text` analyzer
of schema/0002: lowercase, fold accents to ASCII, split where the character class
changes (letters, digits; punctuation and spaces separate), English Snowball stems.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata

import snowballstemmer

_TOKEN = re.compile(r"[^\W\d_]+|\d+")
_local = threading.local()


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, repeats kept."""
    folded = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode()
    return [_stem(word) for word in _TOKEN.findall(folded)]


@functools.lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:  # a Snowball stemmer keeps state between calls: one per thread
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))
