"""Uploads become text or conversation messages; every bad upload is a DocumentError
with the status the API returns and a message a person can act on."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pypdf
import pytest

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.messages import Message, format_messages, parse_message_lines
from kgapp.graph.documents.parse import SUPPORTED_EXTENSIONS, parse_document
from kgapp.graph.documents.pdf import PdfLimits, pdf_text
from kgapp.graph.documents.text import markdown_headings

LOCOMO = Path(__file__).resolve().parents[2] / "data" / "locomo_like.json"
LIMIT = 1_000_000


def parse(name: str, data: bytes | str, *, max_bytes: int = LIMIT):
    raw = data.encode() if isinstance(data, str) else data
    return parse_document(name, raw, max_bytes=max_bytes)


def rejected(name: str, data: bytes | str, **kwargs: Any) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        parse(name, data, **kwargs)
    return caught.value


def pdf_with_text(*pages: str) -> bytes:
    """A minimal valid PDF, one Helvetica text line per page, with a correct xref."""
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def pdf_from_writer(writer: pypdf.PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def encrypted_pdf(*, user_password: str, owner_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf_with_text("Secret plans"))))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="RC4-128")
    return pdf_from_writer(writer)


# --- Size and type --------------------------------------------------------------------


def test_an_upload_over_the_limit_is_413_with_both_sizes_in_mb() -> None:
    error = rejected("big.txt", b"a" * (3 * 1024 * 1024), max_bytes=2 * 1024 * 1024)
    assert error.status == 413
    assert "big.txt is 3 MB; the limit is 2 MB" in str(error)


def test_sizes_that_round_alike_are_shown_in_bytes() -> None:
    error = rejected("big.txt", b"a" * 1025, max_bytes=1024)
    assert error.status == 413
    assert "1025 bytes; the limit is 1024 bytes" in str(error)


def test_an_upload_of_exactly_the_limit_is_accepted() -> None:
    assert parse("fits.txt", b"a" * 100, max_bytes=100).text == "a" * 100


@pytest.mark.parametrize("name", ["report.docx", "archive.zip", "README"])
def test_an_unknown_extension_is_415_listing_the_supported_ones(name: str) -> None:
    error = rejected(name, "some text")
    assert error.status == 415
    for extension in SUPPORTED_EXTENSIONS:
        assert extension in str(error)


def test_the_extension_is_matched_without_case_and_the_path_is_dropped() -> None:
    document = parse("C:\\fakepath\\Notes.TXT", "hello")
    assert (document.kind, document.text, document.title, document.mime) == (
        "text",
        "hello",
        "Notes",
        "text/plain",
    )


# --- Text decoding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"%PDF-1.7\n1 0 obj", "PDF"),
        (b"PK\x03\x04\x14\x00\x00\x00", "ZIP"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG"),
        (b"GIF89a\x01\x00\x01\x00", "GIF"),
        (b"\x7fELF\x02\x01\x01", "ELF"),
    ],
)
def test_binary_magic_numbers_are_rejected_as_text(data: bytes, kind: str) -> None:
    error = rejected("notes.txt", data)
    assert error.status == 422
    assert "looks like a binary file, not text" in str(error) and kind in str(error)


def test_nul_bytes_mark_a_binary_file() -> None:
    error = rejected("data.md", b"plain start\x00\x01\x02 and more")
    assert (error.status, "looks like a binary file, not text" in str(error)) == (422, True)


def test_many_control_characters_mark_a_binary_file() -> None:
    error = rejected("data.csv", b"a,b\n" + bytes(range(1, 9)) * 20 + b"text" * 10)
    assert error.status == 422
    assert "binary" in str(error)


def test_a_few_control_characters_are_still_text() -> None:
    assert parse("log.txt", "\x1b[32mINFO\x1b[0m worker started and is ready\n" * 20).kind == "text"


def test_non_utf8_text_is_422_naming_the_byte_offset() -> None:
    error = rejected("cafe.txt", "café au lait".encode("latin-1"))
    assert error.status == 422
    message = str(error)
    assert "not valid UTF-8" in message and "offset 3" in message and "0xe9" in message
    assert "Re-save it as UTF-8" in message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_with_a_bom_is_decoded(encoding: str) -> None:
    text = "Grüße aus Köln\n日本語"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    assert parse("letter.txt", data).text == text


def test_the_utf8_bom_is_stripped_and_newlines_are_normalised() -> None:
    assert parse("win.txt", b"\xef\xbb\xbfone\r\ntwo\rthree").text == "one\ntwo\nthree"


@pytest.mark.parametrize("data", [b"", b"   \n\t  \r\n"])
def test_an_empty_file_is_422(data: bytes) -> None:
    error = rejected("empty.md", data)
    assert error.status == 422 and "empty" in str(error)


# --- Plain text and markdown ------------------------------------------------------------


def test_markdown_is_kept_as_is_and_titled_by_its_first_heading() -> None:
    source = "Intro line\n\n## Getting started\n\nRun it.\n\n# Later\n"
    document = parse("guide.md", source)
    assert document.text == source
    assert document.title == "Getting started"
    assert (document.kind, document.mime, document.messages) == ("text", "text/markdown", ())


def test_a_hash_line_in_a_code_fence_is_not_a_heading() -> None:
    source = "```sh\n# install it\npip install x\n```\n\n# Real title\n"
    assert parse("readme.md", source).title == "Real title"
    assert [title for _, _, title in markdown_headings(source)] == ["Real title"]


def test_markdown_without_a_heading_is_titled_by_the_file_name() -> None:
    assert parse("meeting-notes.md", "just text").title == "meeting-notes"


def test_text_files_are_not_titled_by_hash_lines() -> None:
    document = parse("config.txt", "# a comment\nvalue = 1\n")
    assert (document.text, document.title) == ("# a comment\nvalue = 1\n", "config")


# --- HTML -------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html><head><title> Trip &amp; Notes </title>
<style>body { color: red }</style><script>alert("x")</script>
<meta name="description" content="hidden meta text"></head>
<body>
<h1>Travel   log</h1>
<p>We left <b>early</b>.<br>It rained.</p>
<div>Second block</div>
<script>document.write("never shown")</script>
<h2>Day <i>two</i></h2>
<ul><li>Museum</li><li>Caf&eacute;</li></ul>
<noscript>enable javascript</noscript>
</body></html>
"""


