"""Uploaded files as text or as conversation messages, ready to become episodes.

Every rejection is a DocumentError whose message a person can act on and whose
`status` the web edge returns as is. Nothing in an upload is ever evaluated: HTML
goes through a tokenizer that only collects text, JSON through `json.loads`.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import Any, Literal

SUPPORTED_EXTENSIONS = (".txt", ".md", ".pdf", ".html", ".htm", ".json", ".csv")


class DocumentError(ValueError):
    """An upload that cannot be used; the message says what is wrong and what to do.

    `status` is the HTTP status: 413 too large, 415 unsupported type, 422 unreadable.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Message:
    """One turn of a conversation; `timestamp` is tz-aware UTC when known."""

    speaker: str
    text: str
    timestamp: datetime | None


@dataclass(frozen=True)
class ParsedDocument:
    """An upload's content: readable `text`, or `messages` for a conversation.

    For a conversation, `text` holds the messages as `speaker: text` lines, the form
    `parse_message_lines` reads back. A `pdf` has no text yet: the worker extracts it
    from the stored file (ingest/pdf.py).
    """

    kind: Literal["text", "conversation", "pdf"]
    text: str
    messages: tuple[Message, ...]
    title: str | None
    mime: str


@dataclass(frozen=True)
class _Upload:
    name: str  # the base name, as messages show it
    data: bytes
    mime: str

    @property
    def stem(self) -> str | None:
        return PurePosixPath(self.name).stem or None


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
    return parser(_Upload(name=name, data=data, mime=mime))


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """Both sizes in MB, with bytes when rounding would make them look equal."""
    shown = (_megabytes(size), _megabytes(limit))
    if shown[0] == shown[1]:
        return f"{size} bytes", f"{limit} bytes"
    return f"{shown[0]} MB", f"{shown[1]} MB"


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:.1f}".removesuffix(".0")


# --- Messages as episode content ----------------------------------------------------

# A speaker is a short name (at most five words) before a colon and a space, so that
# lines which merely contain a colon ("https://...", "at 10:30") do not start a message.
_SPEAKER_LINE = re.compile(r"(?P<speaker>[^\s:][^:]{0,63}?)\s*:(?:\s+(?P<text>.*))?")
_MAX_SPEAKER_WORDS = 5


def parse_message_lines(
    content: str, *, default_timestamp: datetime | None = None
) -> tuple[Message, ...]:
    """`speaker: text` lines as messages; indented or speaker-less lines continue the
    previous message. Every message gets `default_timestamp` (naive means UTC)."""
    timestamp = _as_utc(default_timestamp) if default_timestamp else None
    turns: list[tuple[str, list[str]]] = []
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        speaker, text = _speaker_of(line) if not line[0].isspace() else (None, line)
        if speaker is not None:
            turns.append((speaker, [text]))
        elif turns:
            turns[-1][1].append(text.strip())
        else:
            raise DocumentError(
                422,
                f"Line {number} has no speaker. Write each message "
                "as 'speaker: text', with a space after the colon.",
            )
    messages = tuple(
        Message(speaker=speaker, text="\n".join(lines).strip(), timestamp=timestamp)
        for speaker, lines in turns
        if "".join(lines).strip()
    )
    if not messages:
        raise DocumentError(422, "There are no messages. Write each one as 'speaker: text'.")
    return messages


def format_messages(messages: Iterable[Message]) -> str:
    """Messages as `speaker: text` lines; later lines of a message are indented so
    that `parse_message_lines` reads them back as continuations."""
    lines = []
    for message in messages:
        first, *rest = message.text.split("\n")
        lines.append(f"{message.speaker}: {first}")
        lines.extend(f"  {line}" for line in rest if line.strip())
    return "\n".join(lines)


def _speaker_of(line: str) -> tuple[str | None, str]:
    match = _SPEAKER_LINE.fullmatch(line)
    if match is None:
        return None, line
    speaker = match["speaker"]
    if len(speaker.split()) > _MAX_SPEAKER_WORDS or speaker.isdigit():
        return None, line
    return speaker, (match["text"] or "").strip()


# --- Text formats -------------------------------------------------------------------

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
_SNIFF_CHARS = 8192


