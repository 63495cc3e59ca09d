"""Name-level evidence for entity resolution: embeddings propose, names decide.

Two names may be merged automatically only when the names themselves say they are one
thing:
- the same *match key*: the name transliterated to ASCII (anyascii), lower-cased, with
  punctuation (but for the symbols below) and spacing ignored, a leading "the" and
  possessive dropped, legal-form suffixes removed for organisations (cleanco),
  honorifics removed and "Last, First" read in order for people (nameparser);
- or one edit (a letter added, dropped, changed or swapped) in one long word, with
  nothing else different; or the same words in another order when they hold a number
  ("2018 FIFA World Cup" / "FIFA World Cup 2018").
Before comparing, ordinal words become numbers (Second -> 2nd), roman numerals after a
word become numbers (Super Bowl XLIX -> 49), "v1.2" is "1.2", and places read their
abbreviations (St. Paul, Mt. Everest, 5th Ave.).

Symbols that say which thing a name names count as the words they read as, so that
names differing in them are never one thing by their names alone, while their spoken
forms still are:
- "+" and "#" after a word: C++ (= C Plus Plus), C# (= C Sharp; the sharp sign "♯" is
  "#"), F#, A+, Disney+, Galaxy S23+; "-" ending a word: A-, BBB- (grades, ratings);
- "%" after a number (100% = 100 percent), "/" between numbers (9/11 is not 911);
- "." starting a word: .NET (= dotnet) is not NET;
- "&" reads "and": AT&T = AT & T = AT and T, but not AT T; Procter & Gamble = Procter
  and Gamble.
Spacing before them does not count (C ++ = C++). Everything else that is neither letter
nor digit only spells the name: spacing, case, hyphens and dots inside or between words
(Wi-Fi = WiFi, Node.js = NodeJS, A.T.T. = ATT = AT T), apostrophes, quotes, commas,
brackets, "!" and "?" (Yahoo! = Yahoo), "*" (E*Trade = E-Trade), a leading "@" or "#"
(@acme = acme, #MeToo = MeToo); a "$" inside a word is a stylised S (Ke$ha = Kesha).

Whatever distinguishes two things of one family blocks a merge outright, whatever the
embedding or a model says: a number, version, year or quarter, an ordinal, a single
letter, a roman numeral, a generational suffix, a qualifier such as North/West/New/
Senior, a word with a symbol above (C++ / C, Disney+ / Disney), or "and" on one side only
of two names of several words (AT&T / AT T, Procter & Gamble / Procter Gamble). Names
that merely resemble each other (one name's words inside the other's, an acronym, an
embedding in the ambiguous band) are for a model or a person to decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from anyascii import anyascii
from cleanco import basename
from nameparser import HumanName
from rapidfuzz.distance import DamerauLevenshtein

from kgapp.graph.resolution.canonical import clean_text

Verdict = Literal["same", "similar", "blocked", "different"]


# The type extraction gives a thing it cannot type: it may be one thing with any other.
GENERIC_ENTITY_TYPE = "Entity"


def types_compatible(a: str, b: str) -> bool:
    """Whether entities of types `a` and `b` may be one thing (the generic type fits any)."""
    return a == b or GENERIC_ENTITY_TYPE in (a, b)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A one-edit typo is trusted only in a word at least this long: in shorter words one
# letter makes another name (Lopez/Lopes, Meta/Metal).
TYPO_MIN_LENGTH = 7
# Words that only say how to address a person.
HONORIFICS = _words(
    "mr mrs ms miss mx dr doctor prof professor sir dame madam mme mlle herr frau rev "
    "reverend fr father hon honorable honourable capt captain lt lieutenant col colonel "
    "gen general maj major sgt sergeant cmdr commander adm admiral"
)
# Degrees and post-nominals: not part of who someone is.
POSTNOMINALS = _words("phd md esq dds mba msc bsc ba ma jd cpa rn obe mbe cbe")
QUALIFIERS = _words(
    """north south east west northern southern eastern western northeast northwest southeast
    southwest central upper lower inner outer new old senior junior sr jr elder younger
    greater little big grand mini max pro plus lite ultra air mid"""
)
ORDINALS = _words("last next previous former")
MONTHS = _words(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec"""
)
_ROMAN = re.compile(r"^(?=[mdclxvi]+$)m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
# The symbols that carry meaning (module docstring), where they do. While a name is read
# each stands for a letter that no ASCII text holds, so that legal-form and person-name
# parsing keep it with its word; the tokens have the symbols back, the key their words.
_SYMBOL_AT = re.compile(
    r"(?<=[A-Za-z0-9+#])[+#]|(?<=[0-9])%|(?<=[A-Za-z0-9])-(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9.])\.(?=[A-Za-z])|(?<=[0-9])/(?=[0-9])"
)
_SPACE_BEFORE_SYMBOL = re.compile(r"(?<=[A-Za-z0-9])\s+(?=[+#%]+(?![A-Za-z0-9]))")
_STYLISED_S = re.compile(r"(?<=[A-Za-z])\$(?=[A-Za-z])")  # Ke$ha, A$AP
_AS_LETTER = {
    "+": "\u0436",
    "#": "\u0437",
    "%": "\u0448",
    "-": "\u044d",
    ".": "\u0444",
    "/": "\u044e",
}
_AS_SYMBOL = str.maketrans({letter: symbol for symbol, letter in _AS_LETTER.items()})
_SPOKEN = str.maketrans({"+": "plus", "#": "sharp", "%": "percent", "-": "minus", ".": "dot"})
_TOKEN = re.compile(
    "\u0444?(?:[0-9]+(?:st|nd|rd|th)\\b|[a-z]+|[0-9]+(?:\u044e[0-9]+)*)[\u0436\u0437\u0448\u044d]*"
)
_YEAR = re.compile(r"(19|20)\d\d")
_VERSION = re.compile(r"\bv(?=\d)")
_ORDINAL_NAMES = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
ORDINAL_WORDS = {
    word: f"{n}{'st' if n == 1 else 'nd' if n == 2 else 'rd' if n == 3 else 'th'}"
    for n, word in enumerate(
        _ORDINAL_NAMES.split(),
        start=1,
    )
}
PLACE_PREFIXES = {"st": "saint", "mt": "mount", "ft": "fort"}
PLACE_SUFFIXES = {
    "st": "street",
    "ave": "avenue",
    "av": "avenue",
    "rd": "road",
    "blvd": "boulevard",
}
_ABBREVIATION = re.compile(r"\b(?:[a-z]\.){2,}")  # u.s.a. -> usa


@dataclass(frozen=True)
class Evidence:
    """What the names say about two entities: `rule` names the reason, `score` is the
    string agreement in [0, 1]."""

    verdict: Verdict
    rule: str
    score: float


@lru_cache(maxsize=65536)
def name_tokens(name: str, entity_type: str) -> tuple[str, ...]:
    """The words of a name as resolution compares them (see the module docstring)."""
    text = _STYLISED_S.sub("s", anyascii(clean_text(name)))
    text = _SPACE_BEFORE_SYMBOL.sub("", text)
    text = _SYMBOL_AT.sub(lambda m: _AS_LETTER[m.group(0)], text)
    if entity_type == "Person":
        text = _person(text)
    elif entity_type == "Organization":
        text = _legal_base(text)
    text = text.lower().replace("&", " and ")
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", ""), text)
    text = _VERSION.sub("", text)  # v1.29 -> 1.29
    text = re.sub(r"'s\b", "", text).replace("'", "")
    tokens = [ORDINAL_WORDS.get(t, t).translate(_AS_SYMBOL) for t in _TOKEN.findall(text)]
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    if entity_type == "Location":
        tokens = _place_words(tokens)
    return tuple(_roman_to_number(tokens))


def match_key(name: str, entity_type: str) -> str:
    """Equal match keys are name-level evidence of one thing (letters and digits, and the
    symbols that carry meaning spelled as words)."""
    return _key(name_tokens(name, entity_type))


def _key(tokens: tuple[str, ...]) -> str:
    """The tokens joined, their symbols spoken (C++ -> cplusplus)."""
    return "".join(tokens).translate(_SPOKEN)


def _legal_base(text: str) -> str:
    """The name without its legal form(s): "Samsung Electronics Co., Ltd." -> "Samsung
    Electronics"."""
    while (base := basename(text).strip(" ,.")) and base != text:
        text = base
    return text


def _place_words(tokens: list[str]) -> list[str]:
    """Abbreviations of place names: a leading "st"/"mt"/"ft" is Saint/Mount/Fort, a
    trailing "st"/"ave"/"rd" a street, avenue, road."""
    if len(tokens) > 1:
        tokens = [PLACE_PREFIXES.get(tokens[0], tokens[0]), *tokens[1:]]
        tokens = [*tokens[:-1], PLACE_SUFFIXES.get(tokens[-1], tokens[-1])]
    return tokens


def _roman_to_number(tokens: list[str]) -> list[str]:
    """A roman numeral after a word is a number (Super Bowl XLIX, Artemis I); letters
    other than i, v, x alone stay letters (Building C)."""
    out = list(tokens)
    for i, token in enumerate(tokens):
        if i == 0 or not _ROMAN.match(token) or (len(token) == 1 and token not in "ivx"):
            continue
        out[i] = str(_roman_value(token))
    return out


def _roman_value(numeral: str) -> int:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    total = 0
    for here, after in zip(numeral, [*numeral[1:], ""], strict=True):
        value = values[here]
        total += -value if after and values[after] > value else value
    return total


def _person(text: str) -> str:
    person = HumanName(text)
    titles = [w for w in re.split(r"[\s.]+", person.title.lower()) if w]
    kept_titles = [w for w in titles if w not in HONORIFICS]
    suffixes = [
        s
        for s in re.split(r"[\s,]+", person.suffix)
        if s and s.lower().strip(".") not in POSTNOMINALS
    ]
    words = [*kept_titles, person.first, person.middle, person.last, *suffixes]
    return " ".join(w for w in words if w) or text


def distinguishing(tokens: tuple[str, ...]) -> frozenset[str]:
    """The tokens that tell apart things of one family (Apollo 11 / Apollo 13)."""
    return frozenset(
        t
        for t in tokens
        if t.isdigit()
        or len(t) == 1
        or t in QUALIFIERS
        or t in ORDINALS
        or t in MONTHS
        or not t.isalnum()
        or _ROMAN.match(t)
        or _ordinal_number(t)
    )


def _ordinal_number(token: str) -> bool:
    return bool(re.fullmatch(r"\d+(st|nd|rd|th)", token))


def compare(a: str, a_type: str, b: str, b_type: str) -> Evidence:
    """The name-level evidence for merging entity `a` with entity `b`."""
    ta, tb = name_tokens(a, a_type), name_tokens(b, b_type)
    if not ta or not tb:
        return Evidence("different", "empty", 0.0)
    if a_type == b_type == "Event":  # WWDC23 / WWDC 2023: a year may be written short
        ta, tb = _short_years(ta, tb), _short_years(tb, ta)
    ka, kb = _key(ta), _key(tb)
    if ka == kb:
        return Evidence("same", "same_name", 1.0)
    score = 1.0 - DamerauLevenshtein.normalized_distance(ka, kb)
    if _distinguished(ta, tb, a_type == b_type == "Person") or _digits(ka) != _digits(kb):
        return Evidence("blocked", "distinguishing_token", score)
    if _typo(ta, tb):
        return Evidence("same", "typo", score)
    if sorted(ta) == sorted(tb) and _digits(ka):  # "2018 FIFA World Cup" / "... Cup 2018"
        return Evidence("same", "same_words", 1.0)
    if set(ta) <= set(tb) or set(tb) <= set(ta):
        return Evidence("similar", "words_contained", score)
    # An acronym may spell the legal form too (OTC: Orbit Trading Company).
    raw_a, raw_b = name_tokens(a, ""), name_tokens(b, "")
    if _acronym(ta, tb) or _acronym(tb, ta) or _acronym(raw_a, raw_b) or _acronym(raw_b, raw_a):
        return Evidence("similar", "acronym", score)
    if score >= 0.8:
        return Evidence("similar", "spelling", score)
    return Evidence("different", "names_differ", score)


def _distinguished(ta: tuple[str, ...], tb: tuple[str, ...], people: bool) -> bool:
    da, db = distinguishing(ta), distinguishing(tb)
    if len(ta) > 1 and len(tb) > 1:  # an acronym spells no "and" (NASA)
        da, db = da | ({"and"} & set(ta)), db | ({"and"} & set(tb))
    if people:
        # A middle initial written on one side only says nothing; two different ones do.
        initials_a = {t for t in da if len(t) == 1}
        initials_b = {t for t in db if len(t) == 1}
        if not (initials_a and initials_b):
            da, db = da - initials_a, db - initials_b
    return da != db


def _short_years(tokens: tuple[str, ...], other: tuple[str, ...]) -> tuple[str, ...]:
    """A year written in full where the other name writes it with two digits, shortened."""
    short = {t for t in other if len(t) == 2 and t.isdigit()}
    return tuple(t[2:] if _YEAR.fullmatch(t) and t[2:] in short else t for t in tokens)


def _typo(ta: tuple[str, ...], tb: tuple[str, ...]) -> bool:
    """One word differs, by one edit, and it is a long word: a misspelling, not another
    name (Lopez/Lopes is five letters)."""
    if len(ta) != len(tb):
        return False
    differing = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
    if len(differing) != 1:
        return False
    x, y = differing[0]
    return (
        min(len(x), len(y)) >= TYPO_MIN_LENGTH
        and x.isalpha()
        and y.isalpha()
        and DamerauLevenshtein.distance(x, y) == 1
    )


def _digits(key: str) -> str:
    return "".join(re.findall(r"\d+", key))


def _acronym(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    letters = "".join(short)
    initials = "".join(t[0] for t in long if t not in ("of", "and", "for", "the"))
    return len(short) == 1 and 2 <= len(letters) <= 6 and letters == initials
