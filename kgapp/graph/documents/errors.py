"""The one way an upload is refused.

Every rejection is a DocumentError whose message a person can act on and whose
`status` the web edge returns as is.
"""

from __future__ import annotations


class DocumentError(ValueError):
    """An upload that cannot be used; the message says what is wrong and what to do.

    `status` is the HTTP status: 413 too large, 415 unsupported type, 422 unreadable.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
