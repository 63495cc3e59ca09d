"""Uploaded files as text or as conversation messages, ready to become episodes.

One module per concern: `parse` reads an upload by its extension (`parse_document`);
`upload` holds what every format shares (the upload, the result, decoding and binary
sniffing); `errors` the one refusal, `DocumentError`; `messages` conversation turns
and their `speaker: text` lines. One module per format: `text` (plain and Markdown),
`html`, `pdf` (read later by the worker, in a child process under limits), `tables`
(CSV) and `conversations` (JSON, and the chat exports it may hold).
"""
