"""CSV uploads: each data row becomes one line of `column: value` pairs."""

from __future__ import annotations

import csv
import io

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.upload import (
    SNIFF_CHARS,
    ParsedDocument,
    Upload,
    decode_text,
    text_document,
)


def parse_csv(upload: Upload) -> ParsedDocument:
    text = decode_text(upload)
    rows = _csv_rows(upload, text)
    header = [cell.strip() or f"column {i}" for i, cell in enumerate(rows[0], start=1)]
    lines = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DocumentError(
                422,
                f"{upload.name} is malformed: row {number} has "
                f"{len(row)} fields but the header has {len(header)}. "
                "Fix that row, or quote values that contain the "
                "delimiter.",
            )
        cells = [
            f"{name}: {value.strip()}"
            for name, value in zip(header, row, strict=True)
            if value.strip()
        ]
        if cells:
            lines.append("; ".join(cells))
    if not lines:
        raise DocumentError(422, f"{upload.name} has a header row but no data rows.")
    return text_document(upload, "\n".join(lines), upload.stem)


def _csv_rows(upload: Upload, text: str) -> list[list[str]]:
    """Non-empty rows; the delimiter sniffed, ',' when sniffing cannot tell."""
    try:
        delimiter = csv.Sniffer().sniff(text[:SNIFF_CHARS], delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","  # one column, or too little text to tell
    try:
        return [
            row
            for row in csv.reader(io.StringIO(text), delimiter=delimiter, strict=True)
            if any(cell.strip() for cell in row)
        ]
    except csv.Error as error:
        raise DocumentError(
            422, f"{upload.name} is not valid CSV: {error}. Check its quotes and delimiters."
        ) from None
