"""Prompts, each beside the response model the LLM must fill (docs/llm-contract.md)."""
