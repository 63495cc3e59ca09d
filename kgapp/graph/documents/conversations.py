"""JSON uploads: a conversation export (LoCoMo, ChatGPT, Slack, or a generic list of
messages) becomes messages; any other JSON becomes its indented text."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.messages import Message, format_messages
from kgapp.graph.documents.upload import ParsedDocument, Upload, decode_text, text_document
from kgapp.graph.records import JsonObject
from kgapp.graph.time import in_utc

_Conversation = tuple[list[Message], str | None]  # messages, title
# The objects read here are the upload's own JSON, free-form: each shape below checks
# every value it reads (isinstance) before it uses it, so they stay untyped dicts.


def parse_json(upload: Upload) -> ParsedDocument:
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
    return text_document(upload, text, upload.stem)


def _load_json(upload: Upload) -> Any:
    text = decode_text(upload)
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
            return in_utc(_parse_date_text(value.strip()))
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


def _text_of(value: Any) -> str:
    """Message text given as a string, a list of parts, or {"parts"|"text": ...}."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(filter(None, (_text_of(part) for part in value)))
    if isinstance(value, dict):
        return _text_of(value.get("parts", value.get("text")))
    return ""


def _dicts(value: Any) -> list[JsonObject] | None:  # the upload's JSON
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


def _speaker(item: JsonObject) -> str | None:  # the upload's JSON
    for key in _SPEAKER_KEYS:
        value = item.get(key)
        if isinstance(value, dict):  # {"author": {"name": ..}} or {"role": ..}
            value = value.get("name") or value.get("role")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _has_text_key(item: JsonObject) -> bool:  # the upload's JSON
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


def _slack_speaker(item: JsonObject) -> str:  # the upload's JSON
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


def _chatgpt_messages(conversation: JsonObject) -> Iterator[Message]:  # the upload's JSON
    mapping: JsonObject = conversation["mapping"]  # the upload's JSON
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


def _chatgpt_thread(conversation: JsonObject) -> list[str]:  # the upload's JSON
    """Node ids of the visible thread, root first.

    `current_node` is the leaf the user last saw; without it, follow the newest branch
    (the last child) from the root; without a root, order by creation time.
    """
    mapping: JsonObject = conversation["mapping"]  # the upload's JSON
    nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
    current = conversation.get("current_node")
    if isinstance(current, str) and current in nodes:
        return list(reversed(_walk(nodes, current, "parent")))
    roots = [key for key, node in nodes.items() if node.get("parent") not in nodes]
    if roots:
        return _walk(nodes, roots[0], "children")
    return sorted(nodes, key=lambda key: _create_time(nodes[key]))


# `nodes`: the upload's JSON
def _walk(nodes: dict[str, JsonObject], start: str, link: str) -> list[str]:
    path: list[str] = []
    seen: set[str] = set()
    key: Any = start
    while isinstance(key, str) and key in nodes and key not in seen:  # a cycle ends it
        path.append(key)
        seen.add(key)
        step = nodes[key].get(link)
        key = step[-1] if isinstance(step, list) and step else step
    return path


def _create_time(node: JsonObject) -> float:  # the upload's JSON
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
