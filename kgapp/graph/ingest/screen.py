"""Screening text for prompt injection before it reaches the extraction model.

Text that tries to instruct the model is stored (it is the user's data) but never
extracted from, and the job says which episodes were held back and why.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.IGNORECASE))
    for reason, pattern in (
        (
            "instructions to the model",
            r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|your)\b"
            r".{0,40}\b(instructions?|prompts?|rules?|directions?|messages?)\b",
        ),
        (
            "instructions to the model",
            r"\b(new|updated|real|actual)\s+(system\s+)?instructions?\s*:",
        ),
        ("instructions to the model", r"\byou\s+(must|will|should)\s+now\b"),
        (
            "instructions to the model",
            r"\b(reveal|print|output|repeat)\b.{0,30}\b(system prompt|instructions)\b",
        ),
        ("role switch", r"(^|\n)\s*(system|assistant|developer)\s*:\s*\S"),
        ("role switch", r"<\|?\s*(im_start|im_end|system|endoftext)\s*\|?>"),
        ("role switch", r"\[\s*/?\s*(INST|SYS)\s*\]|<<\s*/?SYS\s*>>"),
        ("role switch", r"\byou\s+are\s+now\s+(a|an|the|in)\b"),
        (
            "role switch",
            r"\b(act|behave)\s+as\s+(if\s+you\s+were\s+)?(a|an|the)\s+\w+\s+(without|with no)\s+(restrictions|rules|filters)",
        ),
        (
            "delimiter spoofing",
            r"<{2,}\s*/?\s*(episode|document|content|text)\b|\b(end|begin)\s+of\s+(episode|document|content)\b",
        ),
    )
)
_HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")
HIDDEN_CHARACTER_LIMIT = 3


@dataclass(frozen=True)
class Screening:
    flagged: bool
    reasons: tuple[str, ...]


def screen_text(text: str) -> Screening:
    """Flag text that tries to instruct the model: instructions, role switches, spoofed
    delimiters, or invisible characters (zero-width, bidi, tag characters) used to hide
    any of those."""
    reasons: list[str] = []
    hidden = len(_HIDDEN.findall(text))
    if hidden >= HIDDEN_CHARACTER_LIMIT:
        reasons.append("hidden characters")
    visible = unicodedata.normalize("NFKC", _HIDDEN.sub("", text))
    for reason, pattern in _PATTERNS:
        if reason not in reasons and pattern.search(visible):
            reasons.append(reason)
    return Screening(flagged=bool(reasons), reasons=tuple(reasons))