def test_html_keeps_visible_text_with_headings_and_line_breaks() -> None:
    document = parse("trip.html", PAGE)
    assert document.title == "Trip & Notes"
    assert document.mime == "text/html"
    assert document.text == (
        "# Travel log\n\nWe left early.\nIt rained.\n\nSecond block\n\n## Day two\n\n"
        "- Museum\n- Café"
    )
    for hidden in ("alert", "color: red", "never shown", "hidden meta", "javascript"):
        assert hidden not in document.text


def test_html_without_a_title_is_titled_by_its_first_heading() -> None:
    document = parse("page.htm", "<body><h3>Quarterly <em>results</em></h3><p>Up 5%.</p>")
    assert (document.title, document.text) == (
        "Quarterly results",
        "### Quarterly results\n\nUp 5%.",
    )


def test_html_with_an_unclosed_head_still_shows_its_body() -> None:
    document = parse("old.html", "<html><head><title>Old</title><body><p>Body text</p>")
    assert (document.title, document.text) == ("Old", "Body text")


def test_self_closing_breaks_do_not_make_blank_lines() -> None:
    assert parse("br.html", "<p>one<br/>two<br />three</p>").text == "one\ntwo\nthree"


def test_html_with_no_visible_text_is_422() -> None:
    error = rejected(
        "blank.html", "<html><head><title>T</title></head><body><script>x()</script></body>"
    )
    assert error.status == 422 and "no visible text" in str(error)


# --- PDF --------------------------------------------------------------------------------


def test_a_pdf_upload_is_only_checked_for_its_header() -> None:
    document = parse("report.pdf", pdf_with_text("First page text"))
    assert (document.kind, document.text, document.title) == ("pdf", "", "report")
    error = rejected("notes.pdf", b"just some text, no header")
    assert error.status == 422
    assert "notes.pdf: could not read this PDF: it does not start with a PDF header" in str(error)


