"""API fuzzing: schemathesis generates requests from the OpenAPI schema the app serves
(/api/openapi.json), valid ones and invalid ones, for every operation, and sends them
to the app in-process (WSGI) with an owner's bearer token. Three checks on every answer:

- not_a_server_error: no 5xx;
- response_schema_conformance: the body matches the schema declared for its status;
- ignored_auth: an operation that declares authentication refuses the same request
  without credentials and with wrong ones.

The suite runs a short pass (KG_FUZZ_CASES unset: FUZZ_EXAMPLES per operation and
mode); `make fuzz` runs KG_FUZZ_CASES (10,000) cases spread over the operations, with
KG_FUZZ_WORKERS (4) requests in flight at once, as a server's workers take them.
Every failure is listed with a curl line that reproduces it.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.db import connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth, response_schema_conformance

from tenants import services
from tenants.models import ApiToken, Role

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [not_a_server_error, response_schema_conformance, ignored_auth]
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
FUZZ_EXAMPLES = 4  # per operation and mode in the suite's short pass
TOTAL = int(os.environ.get("KG_FUZZ_CASES") or 0)
WORKERS = int(os.environ.get("KG_FUZZ_WORKERS") or 1)  # requests in flight at once


@dataclass
class Run:
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[str, list[str]] = field(default_factory=dict)  # check title -> examples
    seconds: float = 0.0
    impossible: list[str] = field(default_factory=list)  # nothing to make invalid (no input)

    pool: ThreadPoolExecutor | None = None  # sends the requests when WORKERS > 1
    pending: list[tuple[str, Any, dict[str, str], Future[Any]]] = field(default_factory=list)

    def fail(self, title: str, line: str) -> None:
        self.failures.setdefault(title, []).append(line)

    def check_oldest(self) -> None:
        label, case, headers, sent = self.pending.pop(0)
        _check(label, case, headers, sent.result(), self)


class Credentials:
    """The owner's bearer token, made again if a fuzzed DELETE /tokens/{id} revoked it
    (revoking one's own token is allowed, and answers 204)."""

    def __init__(self, user: Any):
        self.user = user
        self.token: ApiToken | None = None
        self.secret = ""

    def headers(self) -> dict[str, str]:
        if self.token is None or ApiToken.objects.get(pk=self.token.pk).revoked_at is not None:
            self.token, self.secret = services.token_create(user=self.user, name="fuzz")
        return {"Authorization": f"Bearer {self.secret}"}


def fuzz(schema: Any, slug: str, credentials: Credentials, per_operation: int, run: Run) -> None:
    """One round: `per_operation` cases for every operation in each mode."""
    started = time.perf_counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        fixed = {"tenant": slug} if "{tenant}" in operation.path else None
        for mode in MODES:
            _fuzz_operation(operation, mode, fixed, credentials, per_operation, run)
    while run.pending:
        run.check_oldest()
    run.seconds += time.perf_counter() - started


def _call(case: Any, headers: dict[str, str]) -> Any:
    try:
        return case.call(headers=headers)
    except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001  (recorded by _check)
        return error


def _sent(case: Any, headers: dict[str, str]) -> Any:
    """One request from a pool thread, which then gives its database connection back
    (as the request of a server's worker thread ends)."""
    try:
        return _call(case, headers)
    finally:
        connections.close_all()


def _check(label: str, case: Any, headers: dict[str, str], response: Any, run: Run) -> None:
    try:
        if isinstance(response, BaseException):
            raise response
        run.statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)
    except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001  (recorded; the run goes on)
        for failure in getattr(error, "exceptions", [error]):
            title = getattr(failure, "title", type(failure).__name__)
            curl = case.as_curl_command(headers={"Authorization": "Bearer $TOKEN"})
            run.fail(f"{label}: {title}", f"{str(failure)[:300]}\n    {curl[:600]}")


