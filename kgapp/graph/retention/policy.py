"""A tenant's retention policy: keep everything (the default), or drop what has aged.

- `facts_ended_days`: a fact whose system-time end (`expired_at`: the moment the graph
  retired it, superseded or corrected) is more than N days before now. A current fact
  (no `expired_at`) is never dropped, however old its validity.
- `episodes_days`: an episode *stored* more than N days ago (its `created_at`, system
  time), not its reference time: a conversation from 2019 uploaded today is kept N days
  from today, as a person setting "keep uploads N days" expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kgapp.graph.audit import RetentionPolicyFields
from kgapp.graph.errors import GraphError
from kgapp.graph.records import JsonObject

MODES = ("keep_all", "drop")
MIN_DAYS = 1
MAX_DAYS = 36_500  # a hundred years: beyond that "keep all" says it better


class PolicyInvalid(GraphError):
    """The policy cannot be applied as given (a person can act on the message)."""


@dataclass(frozen=True)
class RetentionPolicy:
    mode: str = "keep_all"
    facts_ended_days: int | None = None
    episodes_days: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise PolicyInvalid(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        for name in ("facts_ended_days", "episodes_days"):
            _check_days(name, getattr(self, name))
        if self.mode == "drop" and self.facts_ended_days is None and self.episodes_days is None:
            raise PolicyInvalid(
                "mode 'drop' needs facts_ended_days or episodes_days (or both):"
                " with neither it would remove nothing"
            )

    @property
    def drops(self) -> bool:
        """Whether applying the policy can remove anything."""
        return self.mode == "drop"

    def cutoffs(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """(facts ended before this go, episodes stored before this go); None: none go."""
        if not self.drops:
            return None, None
        return _before(now, self.facts_ended_days), _before(now, self.episodes_days)

    def as_dict(self) -> RetentionPolicyFields:
        return RetentionPolicyFields(
            mode=self.mode,
            facts_ended_days=self.facts_ended_days,
            episodes_days=self.episodes_days,
        )

    # JSON as an import file gave it: any key may be missing (the policy checks the rest).
    @classmethod
    def from_dict(cls, data: JsonObject) -> RetentionPolicy:
        return cls(
            mode=data.get("mode") or "keep_all",
            facts_ended_days=data.get("facts_ended_days"),
            episodes_days=data.get("episodes_days"),
        )


def _check_days(name: str, days: object) -> None:
    if days is None:
        return
    if isinstance(days, bool) or not isinstance(days, int):
        raise PolicyInvalid(f"{name} must be a whole number of days, not {days!r}")
    if not MIN_DAYS <= days <= MAX_DAYS:
        raise PolicyInvalid(
            f"{name} must be between {MIN_DAYS} and {MAX_DAYS} days (got {days});"
            " leave it empty to keep that kind of record"
        )


def _before(now: datetime, days: int | None) -> datetime | None:
    return None if days is None else now - timedelta(days=days)