async def read_pdf(name: str, data: bytes, **limits: Any) -> str:
    return await pdf_text(name, data, PdfLimits(**limits))


async def unreadable_pdf(name: str, data: bytes, **limits: Any) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        await read_pdf(name, data, **limits)
    assert caught.value.status == 422
    return caught.value


async def test_pdf_pages_are_joined_with_blank_lines() -> None:
    text = await read_pdf("report.pdf", pdf_with_text("First page text", "Second page text"))
    assert text == "First page text\n\nSecond page text"


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\n" + b"\x00garbage\xff" * 50, pdf_with_text("Hello")[:60]],
    ids=["garbage", "truncated"],
)
async def test_a_broken_pdf_is_422_could_not_read(data: bytes) -> None:
    error = await unreadable_pdf("broken.pdf", data)
    assert "broken.pdf: could not read this PDF: " in str(error)


async def test_a_password_protected_pdf_is_422_asking_to_remove_the_password() -> None:
    data = encrypted_pdf(user_password="secret", owner_password="o")
    error = await unreadable_pdf("locked.pdf", data)
    assert "password-protected" in str(error)


async def test_a_pdf_with_only_an_owner_password_is_read() -> None:
    data = encrypted_pdf(user_password="", owner_password="owner")
    assert await read_pdf("restricted.pdf", data) == "Secret plans"


async def test_a_pdf_without_a_text_layer_is_422_no_ocr() -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    error = await unreadable_pdf("scan.pdf", pdf_from_writer(writer))
    assert "scanned PDFs need OCR, which is not supported" in str(error)


# --- CSV --------------------------------------------------------------------------------


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_csv_rows_become_header_value_lines(delimiter: str) -> None:
    rows = [["name", "city", "since"], ["Ada", "London", "1843"], ["Grace", "Arlington", "1944"]]
    data = "\n".join(delimiter.join(row) for row in rows) + "\n"
    document = parse("people.csv", data)
    assert document.text == (
        "name: Ada; city: London; since: 1843\nname: Grace; city: Arlington; since: 1944"
    )
    assert (document.mime, document.title) == ("text/csv", "people")


def test_csv_quoted_delimiters_stay_in_their_cell_and_empty_cells_are_left_out() -> None:
    data = 'name,note,tag\r\n"Doe, Jane","said ""hi""",\r\n\r\nBob,,x\r\n'
    assert parse("notes.csv", data).text == 'name: Doe, Jane; note: said "hi"\nname: Bob; tag: x'


def test_csv_with_an_unclosed_quote_is_422() -> None:
    error = rejected("bad.csv", 'a,b\n1,"never closed\n2,3\n')
    assert error.status == 422 and "not valid CSV" in str(error)


def test_csv_with_a_row_longer_than_the_header_is_422_naming_the_row() -> None:
    error = rejected("bad.csv", "a,b\n1,2\n3,4,5\n")
    assert error.status == 422 and "row 3 has 3 fields but the header has 2" in str(error)


def test_csv_with_only_a_header_is_422() -> None:
    assert rejected("head.csv", "a,b,c\n").status == 422


# --- JSON: plain data and errors --------------------------------------------------------


def test_invalid_json_is_422_with_line_and_column() -> None:
    error = rejected("data.json", '{\n  "a": 1,\n  "b": }\n')
    assert error.status == 422
    assert "not valid JSON" in str(error) and "line 3, column 8" in str(error)


def test_other_json_is_pretty_printed_text() -> None:
    value = {"name": "Ada", "langs": ["en", "fr"], "born": 1815, "note": "é"}
    document = parse("record.json", json.dumps(value, separators=(",", ":")))
    assert document.kind == "text"
    assert document.text == json.dumps(value, indent=2, ensure_ascii=False)
    assert (document.mime, document.title, document.messages) == ("application/json", "record", ())


def test_a_list_of_records_without_speakers_is_plain_json() -> None:
    document = parse("rows.json", json.dumps([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]))
    assert document.kind == "text"


