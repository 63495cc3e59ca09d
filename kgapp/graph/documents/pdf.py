"""PDF uploads: checked for a header when uploaded, read by the worker later, in a
child process under limits.

A small PDF can hold streams that inflate a thousandfold, millions of pages, or text
operators that take minutes to lay out. Reading one inside the process that serves
other work would hold it for as long as the file wants; here a child process reads it,
under a wall-clock timeout, a CPU-time and an address-space limit, with pypdf's
decompression capped per stream, and stops at a page count and a text length. Going
past any limit is a DocumentError (422) saying which, and the child is gone.

Run as `python -m kgapp.graph.documents.pdf LIMITS_JSON` with the PDF on stdin, the
child writes one JSON object to stdout: {"text": ...} or {"error": ...}.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.upload import ParsedDocument, Upload

MODULE = "kgapp.graph.documents.pdf"
# Control characters that some PDF fonts map glyphs to; they are not text.
_PDF_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The directory that holds the `kgapp` package, for the child's imports: the child puts
# it first on its path and runs this module (as `-m` would), its environment inherited.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])
_CHILD = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    f"runpy.run_module({MODULE!r}, run_name='__main__', alter_sys=True)"
)


@dataclass(frozen=True)
class PdfLimits:
    """What reading one PDF may cost. Defaults fit a long report or a book."""

    seconds: float = 120.0  # wall clock, the child included
    pages: int = 2_000
    stream_bytes: int = 20 * 1024 * 1024  # one stream, decompressed
    text_chars: int = 5_000_000
    memory_bytes: int = 1024 * 1024 * 1024  # the child's address space


def parse_pdf(upload: Upload) -> ParsedDocument:
    """Only a look at the header: reading a PDF can take minutes and gigabytes (a PDF
    bomb), so the worker reads it later, under limits (`pdf_text`)."""
    # The header may follow a little junk; readers accept it within the first 1 KB.
    if b"%PDF-" not in upload.data[:1024]:
        raise DocumentError(
            422, f"{upload.name}: could not read this PDF: it does not start with a PDF header."
        )
    return ParsedDocument(kind="pdf", text="", messages=(), title=upload.stem, mime=upload.mime)


async def pdf_text(file_name: str, data: bytes, limits: PdfLimits) -> str:
    """The PDF's text, pages joined by blank lines; DocumentError (422) when it cannot
    be read within `limits`, is password-protected, or has no text layer."""
    return await asyncio.to_thread(_read_in_child, file_name, data, limits)


def _read_in_child(file_name: str, data: bytes, limits: PdfLimits) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, _PACKAGE_ROOT, json.dumps(asdict(limits))],
            input=data,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=limits.seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _unreadable(
            file_name, f"reading it took longer than the {limits.seconds:g} second limit"
        ) from None
    if done.returncode != 0:
        # Killed for CPU time (SIGXCPU) or memory before it could answer.
        raise _unreadable(
            file_name,
            f"reading it went past the limits of {limits.seconds:g} seconds and "
            f"{limits.memory_bytes // (1024 * 1024)} MB of memory (exit {done.returncode})",
        )
    answer = json.loads(done.stdout)
    if "error" in answer:
        raise DocumentError(422, f"{file_name}: {answer['error']}")
    return str(answer["text"])


def _unreadable(file_name: str, reason: str) -> DocumentError:
    return DocumentError(422, f"{file_name}: could not read this PDF: {reason}.")


# --- the child --------------------------------------------------------------------------


class _Refused(Exception):
    """A reason to give the user, already phrased."""


def _confine(limits: PdfLimits) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    cpu = int(limits.seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _extract(data: bytes, limits: PdfLimits) -> str:
    import pypdf

    cap = limits.stream_bytes
    caps = {
        name: cap
        for name in (
            "maximum_declared_stream_length",
            "array_based_stream_maximum_output_length",
            "zlib_maximum_output_length",
            "lzw_maximum_output_length",
            "run_length_maximum_output_length",
            "brotli_maximum_output_length",
            "jbig2_maximum_output_length",
            "image_maximum_buffer_size",
        )
    }
    with pypdf.apply_configuration(pypdf.get_configuration().with_overwrites(**caps)):
        reader = pypdf.PdfReader(io.BytesIO(data))
        # An owner password alone (print/copy restrictions) still opens with "".
        if reader.is_encrypted and not reader.decrypt(""):
            raise _Refused("it is password-protected; remove the password and upload it again")
        count = len(reader.pages)
        if count > limits.pages:
            raise _Refused(
                f"it has {count} pages; the limit is {limits.pages}. "
                "Split it into smaller files and upload those"
            )
        pages: list[str] = []
        size = 0
        for page in reader.pages:
            text = _PDF_JUNK.sub("", page.extract_text() or "").strip()
            size += len(text) + 2
            if size > limits.text_chars:
                raise _Refused(
                    f"its text is longer than the {limits.text_chars} character limit. "
                    "Split it into smaller files and upload those"
                )
            pages.append(text)
    return "\n\n".join(page for page in pages if page)


class _Answer(TypedDict, total=False):
    """What the child writes: the text, or why there is none."""

    text: str
    error: str


def _answer(data: bytes, limits: PdfLimits) -> _Answer:
    from pypdf.errors import LimitReachedError

    try:
        text = _extract(data, limits)
    except _Refused as refused:
        return {"error": f"could not read this PDF: {refused}."}
    except LimitReachedError:
        return {
            "error": "could not read this PDF: a compressed stream in it inflates past the "
            f"{limits.stream_bytes} byte limit (PDF bombs do this)."
        }
    except MemoryError:
        return {
            "error": "could not read this PDF: reading it needs more than "
            f"{limits.memory_bytes // (1024 * 1024)} MB of memory."
        }
    except Exception as error:  # pypdf raises many types for damaged files
        reason = str(error)[:200] or type(error).__name__
        return {"error": f"could not read this PDF: {reason}."}
    if not text:
        return {
            "error": "has no text that can be extracted; it is probably scanned, and "
            "scanned PDFs need OCR, which is not supported. Upload a PDF with a text layer."
        }
    return {"text": text}


def main() -> None:
    limits = PdfLimits(**json.loads(sys.argv[1]))
    _confine(limits)
    logging.disable(logging.CRITICAL)  # pypdf warns per damaged object; nobody reads it
    answer = _answer(sys.stdin.buffer.read(), limits)
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode())


if __name__ == "__main__":
    main()