def _fuzz_operation(
    operation: Any,
    mode: GenerationMode,
    fixed: dict[str, str] | None,
    credentials: Credentials,
    examples: int,
    run: Run,
) -> None:
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed)

    @given(case=strategy)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # every failure is recorded, none shrunk
        suppress_health_check=list(HealthCheck),
    )
    def one(case: Any) -> None:
        headers = credentials.headers()
        run.cases += 1
        if run.pool is None:
            _check(operation.label, case, headers, _call(case, headers), run)
            return
        # Sent by a pool thread while the next cases are drawn; checked here, in order,
        # once WORKERS requests are in flight (Hypothesis and schemathesis stay on this
        # thread: their generators are not thread-safe).
        run.pending.append((operation.label, case, headers, run.pool.submit(_sent, case, headers)))
        while len(run.pending) > WORKERS:
            run.check_oldest()

    try:
        one()
    except Unsatisfiable:
        run.impossible.append(f"{operation.label} ({mode.value})")


@pytest.mark.filterwarnings(
    "ignore::hypothesis.errors.HypothesisDeprecationWarning"
)  # schemathesis'
def test_fuzzing_finds_no_server_error_schema_violation_or_ignored_auth(
    make_tenant, member, capsys
) -> None:
    tenant = make_tenant()
    owner = member(tenant, Role.OWNER)
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", WSGIHandler())
    operations = [r.ok() for r in schema.get_all_operations()]
    credentials, run = Credentials(owner), Run()
    if WORKERS > 1:
        run.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="fuzz")
    fuzz(schema, tenant.slug, credentials, FUZZ_EXAMPLES, run)
    rounds = 1
    # Operations with little input to vary (no parameters, an enum) run out of new cases
    # early: further rounds, with fresh random seeds, make up the total.
    while run.cases < TOTAL:
        before = run.cases
        per_operation = math.ceil((TOTAL - run.cases) / (len(operations) * len(MODES)))
        fuzz(schema, tenant.slug, credentials, per_operation, run)
        rounds += 1
        assert run.cases > before, "no new cases: every operation ran out of inputs"
    if run.pool is not None:
        run.pool.shutdown()
    with capsys.disabled():
        failed = sum(len(v) for v in run.failures.values())
        print(
            f"\nfuzz: {run.cases} cases over {len(operations)} operations, valid and invalid"
            f" ({rounds} round{'s' if rounds > 1 else ''}, {WORKERS} at once), {failed} failures"
            f" in {len(run.failures)} kinds, {run.seconds:.1f} s;"
            f" statuses {dict(sorted(run.statuses.items()))}"
        )
        for title, examples in sorted(run.failures.items()):
            print(f"  {len(examples)} x {title}\n    {examples[0]}")
    assert run.cases >= len(operations) * len(MODES)
    assert run.failures == {}


def test_request_validation_errors_are_one_readable_detail(
    make_tenant, member, token_client
) -> None:
    """The declared 422 body is `{"detail": str}`: pydantic's findings are joined into it,
    each naming its field."""
    import json

    tenant = make_tenant()
    client = token_client(member(tenant, Role.EDITOR))
    body = {"source": {"name": "x" * 301}, "relation": "KNOWS", "target": {}}
    response = client.post(
        f"/api/v1/t/{tenant.slug}/facts", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str)
    assert "source.name: String should have at most 300 characters" in detail
    assert "target.name: Field required" in detail
    bad_query = client.get(f"/api/v1/t/{tenant.slug}/jobs?limit=0")
    assert bad_query.json() == {"detail": "limit: Input should be greater than or equal to 1"}


def test_the_harness_reports_an_operation_that_ignores_its_auth(make_tenant, member) -> None:
    """The health check needs no login; declared as needing a token, the same fuzzing
    loop must report it (the checks are live, not decoration)."""
    from kgapp.web.api import api

    raw = api.get_openapi_schema()
    raw["paths"]["/api/v1/health"]["get"]["security"] = [{"BearerToken": []}]
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = WSGIHandler()
    tenant = make_tenant()
    run = Run()
    health = next(r.ok() for r in schema.get_all_operations() if r.ok().path == "/api/v1/health")
    _fuzz_operation(health, GenerationMode.POSITIVE, None, Credentials(member(tenant)), 2, run)
    assert run.cases >= 1
    assert any("without authentication" in title for title in run.failures), run.failures
