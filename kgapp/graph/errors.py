"""Typed errors of the graph store, so callers map them without parsing strings."""

from __future__ import annotations


class GraphError(Exception):
    """Base of every error the graph core raises."""


class GraphUnavailable(GraphError):
    """The SurrealDB server cannot be reached, or stopped answering."""


class GraphTimeout(GraphUnavailable):
    """A query did not answer within its deadline."""


class QueryFailed(GraphError):
    """SurrealDB rejected a statement (parse error, schema violation, ...)."""

    def __init__(self, message: str, *, kind: str | None = None, statement: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.statement = statement


class UniqueViolation(QueryFailed):
    """A UNIQUE index or record id is already taken, or the transaction conflicted with a
    concurrent writer: the writer should re-read and retry."""


class WriteConflict(GraphError):
    """A write kept conflicting with concurrent writers, or with what was written before;
    the caller may retry it."""


class NotFound(GraphError):
    """The record asked for does not exist in this tenant's graph."""


class InvalidRecordId(GraphError, ValueError):
    """A record id given from outside does not name an allowed table and a plain key."""


class SchemaError(GraphError):
    """A migration file is missing, changed after it was applied, or failed to apply."""
