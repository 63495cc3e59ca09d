"""Reading an upload: `parse_document` picks the format by the file's extension."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from kgapp.graph.documents.conversations import parse_json
from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.html import parse_html
from kgapp.graph.documents.pdf import parse_pdf
from kgapp.graph.documents.tables import parse_csv
from kgapp.graph.documents.text import parse_markdown, parse_plain
from kgapp.graph.documents.upload import ParsedDocument, Upload

SUPPORTED_EXTENSIONS = (".txt", ".md", ".pdf", ".html", ".htm", ".json", ".csv")


def parse_document(file_name: str, data: bytes, *, max_bytes: int) -> ParsedDocument:
    """Parse an upload by its extension; DocumentError (413, 415, 422) when unusable."""
    name = PurePosixPath(file_name.replace("\\", "/")).name or "the file"
    if len(data) > max_bytes:
        size, limit = _sizes(len(data), max_bytes)
        raise DocumentError(
            413,
            f"{name} is {size}; the limit is {limit}. "
            "Split it into smaller files and upload those.",
        )
    extension = PurePosixPath(name).suffix.lower()
    if extension not in _PARSERS:
        found = f"'{extension}' files are" if extension else "Files without an extension are"
        raise DocumentError(
            415, f"{found} not supported. Upload one of: {', '.join(SUPPORTED_EXTENSIONS)}."
        )
    mime, parser = _PARSERS[extension]
    return parser(Upload(name=name, data=data, mime=mime))


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """Both sizes in MB, with bytes when rounding would make them look equal."""
    shown = (_megabytes(size), _megabytes(limit))
    if shown[0] == shown[1]:
        return f"{size} bytes", f"{limit} bytes"
    return f"{shown[0]} MB", f"{shown[1]} MB"


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:.1f}".removesuffix(".0")


_PARSERS: dict[str, tuple[str, Callable[[Upload], ParsedDocument]]] = {
    ".txt": ("text/plain", parse_plain),
    ".md": ("text/markdown", parse_markdown),
    ".pdf": ("application/pdf", parse_pdf),
    ".html": ("text/html", parse_html),
    ".htm": ("text/html", parse_html),
    ".json": ("application/json", parse_json),
    ".csv": ("text/csv", parse_csv),
}
