"""A corpus of SurrealQL-injection payloads, built combinatorially: a way out of the
surrounding literal (quotes, `⟩`, backticks, brackets), a statement or function call
that would change something or read what it should not (DELETE, REMOVE, DEFINE, LET,
UPDATE, USE, fn::, string::, crypto::, $auth, $session, ...), and a way to silence the
rest of the query (`;`, `--`, `//`, `#`, `/*`). Record-id syntax and bare `$param`
names are added as they are.

Every payload names only things that exist in no tenant (`pwned`, `t_victim`), so any
effect shows up as a definition or a row that was not there before.
"""

from __future__ import annotations

import itertools

# Ways out of a string, an escaped identifier, a record id or a bracketed value.
BREAKOUTS = ["", "'", '"', "⟩", "`", "')", '")', "⟩)", "'}", "]", "\\'", "'\n", "*/", "⟩⟩"]

# What would show if it ran: a new definition, a removed or changed row, another
# namespace touched, or session values (auth, session, tokens) read back.
STATEMENTS = [
    "DELETE entity",
    "DELETE relates_to RETURN BEFORE",
    "REMOVE TABLE entity",
    "REMOVE NAMESPACE t_victim",
    "REMOVE FIELD name ON entity",
    "DEFINE TABLE pwned SCHEMALESS",
    "DEFINE FIELD pwned ON entity TYPE string",
    "DEFINE INDEX pwned ON entity FIELDS name",
    "DEFINE EVENT pwned ON entity WHEN true THEN (DELETE entity)",
    "DEFINE FUNCTION fn::pwned() { DELETE entity; RETURN 1; }",
    "DEFINE PARAM $pwned VALUE 1",
    "DEFINE NAMESPACE pwned",
    "DEFINE USER pwned ON ROOT PASSWORD 'pwned' ROLES OWNER",
    "DEFINE ACCESS pwned ON DATABASE TYPE RECORD DURATION FOR SESSION 1h",
    "LET $pwned = (SELECT * FROM entity)",
    "LET $auth = 1",
    "CREATE pwned SET at = time::now()",
    "CREATE entity:pwned SET name = 'pwned', canonical_name = 'pwned'",
    "UPDATE entity SET name = 'pwned'",
    "UPSERT entity:pwned SET name = 'pwned'",
    "INSERT INTO pwned { a: 1 }",
    "RELATE entity:pwned->relates_to->entity:pwned SET relation = 'PWNED'",
    "USE NS t_victim DB kg",
    "SELECT * FROM $auth",
    "SELECT * FROM $session",
    "RETURN $token",
    "INFO FOR ROOT",
    "INFO FOR NS",
    "SELECT * FROM fn::pwned()",
    "RETURN string::concat('pw', 'ned')",
    "RETURN crypto::argon2::generate('pwned')",
    "RETURN crypto::sha256($session)",
    "RETURN type::thing('entity', 'pwned')",
    "RETURN record::exists(entity:pwned)",
    "SLEEP 1ms",
    "BEGIN TRANSACTION",
    "CANCEL TRANSACTION",
    "KILL u'00000000-0000-0000-0000-000000000000'",
    "LIVE SELECT * FROM entity",
]

# Ways to end the injected text so the rest of the original query is ignored.
TAILS = ["", ";", " --", " //", " #", " /*", "; -- ", ";\n", " */ --"]

# Standalone shapes: record ids with escapes, ranges, objects, and parameter names.
STANDALONE = [
    "entity:⟨x⟩",
    "entity:⟨x⟩; DELETE entity",
    "entity:⟨a⟩⟩; REMOVE TABLE entity; --",
    "entity:`x`",
    "entity:`x`; DELETE entity --",
    "entity:[1, 2]",
    "entity:{ a: 1 }",
    "entity:1..9",
    "entity:..",
    "entity:pwned",
    "relates_to:⟨x⟩",
    "job:⟨x⟩ OR true",
    "t_victim:⟨x⟩",
    "$auth",
    "$session",
    "$token",
    "$scope",
    "$access",
    "$parent",
    "$this",
    "$value",
    "$before",
    "$after",
    "$input",
    "$event",
    "$pwned",
    "$auth.id",
    "$session.ns",
    "fn::pwned()",
    "string::uppercase('pwned')",
    "crypto::md5('pwned')",
    "<string> $session",
    "/* */",
    "-- ",
    "// ",
    "# ",
    "@1@ pwned",
    "@@",
    "⟩",
    "⟨",
    "'",
    '"',
    "`",
    ";",
    "\\",
    "\x00",
]


def payloads() -> list[str]:
    """Every statement behind every breakout, each with one tail in turn (a product of
    all three would be ten times bigger and find nothing the rotation misses), and the
    standalone shapes."""
    tails = itertools.cycle(TAILS)
    built = [
        f"{breakout}{';' if breakout else ''} {statement}{next(tails)}".strip()
        for statement in STATEMENTS
        for breakout in BREAKOUTS
    ]
    return list(dict.fromkeys(built + STANDALONE))


PAYLOADS = payloads()
