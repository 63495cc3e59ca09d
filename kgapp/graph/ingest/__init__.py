"""Ingestion: episodes and documents become entities and bi-temporal facts."""
