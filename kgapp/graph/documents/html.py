"""HTML uploads: the text a browser would show, headings as Markdown `#` lines."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.text import first_heading
from kgapp.graph.documents.upload import ParsedDocument, Upload, decode_text, text_document

_INVISIBLE_TAGS = frozenset({"script", "style", "head", "noscript", "template"})
# Blocks that a browser sets apart as paragraphs, and those that only start a line.
_PARAGRAPH_TAGS = frozenset(
    {
        "p",
        "pre",
        "blockquote",
        "table",
        "ul",
        "ol",
        "dl",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "figure",
        "form",
        "address",
        "hr",
    }
)
_LINE_TAGS = frozenset({"div", "li", "tr", "dt", "dd", "figcaption", "caption"})
_HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}
_SPACE_RUN = re.compile(r"\s+")


class _VisibleText(HTMLParser):
    """Collects what a browser would show; headings become `#` lines.

    Breaks are requested, not appended ("at least one newline here"), so nested
    blocks do not pile up blank lines; only `<br>` always adds one.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._hidden: list[str] = []  # open invisible elements, innermost last
        self._in_title = False
        self._heading: tuple[int, list[str]] | None = None
        self._pre = 0
        self._newlines = 2  # newlines the output ends with; the start counts as a paragraph
        self._bullet = ""  # written before the next text of a list item

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = not self.title_parts  # later ones title SVG images
        elif tag == "body" and "head" in self._hidden:
            self._hidden.remove("head")  # </head> is optional in HTML
        elif tag in _INVISIBLE_TAGS:
            self._hidden.append(tag)
        elif self._hidden:
            return
        elif tag in _HEADING_TAGS:
            self._break(2)
            self._heading, self._bullet = (_HEADING_TAGS[tag], []), ""
        elif tag == "br":
            self._write("\n", keep=True)
        elif tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS:
            self._break(2 if tag in _PARAGRAPH_TAGS else 1)
            self._pre += tag == "pre"
            self._bullet = "- " if tag == "li" else self._bullet
        elif tag in ("td", "th"):
            self._write(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._hidden:
            del self._hidden[self._hidden.index(tag) :]
        elif self._hidden:
            return
        elif tag in _HEADING_TAGS and self._heading is not None:
            level, words = self._heading
            self._heading = None
            title = _SPACE_RUN.sub(" ", "".join(words)).strip()
            if title:
                self._write(f"{'#' * level} {title}")
                self._break(2)
        elif tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS:
            self._break(2 if tag in _PARAGRAPH_TAGS else 1)
            self._pre -= tag == "pre" and self._pre > 0

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._hidden:
            self._write(data, keep=self._pre > 0)

    def _write(self, text: str, *, keep: bool = False) -> None:
        """Visible text; runs of whitespace collapse unless `keep` (in <pre>, a <br>)."""
        if not keep:
            text = _SPACE_RUN.sub(" ", text)
        if self._heading is not None:
            self._heading[1].append(text)
            return
        if self._newlines and not keep:
            text = text.lstrip()  # the start of a line shows no spaces
        if not text:
            return
        self.parts.append(self._bullet + text)
        self._bullet = ""
        body = text.rstrip("\n")
        self._newlines = len(text) - len(body) + (self._newlines if not body else 0)

    def _break(self, lines: int) -> None:
        if self._heading is not None:
            self._heading[1].append(" ")
        elif self._newlines < lines:
            self.parts.append("\n" * (lines - self._newlines))
            self._newlines = lines

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in "".join(self.parts).split("\n")).strip()

    def title(self) -> str | None:
        return _SPACE_RUN.sub(" ", "".join(self.title_parts)).strip() or None


def parse_html(upload: Upload) -> ParsedDocument:
    page = _VisibleText()
    page.feed(decode_text(upload))
    page.close()
    text = page.text()
    if not text:
        raise DocumentError(
            422, f"{upload.name} has no visible text. Upload a page with text in its body."
        )
    return text_document(upload, text, page.title() or first_heading(text) or upload.stem)
