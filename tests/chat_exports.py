"""A short chat and its next export, written for the document lifecycle's tests: the
next export repeats the chat and adds one message, with a kitten only it mentions."""

from __future__ import annotations

CHAT = [
    {
        "speaker": "Nadia",
        "text": "I moved to Lisbon in March and joined Tidewater Labs.",
        "timestamp": "2024-03-02T10:00:00Z",
    },
    {
        "speaker": "Omar",
        "text": "Does Tidewater Labs still work with Harbour Bank?",
        "timestamp": "2024-03-02T10:01:00Z",
    },
    {
        "speaker": "Nadia",
        "text": "Yes, and my manager Ines Costa runs that project.",
        "timestamp": "2024-03-02T10:02:00Z",
    },
]
CHAT_EXTENDED = [
    *CHAT,
    {
        "speaker": "Omar",
        "text": "I adopted a kitten called Biscuit yesterday.",
        "timestamp": "2024-03-05T09:00:00Z",
    },
]
