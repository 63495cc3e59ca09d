"""Response schemas in the form OpenAI's strict structured outputs accept."""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel

from kgapp.graph.records import JsonObject

# A JSON Schema (and each of its nodes) is free-form JSON: pydantic's output, which this
# module rewrites keyword by keyword; so an untyped dict throughout.

# Schema keywords pydantic emits that strict mode rejects ("default") or that only
# cost prompt tokens ("title").
_SCHEMA_NOISE = ("title", "default")


def strict_json_schema(model: type[BaseModel]) -> JsonObject:
    """`model`'s JSON schema in the form OpenAI's strict structured outputs accept.

    Every object forbids extra keys and lists all its properties as required: an
    `X | None` field stays a nullable `anyOf`, and a field with a default but no null
    in its type becomes required (the model must give a value). `$defs` and bare
    `$ref`s are kept; a `$ref` with siblings (a described nested model) is inlined,
    since strict mode rejects siblings of `$ref`. Raises ValueError for free-form
    mappings (`dict[str, X]`), which strict mode cannot express.

    Built once a model (pydantic's schema generation costs milliseconds a call); each
    caller gets its own copy.
    """
    return copy.deepcopy(_strict_schema(model))


@functools.lru_cache(maxsize=64)
def _strict_schema(model: type[BaseModel]) -> JsonObject:
    root = model.model_json_schema()
    return _strict_node(copy.deepcopy(root), root)


def _strict_node(node: JsonObject, root: JsonObject) -> JsonObject:
    ref = node.get("$ref")
    if ref is not None and len(node) > 1:
        node = {**_resolve_ref(root, ref), **{k: v for k, v in node.items() if k != "$ref"}}
    for keyword in _SCHEMA_NOISE:
        node.pop(keyword, None)
    if "oneOf" in node:  # discriminated unions; strict mode only knows anyOf
        node["anyOf"] = node.pop("oneOf")
        node.pop("discriminator", None)
    if node.get("type") == "object":
        _strict_object(node)
    _strict_children(node, root)
    return node


def _strict_object(node: JsonObject) -> None:
    if "properties" not in node:
        raise ValueError(
            "strict structured outputs cannot express a free-form mapping (dict[str, X]); "
            "use a list of key/value models instead"
        )
    node["additionalProperties"] = False
    node["required"] = list(node["properties"])


def _strict_children(node: JsonObject, root: JsonObject) -> None:
    # Walk by keyword so that a property *named* "title" or "default" is kept.
    for keyword in ("properties", "$defs"):
        if keyword in node:
            node[keyword] = {name: _strict_node(sub, root) for name, sub in node[keyword].items()}
    for keyword in ("anyOf", "allOf", "prefixItems"):
        if keyword in node:
            node[keyword] = [_strict_node(sub, root) for sub in node[keyword]]
    if isinstance(node.get("items"), dict):
        node["items"] = _strict_node(node["items"], root)


def _resolve_ref(root: JsonObject, ref: str) -> JsonObject:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $refs are supported, got {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    return copy.deepcopy(target)