@pytest.mark.parametrize("data", ["{}", "[]", "null"])
def test_json_with_no_data_is_422(data: str) -> None:
    assert rejected("nothing.json", data).status == 422


# --- JSON conversations: (a) message lists ----------------------------------------------


def test_a_role_content_list_is_a_conversation_with_utc_timestamps() -> None:
    data = [
        {"role": "system", "content": "You are helpful."},
        {
            "role": "user",
            "content": "Hi, I moved to Lyon.",
            "timestamp": "2024-03-01T10:00:00+02:00",
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Welcome"}, "to Lyon!"],
            "timestamp": 1709287200,
        },
        {"role": "user", "content": "   ", "timestamp": "2024-03-01T09:00:00Z"},
        {"role": "user", "content": "Thanks", "timestamp": "1709287260.5"},
        {"role": "user", "content": "Later", "timestamp": "2024-03-02 08:00"},
    ]
    document = parse("chat.json", json.dumps(data))
    assert document.kind == "conversation"
    assert document.messages == (
        Message("user", "Hi, I moved to Lyon.", datetime(2024, 3, 1, 8, 0, tzinfo=UTC)),
        Message("assistant", "Welcome\nto Lyon!", datetime(2024, 3, 1, 10, 0, tzinfo=UTC)),
        Message("user", "Thanks", datetime(2024, 3, 1, 10, 1, 0, 500000, tzinfo=UTC)),
        Message("user", "Later", datetime(2024, 3, 2, 8, 0, tzinfo=UTC)),
    )
    assert document.text.splitlines()[0] == "user: Hi, I moved to Lyon."
    assert document.title == "chat"


@pytest.mark.parametrize(
    ("speaker_key", "text_key", "time_key"),
    [
        ("speaker", "text", "time"),
        ("name", "message", "created_at"),
        ("author", "text", "date"),
        ("user", "content", "ts"),
    ],
)
def test_every_speaker_text_and_time_key_is_recognised(
    speaker_key: str, text_key: str, time_key: str
) -> None:
    data = [
        {speaker_key: "Ana", text_key: "Hello", time_key: "2023-05-08T13:56:00Z"},
        {speaker_key: "Ben", text_key: "Hey"},
    ]
    document = parse("talk.json", json.dumps(data))
    assert document.messages == (
        Message("Ana", "Hello", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        Message("Ben", "Hey", None),
    )


def test_a_millisecond_unix_timestamp_is_recognised() -> None:
    document = parse("ms.json", json.dumps([{"speaker": "A", "text": "x", "ts": 1709287200000}]))
    assert document.messages[0].timestamp == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)


def test_an_unreadable_timestamp_is_422_naming_the_message() -> None:
    data = [{"speaker": "A", "text": "x"}, {"speaker": "B", "text": "y", "timestamp": "yesterday"}]
    error = rejected("chat.json", json.dumps(data))
    assert error.status == 422 and "Message 2" in str(error) and "yesterday" in str(error)


def test_a_messages_object_is_a_conversation_titled_by_its_title() -> None:
    data = {"title": "Standup", "messages": [{"speaker": "Kim", "text": "Done with QA."}]}
    document = parse("standup.json", json.dumps(data))
    assert (document.kind, document.title) == ("conversation", "Standup")
    assert document.messages == (Message("Kim", "Done with QA.", None),)


def test_a_conversation_whose_messages_are_all_empty_is_422() -> None:
    error = rejected("empty.json", json.dumps([{"role": "user", "content": ""}]))
    assert error.status == 422 and "no messages with text" in str(error)


# --- JSON conversations: (b) Slack ------------------------------------------------------


