"""The API's own OpenAPI schema, walked to generate requests: every operation, its path
and query parameters, and every string field of its request body, nested ones too.

The isolation matrix and the injection suite build their cases from this, so an
endpoint added later is attacked without anyone remembering to list it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Path = tuple[str | int, ...]  # where a value sits in a body; an int indexes a list

DATE = "2024-03-01T00:00:00Z"
SPAN = ("2000-01-01T00:00:00Z", "2099-12-31T00:00:00Z")


def api_schema() -> dict[str, Any]:
    from kgapp.web.api import api

    return api.get_openapi_schema()


@dataclass(frozen=True)
class Param:
    name: str
    location: str  # "path" or "query"
    schema: dict[str, Any]
    required: bool = False


@dataclass
class Operation:
    method: str  # upper case
    path: str  # as in the schema: /api/v1/t/{tenant}/...
    params: list[Param]
    body_kind: str | None  # "json", "multipart" or None
    body_schema: dict[str, Any] | None
    components: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def path_params(self) -> list[Param]:
        return [p for p in self.params if p.location == "path"]

    def query_params(self) -> list[Param]:
        return [p for p in self.params if p.location == "query"]

    def required_query(self) -> dict[str, Any]:
        """A value for every required query parameter, so that a request reaches the
        handler instead of a 422. Moments are spread, first to last of `SPAN`, so that a
        pair of them (a diff's `from` and `to`) takes in every record."""
        moments = iter(SPAN)
        values = {}
        for param in self.query_params():
            if param.required:
                is_moment = param.schema.get("format") == "date-time"
                values[param.name] = (
                    next(moments, DATE) if is_moment else example(self.components, param.schema)
                )
        return values

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        return resolve(self.components, node)

    def url(self, values: dict[str, Any]) -> str:
        from urllib.parse import quote

        url = self.path
        for param in self.path_params():
            url = url.replace("{" + param.name + "}", quote(str(values[param.name]), safe=""))
        return url

    def base_body(self) -> Any:
        """A minimal valid body: the required fields, each with a plain value."""
        if self.body_kind != "json" or self.body_schema is None:
            return None
        return example(self.components, self.body_schema)

    def moments(self) -> list[Moment]:
        """Every place this operation takes a moment: date-time query parameters and
        date-time fields of its JSON body, however deep."""
        found = [
            Moment((p.name,), "query")
            for p in self.query_params()
            if p.schema.get("format") == "date-time"
        ]
        if self.body_kind is not None and self.body_schema is not None:
            paths = moment_paths(self.components, self.body_schema)
            found += [Moment(path, self.body_kind) for path in paths]
        return found

    def body_leaves(self) -> list[Leaf]:
        if self.body_kind != "json" or self.body_schema is None:
            return []
        return list(leaves(self.components, self.body_schema))


@dataclass(frozen=True)
class Leaf:
    """A scalar string in a body: free text (`enum` empty) or one of `enum`."""

    path: Path
    schema: dict[str, Any]
    enum: tuple[Any, ...] = ()
    is_list: bool = False  # the field is a list of these: send the value as [value]


@dataclass(frozen=True)
class Moment:
    """Where an operation takes a moment: a query parameter, a path in its JSON body, or
    a field of its multipart form."""

    path: Path
    where: str  # "query", "json" or "multipart"


def moment_paths(
    components: dict[str, Any], node: dict[str, Any], prefix: Path = ()
) -> Iterator[Path]:
    node = resolve(components, node)
    kind = node.get("type")
    if kind == "object":
        for name, sub in node.get("properties", {}).items():
            yield from moment_paths(components, sub, (*prefix, name))
    elif kind == "array":
        yield from moment_paths(components, node.get("items", {}), (*prefix, 0))
    elif kind == "string" and node.get("format") == "date-time":
        yield prefix


def operations(schema: dict[str, Any]) -> list[Operation]:
    components = schema.get("components", {}).get("schemas", {})
    found = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            if method.lower() not in {"get", "post", "put", "patch", "delete"}:
                continue
            params = [
                Param(
                    p["name"],
                    p["in"],
                    resolve(components, p.get("schema", {})),
                    bool(p.get("required")),
                )
                for p in spec.get("parameters", [])
                if p["in"] in ("path", "query")
            ]
            kind, body = None, None
            content = spec.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                kind, body = "json", content["application/json"]["schema"]
            elif "multipart/form-data" in content:
                kind, body = "multipart", content["multipart/form-data"]["schema"]
            found.append(Operation(method.upper(), path, params, kind, body, components))
    return found


def resolve(components: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow `$ref`, and read `anyOf: [X, null]` (an optional field) as X."""
    while True:
        if "$ref" in node:
            node = components[node["$ref"].rsplit("/", 1)[1]]
            continue
        options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
        if len(options) == 1 and "type" not in node:
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **options[0]}
            continue
        return node


def example(components: dict[str, Any], node: dict[str, Any]) -> Any:
    node = resolve(components, node)
    kind = node.get("type")
    if "enum" in node:
        return node["enum"][0]
    if kind == "object":
        return {
            name: example(components, sub)
            for name, sub in node.get("properties", {}).items()
            if name in node.get("required", [])
        }
    if kind == "array":
        return [example(components, node.get("items", {}))] * node.get("minItems", 0)
    if kind == "string":
        if node.get("format") == "date-time":
            return DATE
        return "x" * max(1, node.get("minLength", 1))
    if kind == "integer":
        return node.get("default", node.get("minimum", 1))
    if kind == "number":
        return node.get("default", node.get("minimum", 0.5))
    if kind == "boolean":
        return False
    return None


def leaves(components: dict[str, Any], node: dict[str, Any], prefix: Path = ()) -> Iterator[Leaf]:
    """Every string field under `node` (required or not, however deep)."""
    node = resolve(components, node)
    kind = node.get("type")
    if kind == "object":
        for name, sub in node.get("properties", {}).items():
            yield from leaves(components, sub, (*prefix, name))
    elif kind == "array":
        items = resolve(components, node.get("items", {}))
        if items.get("type") in ("object", "array"):
            yield from leaves(components, items, (*prefix, 0))
        elif items.get("type") == "string":
            yield Leaf(prefix, items, tuple(items.get("enum", ())), is_list=True)
    elif kind == "string" and node.get("format") not in ("date-time", "binary"):
        yield Leaf(prefix, node, tuple(node.get("enum", ())))


def param_leaf(param: Param) -> Leaf | None:
    """A query or path parameter as a leaf, when it holds text."""
    node = param.schema
    if node.get("type") == "array":
        items = node.get("items", {})
        if items.get("type") == "string":
            return Leaf((param.name,), items, tuple(items.get("enum", ())), is_list=True)
        return None
    if node.get("type") == "string" and node.get("format") not in ("date-time", "binary"):
        return Leaf((param.name,), node, tuple(node.get("enum", ())))
    return None


def with_value(operation: Operation, base: Any, leaf: Leaf, value: Any) -> Any:
    """A copy of body `base` with `value` at `leaf` (missing parents filled in)."""
    body = copy.deepcopy(base) if base is not None else {}
    node = operation.resolve(operation.body_schema or {})
    target = body
    for step, next_step in zip(leaf.path, (*leaf.path[1:], None), strict=True):
        if isinstance(step, int):
            node = operation.resolve(node.get("items", {}))
        else:
            node = operation.resolve(node.get("properties", {}).get(step, {}))
        if next_step is None:
            if isinstance(step, int):
                target.append(value) if not target else target.__setitem__(0, value)
            else:
                target[step] = [value] if leaf.is_list else value
            break
        if isinstance(step, int):
            if not target:
                target.append(example(operation.components, node))
            target = target[0]
        else:
            if step not in target or not isinstance(target[step], (dict, list)):
                target[step] = example(operation.components, node)
            target = target[step]
    return body
