"""The typed errors of the LLM boundary: every failure of a call leaves it as one of these."""

from __future__ import annotations


class LLMError(Exception):
    """Base of every error the LLM boundary raises."""


class LLMUnavailable(LLMError):
    """The API did not answer (retries exhausted) or rejects our credentials or model."""


class LLMQuotaExceeded(LLMError):
    """The account is out of quota or billing is off; never retried, the job pauses."""


class LLMRefused(LLMError):
    """The model declined to answer: a refusal message or the content filter."""


class LLMInvalidAnswer(LLMError):
    """The answer did not fit the schema, even after one repair attempt."""