def _decode_text(upload: _Upload) -> str:
    """The upload as text: binary and non-UTF-8 content rejected, newlines as \\n."""
    data = upload.data
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            raise _binary(upload, f" (it starts like a {kind} file)")
    encoding, start = next(
        ((enc, len(bom)) for bom, enc in _BOMS if data.startswith(bom)), ("utf-8", 0)
    )
    if encoding == "utf-8" and _looks_binary(data[:_SNIFF_CHARS]):
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
    if encoding != "utf-8" and _looks_binary(text[:_SNIFF_CHARS].encode("utf-8", "replace")):
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


def _binary(upload: _Upload, evidence: str) -> DocumentError:
    return DocumentError(
        422,
        f"{upload.name} looks like a binary file, not text{evidence}. "
        "Upload the document itself, or check the file extension.",
    )


def _parse_plain(upload: _Upload) -> ParsedDocument:
    return _text_document(upload, _decode_text(upload), upload.stem)


def _parse_markdown(upload: _Upload) -> ParsedDocument:
    text = _decode_text(upload)
    return _text_document(upload, text, _first_heading(text) or upload.stem)


def _text_document(upload: _Upload, text: str, title: str | None) -> ParsedDocument:
    return ParsedDocument(kind="text", text=text, messages=(), title=title, mime=upload.mime)


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


def _first_heading(text: str) -> str | None:
    return next((title for _, _, title in markdown_headings(text)), None)


# --- HTML ---------------------------------------------------------------------------

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


def _parse_html(upload: _Upload) -> ParsedDocument:
    page = _VisibleText()
    page.feed(_decode_text(upload))
    page.close()
    text = page.text()
    if not text:
        raise DocumentError(
            422, f"{upload.name} has no visible text. Upload a page with text in its body."
        )
    return _text_document(upload, text, page.title() or _first_heading(text) or upload.stem)


# --- PDF ----------------------------------------------------------------------------


def _parse_pdf(upload: _Upload) -> ParsedDocument:
    """Only a look at the header: reading a PDF can take minutes and gigabytes (a PDF
    bomb), so the worker reads it later, under limits (ingest/pdf.py)."""
    # The header may follow a little junk; readers accept it within the first 1 KB.
    if b"%PDF-" not in upload.data[:1024]:
        raise DocumentError(
            422, f"{upload.name}: could not read this PDF: it does not start with a PDF header."
        )
    return ParsedDocument(kind="pdf", text="", messages=(), title=upload.stem, mime=upload.mime)


# --- CSV ----------------------------------------------------------------------------


def _parse_csv(upload: _Upload) -> ParsedDocument:
    text = _decode_text(upload)
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
    return _text_document(upload, "\n".join(lines), upload.stem)


def _csv_rows(upload: _Upload, text: str) -> list[list[str]]:
    """Non-empty rows; the delimiter sniffed, ',' when sniffing cannot tell."""
    try:
        delimiter = csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=",;\t|").delimiter
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


# --- JSON ---------------------------------------------------------------------------

_Conversation = tuple[list[Message], str | None]  # messages, title


def _parse_json(upload: _Upload) -> ParsedDocument:
    value = _load_json(upload)
    for shape in _CONVERSATION_SHAPES:
        found = shape(value)
        if found is None:
            continue
        messages, title = found
        if not messages:
            raise DocumentError(
                422,
                f"{upload.name} looks like a conversation export but has no messages with text.",
            )
        return ParsedDocument(
            kind="conversation",
            text=format_messages(messages),
            messages=tuple(messages),
            title=title or upload.stem,
            mime=upload.mime,
        )
    if value in ({}, [], None, ""):
        raise DocumentError(422, f"{upload.name} holds no data. Upload a file with content.")
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _text_document(upload, text, upload.stem)


def _load_json(upload: _Upload) -> Any:
    text = _decode_text(upload)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DocumentError(
            422,
            f"{upload.name} is not valid JSON: {error.msg} at line "
            f"{error.lineno}, column {error.colno}.",
        ) from None
    except RecursionError:
        raise DocumentError(
            422, f"{upload.name} is nested too deeply to read (over about 1,000 levels)."
        ) from None
    except ValueError:  # an integer past Python's digit limit (4,300 digits)
        raise DocumentError(
            422, f"{upload.name} holds a number too long to read (over 4,300 digits)."
        ) from None


