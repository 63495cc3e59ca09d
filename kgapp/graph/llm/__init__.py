"""The LLM boundary: typed, cached, retried calls to an OpenAI-compatible API.

Every answer leaves this package as a validated pydantic model or as one of the
`LLMError` subclasses in `errors`, so pipeline stages never see raw API objects.
"""
