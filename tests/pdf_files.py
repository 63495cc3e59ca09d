"""PDFs written by hand for tests: text pages, and hostile ones (decompression bombs,
thousands of pages, endless text). Each page has one content stream, FlateDecode when
`compress`, so a few kilobytes of file can inflate to many megabytes."""

from __future__ import annotations

import zlib


def text_stream(text: str) -> bytes:
    return f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()


def pdf_of(streams: list[bytes], *, compress: bool = True) -> bytes:
    """A valid PDF, one page per content stream, with a correct xref table."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, once the pages are numbered
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for content in streams:
        kids.append(len(objects) + 1)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (len(objects) + 2)
        )
        body = zlib.compress(content, 9) if compress else content
        flate = b"/Filter /FlateDecode " if compress else b""
        objects.append(b"<< /Length %d %s>>\nstream\n%s\nendstream" % (len(body), flate, body))
    kids_list = b" ".join(b"%d 0 R" % kid for kid in kids)
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids_list, len(kids))
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


def bomb(pages: int, inflated_bytes: int) -> bytes:
    """`pages` pages whose text streams each inflate to about `inflated_bytes`."""
    page = text_stream("A" * inflated_bytes)
    return pdf_of([page] * pages)