def test_a_slack_export_uses_real_names_and_skips_join_notices() -> None:
    data = [
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U1",
            "text": "<@U1> has joined",
            "ts": "1700000000.000100",
        },
        {
            "type": "message",
            "user": "U1",
            "text": "Deploy is done",
            "user_profile": {"real_name": "Maria Lopez"},
            "ts": "1700000100.000200",
        },
        {
            "type": "message",
            "user": "U2",
            "user_name": "tom",
            "text": "Thanks!",
            "ts": "1700000160.5",
        },
        {"type": "message", "user": "U3", "text": "ok", "ts": "1700000200"},
    ]
    document = parse("general.json", json.dumps(data))
    assert document.kind == "conversation"
    assert [(m.speaker, m.text) for m in document.messages] == [
        ("Maria Lopez", "Deploy is done"),
        ("tom", "Thanks!"),
        ("U3", "ok"),
    ]
    assert document.messages[0].timestamp == datetime.fromtimestamp(1700000100.0002, tz=UTC)


# --- JSON conversations: (c) ChatGPT ----------------------------------------------------


def chatgpt_conversation(title: str, *, current_node: str | None = "n3") -> dict[str, Any]:
    def node(
        key: str,
        parent: str | None,
        children: list[str],
        role: str | None = None,
        text: str = "",
        at: float | None = None,
    ) -> dict[str, Any]:
        message = (
            None
            if role is None
            else {
                "author": {"role": role},
                "create_time": at,
                "content": {"content_type": "text", "parts": [text]},
            }
        )
        return {"id": key, "parent": parent, "children": children, "message": message}

    mapping = {
        "n4": node("n4", "n2b", ["n5"], "assistant", "Paris, in spring.", 1700000030.0),
        "n5": node("n5", "n4", [], "user", "", 1700000040.0),
        "root": node("root", None, ["n0"]),
        "n0": node("n0", "root", ["n1"], "system", "You are ChatGPT."),
        "n1": node("n1", "n0", ["n2a", "n2b"], "user", "Where should I travel?", 1700000000.0),
        "n2a": node("n2a", "n1", ["n3"], "assistant", "Rome.", 1700000010.0),
        "n3": node("n3", "n2a", [], "user", "Rome it is.", 1700000015.0),
        "n2b": node("n2b", "n1", ["n4"], "assistant", "Try France.", 1700000020.0),
    }
    conversation = {"title": title, "create_time": 1700000000.0, "mapping": mapping}
    if current_node:
        conversation["current_node"] = current_node
    return conversation


def test_a_chatgpt_conversation_follows_the_visible_thread_without_system_messages() -> None:
    document = parse("conversations.json", json.dumps([chatgpt_conversation("Trip ideas")]))
    assert document.kind == "conversation"
    assert document.title == "Trip ideas"
    assert [(m.speaker, m.text) for m in document.messages] == [
        ("user", "Where should I travel?"),
        ("assistant", "Rome."),
        ("user", "Rome it is."),
    ]
    assert document.messages[0].timestamp == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


def test_a_chatgpt_conversation_without_current_node_walks_the_newest_branch() -> None:
    document = parse("one.json", json.dumps(chatgpt_conversation("Solo", current_node=None)))
    assert [m.text for m in document.messages] == [
        "Where should I travel?",
        "Try France.",
        "Paris, in spring.",
    ]
    assert document.title == "Solo"


def test_several_chatgpt_conversations_are_concatenated_under_the_file_name() -> None:
    document = parse(
        "export.json", json.dumps([chatgpt_conversation("A"), chatgpt_conversation("B")])
    )
    assert len(document.messages) == 6
    assert document.title == "export"


# --- JSON conversations: (d) LoCoMo -----------------------------------------------------


def locomo_turn_count(value: dict[str, Any]) -> int:
    return sum(len(turns) for key, turns in value.items() if re.fullmatch(r"session_\d+", key))


def test_a_locomo_file_is_a_conversation_in_session_order() -> None:
    raw = LOCOMO.read_bytes()
    value = json.loads(raw)
    document = parse_document("locomo_like.json", raw, max_bytes=len(raw))
    messages = document.messages
    assert document.kind == "conversation"
    assert len(messages) == locomo_turn_count(value)
    assert {m.speaker for m in messages} == {value["speaker_a"], value["speaker_b"]}
    assert messages[0] == Message(
        value["session_1"][0]["speaker"],
        value["session_1"][0]["text"],
        datetime(2024, 3, 3, 14, 5, tzinfo=UTC),
    )
    first_of_session_2 = messages[len(value["session_1"])]
    assert first_of_session_2.text.startswith(value["session_2"][0]["text"])
    assert first_of_session_2.timestamp == datetime(2024, 4, 19, 10, 40, tzinfo=UTC)
    stamps = [m.timestamp for m in messages]
    assert None not in stamps and stamps == sorted(stamps)
    assert len(set(stamps)) == 3  # one timestamp per session


