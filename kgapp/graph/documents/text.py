"""Plain text and Markdown uploads, and the Markdown headings that chunking splits at."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kgapp.graph.documents.upload import ParsedDocument, Upload, decode_text, text_document


def parse_plain(upload: Upload) -> ParsedDocument:
    return text_document(upload, decode_text(upload), upload.stem)


def parse_markdown(upload: Upload) -> ParsedDocument:
    text = decode_text(upload)
    return text_document(upload, text, first_heading(text) or upload.stem)


# --- Markdown headings --------------------------------------------------------------

_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(```|~~~)")


def markdown_headings(text: str) -> Iterator[tuple[int, int, str]]:
    """(line index, level, title) of each ATX heading (`## Title`) outside code fences."""
    fence: str | None = None
    for index, line in enumerate(text.split("\n")):
        opened = _FENCE.match(line)
        if opened:
            fence = None if fence == opened[1] else fence or opened[1]
            continue
        heading = _HEADING.fullmatch(line) if fence is None else None
        if heading:
            yield index, len(heading[1]), heading[2].strip()


def first_heading(text: str) -> str | None:
    return next((title for _, _, title in markdown_headings(text)), None)
