"""The product's text analysis, `kg_text` (schema/0002 defines the same for SurrealDB):
split where the character class changes (letters, digits; punctuation and spaces
separate), lowercase, fold accents to ASCII, English Snowball stems. It is tantivy's
analyzer: the fact and entity indexes are tantivy indexes that use it, and every other
ranking of text by terms (a query's passages, the sentences of summaries) analyses
with it too, through `terms` and `bm25`.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np
import tantivy

NAME = "kg_text"
K1, B = 1.2, 0.75  # BM25, as tantivy's and SurrealDB's defaults

ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(r"[^\W\d_]+|\d+"))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.ascii_fold())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, repeats kept."""
    return list(ANALYZER.analyze(text))


def bm25(texts: Sequence[str], query: Sequence[str]) -> np.ndarray:
    """BM25 of each of a few texts (one query's candidates) for the query's terms, each
    counted once, 0 where none: the scores tantivy gives in an index of these texts."""
    scores = np.zeros(len(texts), dtype=np.float32)
    wanted = sorted(set(query))
    analysed = [terms(text) for text in texts]
    if not wanted or not any(analysed):
        return scores
    ranker = bm25s.BM25(k1=K1, b=B, method="lucene")
    ranker.index([words or [""] for words in analysed], show_progress=False)
    # bm25s leaves out BM25's constant (k1 + 1) factor, as Lucene does since 8.0.
    return np.asarray(ranker.get_scores(wanted), dtype=np.float32) * (K1 + 1)
