"""An upload as it arrives, what reading it gives, and the checks every text format
shares: binary content and non-UTF-8 text are refused before any format reads it.

Nothing in an upload is ever evaluated: HTML goes through a tokenizer that only
collects text, JSON through `json.loads`.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.messages import Message


@dataclass(frozen=True)
class ParsedDocument:
    """An upload's content: readable `text`, or `messages` for a conversation.

    For a conversation, `text` holds the messages as `speaker: text` lines, the form
    `parse_message_lines` reads back. A `pdf` has no text yet: the worker extracts it
    from the stored file (documents/pdf.py).
    """

    kind: Literal["text", "conversation", "pdf"]
    text: str
    messages: tuple[Message, ...]
    title: str | None
    mime: str


@dataclass(frozen=True)
class Upload:
    """A file as received, with the MIME type that its extension names."""

    name: str  # the base name, as messages show it
    data: bytes
    mime: str

    @property
    def stem(self) -> str | None:
        return PurePosixPath(self.name).stem or None


def text_document(upload: Upload, text: str, title: str | None) -> ParsedDocument:
    return ParsedDocument(kind="text", text=text, messages=(), title=title, mime=upload.mime)


_MAGIC = (
    (b"%PDF-", "PDF"),
    (b"PK\x03\x04", "ZIP"),
    (b"PK\x05\x06", "ZIP"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"\x7fELF", "ELF executable"),
)
# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF8, "utf-8"),
)
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v")
# Real text has almost no control characters; random bytes have about 11%.
_MAX_CONTROL_SHARE = 0.05
SNIFF_CHARS = 8192


def decode_text(upload: Upload) -> str:
    """The upload as text: binary and non-UTF-8 content rejected, newlines as \\n."""
    data = upload.data
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            raise _binary(upload, f" (it starts like a {kind} file)")
    encoding, start = next(
        ((enc, len(bom)) for bom, enc in _BOMS if data.startswith(bom)), ("utf-8", 0)
    )
    if encoding == "utf-8" and _looks_binary(data[:SNIFF_CHARS]):
        raise _binary(upload, "")
    try:
        text = data[start:].decode(encoding)
    except UnicodeDecodeError as error:
        offset = start + error.start
        label = encoding[:6].upper()  # UTF-8, UTF-16 or UTF-32
        raise DocumentError(
            422,
            f"{upload.name} is not valid {label} text: byte 0x{data[offset]:02x} at "
            f"offset {offset} cannot be decoded. Re-save it as UTF-8 and upload it again.",
        ) from None
    if encoding != "utf-8" and _looks_binary(text[:SNIFF_CHARS].encode("utf-8", "replace")):
        raise _binary(upload, "")
    if not text.strip():
        raise DocumentError(422, f"{upload.name} is empty. Upload a file with some text in it.")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    controls = sum(
        1 for byte in sample if (byte < 32 or byte == 127) and byte not in _TEXT_CONTROLS
    )
    return controls > _MAX_CONTROL_SHARE * max(len(sample), 1)


def _binary(upload: Upload, evidence: str) -> DocumentError:
    return DocumentError(
        422,
        f"{upload.name} looks like a binary file, not text{evidence}. "
        "Upload the document itself, or check the file extension.",
    )
