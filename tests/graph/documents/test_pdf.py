"""Reading a PDF in a child process, under limits: every hostile PDF is refused with
a 422 DocumentError naming the limit, in about the time the limit allows."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.pdf import PdfLimits, pdf_text
from tests.pdf_files import bomb, pdf_of, text_stream


async def refused(data: bytes, **limits: Any) -> tuple[str, float]:
    started = time.perf_counter()
    with pytest.raises(DocumentError) as caught:
        await pdf_text("hostile.pdf", data, PdfLimits(**limits))
    assert caught.value.status == 422
    message = str(caught.value)
    assert message.startswith("hostile.pdf: could not read this PDF: ")
    return message, time.perf_counter() - started


async def test_a_stream_that_inflates_past_the_limit_is_a_bomb() -> None:
    data = bomb(1, 50_000_000)  # ~50 KB of file
    message, seconds = await refused(data, stream_bytes=1_000_000)
    assert "inflates past the 1000000 byte limit" in message
    assert seconds < 10


async def test_the_bomb_of_the_issue_is_refused_within_the_default_limits() -> None:
    data = bomb(40, 5_000_000)  # 40 streams of 5 MB each, ~200 KB of file
    message, seconds = await refused(data)
    assert f"longer than the {PdfLimits().text_chars} character limit" in message
    assert seconds < 30


async def test_too_many_pages() -> None:
    data = pdf_of([text_stream(f"page {n}") for n in range(30)])
    message, _ = await refused(data, pages=10)
    assert "it has 30 pages; the limit is 10" in message


async def test_too_much_text() -> None:
    data = pdf_of([text_stream("word " * 400)] * 5)
    message, _ = await refused(data, text_chars=5000)
    assert "longer than the 5000 character limit" in message


async def test_too_slow_to_lay_out() -> None:
    operators = b"BT /F1 12 Tf " + b"(a) Tj " * 500_000 + b"ET"  # a few seconds of work
    message, seconds = await refused(pdf_of([operators]), seconds=1)
    assert "took longer than the 1 second limit" in message
    assert seconds < 5


async def test_too_much_memory() -> None:
    data = bomb(1, 150_000_000)
    limits = {"stream_bytes": 500_000_000, "memory_bytes": 200 * 1024 * 1024}
    message, _ = await refused(data, **limits)
    assert "200 MB of memory" in message


async def test_a_pdf_within_the_limits_is_read() -> None:
    data = pdf_of([text_stream("Alice works at Acme."), text_stream("Bob too.")])
    text = await pdf_text("fine.pdf", data, PdfLimits(pages=2, text_chars=100))
    assert text == "Alice works at Acme.\n\nBob too."