def test_locomo_photo_captions_are_kept_with_the_turn() -> None:
    value = json.loads(LOCOMO.read_text())
    turn = next(t for t in value["session_1"] if "blip_caption" in t)
    document = parse_document("locomo_like.json", LOCOMO.read_bytes(), max_bytes=10**8)
    assert any(
        m.text == f"{turn['text']} [shared a photo: {turn['blip_caption']}]"
        for m in document.messages
    )


def test_locomo_wrapped_under_a_conversation_key_reads_the_same() -> None:
    value = json.loads(LOCOMO.read_text())
    wrapped = json.dumps({"sample_id": "conv-26", "conversation": value, "qa": []})
    plain = parse_document("locomo_like.json", LOCOMO.read_bytes(), max_bytes=10**8)
    assert parse("conv-26.json", wrapped, max_bytes=10**8).messages == plain.messages


def test_a_bad_locomo_session_date_is_422_naming_the_session() -> None:
    value = {
        "speaker_a": "A",
        "speaker_b": "B",
        "session_1_date_time": "someday",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
    }
    error = rejected("bad.json", json.dumps(value))
    assert error.status == 422 and "session_1" in str(error)


# --- Message lines (episode content of source "message") --------------------------------


def test_message_lines_with_continuations() -> None:
    content = "Alice: I moved to Berlin.\nIt was a big step.\n\nBob: Congrats!\n  Where exactly?\n"
    assert parse_message_lines(content) == (
        Message("Alice", "I moved to Berlin.\nIt was a big step.", None),
        Message("Bob", "Congrats!\nWhere exactly?", None),
    )


def test_message_lines_get_the_default_timestamp_in_utc() -> None:
    paris = timezone(timedelta(hours=2))
    aware = parse_message_lines("A: x", default_timestamp=datetime(2024, 6, 1, 12, 0, tzinfo=paris))
    naive = parse_message_lines("A: x", default_timestamp=datetime(2024, 6, 1, 12, 0))
    assert aware[0].timestamp == datetime(2024, 6, 1, 10, 0, tzinfo=UTC)
    assert naive[0].timestamp == datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    assert aware[0].timestamp.tzinfo is UTC


def test_a_first_line_without_a_speaker_is_422_with_its_line_number() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_message_lines("\n\nno speaker here\nBob: hi")
    assert caught.value.status == 422 and "Line 3" in str(caught.value)


def test_colons_in_urls_and_times_do_not_start_messages() -> None:
    content = "Ann: see\nhttps://example.com/a\nthe meeting at 10:30 went long"
    assert parse_message_lines(content) == (
        Message("Ann", "see\nhttps://example.com/a\nthe meeting at 10:30 went long", None),
    )


def test_blank_message_lines_are_422() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_message_lines("   \n")
    assert caught.value.status == 422


def test_format_messages_reads_back_unchanged() -> None:
    messages = (
        Message("Dr. Kim (PM)", "Plan:\nStep one: test.\nStep two: ship.", None),
        Message("Lee", "ok", None),
    )
    text = format_messages(messages)
    assert text == "Dr. Kim (PM): Plan:\n  Step one: test.\n  Step two: ship.\nLee: ok"
    assert parse_message_lines(text) == messages


def test_html_pre_keeps_its_lines_and_nested_blocks_add_no_blank_lines() -> None:
    html = "<div><div><div>a</div></div><div>b</div></div><pre>def f():\n    return 1\n</pre>x<br><br>y"
    assert parse("code.html", html).text == "a\nb\n\ndef f():\n    return 1\n\nx\n\ny"


def test_html_markup_in_text_is_text_not_markup() -> None:
    assert parse("esc.html", "<p>use &lt;script&gt; tags</p>").text == "use <script> tags"
