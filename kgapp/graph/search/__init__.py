"""Retrieval: hybrid search over facts, entities and episodes, as of any moment."""