def _timestamp(value: Any, where: str) -> datetime | None:
    """ISO-8601, unix seconds (number or numeric string) or a LoCoMo date, as UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", value):
        value = float(value)
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            # Seconds today are ~1.7e9; a value past 1e11 can only be milliseconds.
            seconds = value / 1000 if abs(value) > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        if isinstance(value, str):
            return _as_utc(_parse_date_text(value.strip()))
    except (ValueError, OverflowError, OSError):
        pass
    raise DocumentError(
        422,
        f"{where} has the timestamp {value!r}, which is neither "
        "ISO-8601 (2024-05-01T13:56:00Z) nor unix seconds.",
    )


def _parse_date_text(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y")  # LoCoMo: "1:56 pm on 8 May, 2023"


def _as_utc(moment: datetime) -> datetime:
    """Naive datetimes are taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _text_of(value: Any) -> str:
    """Message text given as a string, a list of parts, or {"parts"|"text": ...}."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(filter(None, (_text_of(part) for part in value)))
    if isinstance(value, dict):
        return _text_of(value.get("parts", value.get("text")))
    return ""


def _dicts(value: Any) -> list[dict[str, Any]] | None:
    """`value` when it is a non-empty list of objects, else None."""
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return value
    return None


# (a) [{"role"|"speaker"|..: .., "content"|"text"|..: .., "timestamp"|..: ..}, ...]
_SPEAKER_KEYS = ("role", "speaker", "name", "author", "user")
_TEXT_KEYS = ("content", "text", "message")
_TIME_KEYS = ("timestamp", "time", "created_at", "date", "ts")


def _message_list(value: Any) -> _Conversation | None:
    if isinstance(value, dict) and "messages" in value:
        title = value.get("title") if isinstance(value.get("title"), str) else None
        found = _slack(value["messages"]) or _message_list(value["messages"])
        return (found[0], title) if found else None
    items = _dicts(value)
    if items is None or not all(_speaker(item) and _has_text_key(item) for item in items):
        return None
    messages: list[Message] = []
    for number, item in enumerate(items, start=1):
        text = _text_of(next(item[key] for key in _TEXT_KEYS if key in item))
        if not text or item.get("role") == "system":  # a prompt, not part of the talk
            continue
        stamp = next((item[key] for key in _TIME_KEYS if key in item), None)
        messages.append(
            Message(
                speaker=_speaker(item) or "",
                text=text,
                timestamp=_timestamp(stamp, f"Message {number}"),
            )
        )
    return messages, None


def _speaker(item: dict[str, Any]) -> str | None:
    for key in _SPEAKER_KEYS:
        value = item.get(key)
        if isinstance(value, dict):  # {"author": {"name": ..}} or {"role": ..}
            value = value.get("name") or value.get("role")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _has_text_key(item: dict[str, Any]) -> bool:
    return any(key in item for key in _TEXT_KEYS)


# (b) Slack channel export: one JSON list of {"type": "message", ...} per day.
# Join/leave notices are Slack talking, not the people in the channel.
_SLACK_NOTICES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
    }
)


def _slack(value: Any) -> _Conversation | None:
    items = _dicts(value)
    if items is None or not all(item.get("type") == "message" for item in items):
        return None
    messages: list[Message] = []
    for number, item in enumerate(items, start=1):
        text = _text_of(item.get("text"))
        if not text or item.get("subtype") in _SLACK_NOTICES:
            continue
        messages.append(
            Message(
                speaker=_slack_speaker(item),
                text=text,
                timestamp=_timestamp(item.get("ts"), f"Message {number}"),
            )
        )
    return messages, None


def _slack_speaker(item: dict[str, Any]) -> str:
    profile = item.get("user_profile")
    names = (
        profile.get("real_name") if isinstance(profile, dict) else None,
        item.get("user_name"),
        item.get("username"),
        item.get("user"),
    )
    return next((name for name in names if isinstance(name, str) and name.strip()), "unknown")


# (c) ChatGPT export: conversations.json is a list of {"title", "mapping", ...}.
_CHATGPT_HIDDEN_ROLES = frozenset({"system", "tool"})


def _chatgpt(value: Any) -> _Conversation | None:
    conversations = [value] if isinstance(value, dict) else _dicts(value)
    if not conversations or not all(isinstance(c.get("mapping"), dict) for c in conversations):
        return None
    messages = [message for c in conversations for message in _chatgpt_messages(c)]
    titles = [c.get("title") for c in conversations]
    # With several conversations no one title names the file.
    title = titles[0] if len(titles) == 1 and isinstance(titles[0], str) else None
    return messages, title


def _chatgpt_messages(conversation: dict[str, Any]) -> Iterator[Message]:
    mapping: dict[str, Any] = conversation["mapping"]
    for node_id in _chatgpt_thread(conversation):
        node = mapping.get(node_id)
        message = node.get("message") if isinstance(node, dict) else None
        if not isinstance(message, dict):
            continue
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        text = _text_of(message.get("content"))
        metadata = message.get("metadata")
        hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
        if not text or hidden or not isinstance(role, str) or role in _CHATGPT_HIDDEN_ROLES:
            continue
        yield Message(
            speaker=role,
            text=text,
            timestamp=_timestamp(message.get("create_time"), f"Node {node_id}"),
        )


def _chatgpt_thread(conversation: dict[str, Any]) -> list[str]:
    """Node ids of the visible thread, root first.

    `current_node` is the leaf the user last saw; without it, follow the newest branch
    (the last child) from the root; without a root, order by creation time.
    """
    mapping: dict[str, Any] = conversation["mapping"]
    nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
    current = conversation.get("current_node")
    if isinstance(current, str) and current in nodes:
        return list(reversed(_walk(nodes, current, "parent")))
    roots = [key for key, node in nodes.items() if node.get("parent") not in nodes]
    if roots:
        return _walk(nodes, roots[0], "children")
    return sorted(nodes, key=lambda key: _create_time(nodes[key]))


def _walk(nodes: dict[str, dict[str, Any]], start: str, link: str) -> list[str]:
    path: list[str] = []
    seen: set[str] = set()
    key: Any = start
    while isinstance(key, str) and key in nodes and key not in seen:  # a cycle ends it
        path.append(key)
        seen.add(key)
        step = nodes[key].get(link)
        key = step[-1] if isinstance(step, list) and step else step
    return path


def _create_time(node: dict[str, Any]) -> float:
    message = node.get("message")
    stamp = message.get("create_time") if isinstance(message, dict) else None
    return float(stamp) if isinstance(stamp, int | float) else math.inf


# (d) LoCoMo: {"speaker_a", "speaker_b", "session_N": [turns], "session_N_date_time"}.
_SESSION = re.compile(r"session_(\d+)")


def _locomo(value: Any) -> _Conversation | None:
    if isinstance(value, dict) and isinstance(value.get("conversation"), dict):
        value = value["conversation"]  # the dataset's own wrapping (locomo10.json)
    if not isinstance(value, dict):
        return None
    sessions = sorted(
        (int(match[1]), key)
        for key in value
        if (match := _SESSION.fullmatch(key)) and isinstance(value[key], list)
    )
    if not sessions or "speaker_a" not in value:
        return None
    messages: list[Message] = []
    for _, key in sessions:
        stamp = _timestamp(value.get(f"{key}_date_time"), key)
        messages.extend(_locomo_turns(value[key], stamp))
    return messages, None


def _locomo_turns(turns: Sequence[Any], stamp: datetime | None) -> Iterator[Message]:
    for turn in turns:
        if not isinstance(turn, dict) or not isinstance(turn.get("speaker"), str):
            continue
        text = _text_of(turn.get("text"))
        caption = turn.get("blip_caption")
        # The other speaker answers the shared photo; its caption is all that is left of it.
        if isinstance(caption, str) and caption.strip():
            text = f"{text} [shared a photo: {caption.strip()}]".strip()
        if text:
            yield Message(speaker=turn["speaker"], text=text, timestamp=stamp)


# Most specific first: a LoCoMo or ChatGPT object would not match (a), but Slack
# messages carry a "user" and a "text", which (a) would accept with the wrong speaker.
_CONVERSATION_SHAPES: tuple[Callable[[Any], _Conversation | None], ...] = (
    _locomo,
    _chatgpt,
    _slack,
    _message_list,
)

_PARSERS: dict[str, tuple[str, Callable[[_Upload], ParsedDocument]]] = {
    ".txt": ("text/plain", _parse_plain),
    ".md": ("text/markdown", _parse_markdown),
    ".pdf": ("application/pdf", _parse_pdf),
    ".html": ("text/html", _parse_html),
    ".htm": ("text/html", _parse_html),
    ".json": ("application/json", _parse_json),
    ".csv": ("text/csv", _parse_csv),
}
