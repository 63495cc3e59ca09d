"""Membership writes at once, each request in a thread of its own with its own database
connection, as a web server's workers send them: every answer is a decision (200, 202,
204, 404, 409), never a 500, and a tenant always keeps an owner."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from tenants.models import Invitation, Membership, Role

pytestmark = pytest.mark.django_db(transaction=True)


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run `calls` in threads released together; their answers, in order."""
    start = threading.Barrier(len(calls))
    answers: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        start.wait()
        try:
            answers[index] = calls[index]()
        finally:
            connections.close_all()  # this thread's connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


def put_member(client: Client, slug: str, username: str, role: str) -> Any:
    return client.put(
        f"/api/v1/t/{slug}/members",
        data=json.dumps({"username": username, "role": role}),
        content_type="application/json",
    )


def test_two_owners_demoting_and_removing_each_other_at_once(
    make_tenant, member, token_client
) -> None:
    statuses: Counter[int] = Counter()
    for _ in range(6):
        tenant = make_tenant()
        alice, bob = member(tenant, Role.OWNER), member(tenant, Role.OWNER)
        statuses.update(_owners_against_each_other(tenant.slug, alice, bob, token_client))
        assert Membership.objects.filter(tenant=tenant, role=Role.OWNER).exists()
    assert set(statuses) <= {200, 202, 204, 403, 404, 409}, statuses
    assert statuses[200] + statuses[204] >= 6  # in each round, someone's change landed


def _owners_against_each_other(slug: str, alice: Any, bob: Any, token_client: Any) -> list[int]:
    as_alice, as_bob = token_client(alice), token_client(bob)
    answers = at_once(
        [
            lambda: put_member(as_alice, slug, bob.username, "viewer"),
            lambda: put_member(as_bob, slug, alice.username, "viewer"),
            lambda: as_alice.delete(f"/api/v1/t/{slug}/members/{bob.username}"),
        ]
    )
    return [answer.status_code for answer in answers]


def test_forty_invitations_and_role_changes_at_once(make_tenant, member, token_client) -> None:
    tenant = make_tenant()
    owners = [token_client(member(tenant, Role.OWNER)) for _ in range(4)]
    editors = [member(tenant, Role.EDITOR) for _ in range(4)]
    calls = []
    for index in range(40):
        client = owners[index % len(owners)]
        if index % 2:
            name, role = (
                editors[index % len(editors)].username,
                ["viewer", "curator"][index % 4 // 2],
            )
        else:
            name, role = ["0", f"guest{index % 6}"][index % 4 // 2], "viewer"
        calls.append(lambda c=client, n=name, r=role: put_member(c, tenant.slug, n, r))
    answers = at_once(calls)
    statuses = Counter(answer.status_code for answer in answers)
    assert set(statuses) <= {200, 202}, (
        statuses,
        [a.content for a in answers if a.status_code >= 500][:2],
    )
    assert Invitation.objects.filter(tenant=tenant).count() == 4  # "0", guest0, guest2, guest4


def test_a_write_that_cannot_get_the_lock_answers_503_and_changes_nothing(
    make_tenant, member, token_client, settings
) -> None:
    """Another process holds SQLite's write lock past the busy timeout (here 0.3 s):
    503 with Retry-After, nothing written; once the lock is free, the same request lands."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        pytest.fail("this test is for the default SQLite database")
    tenant = make_tenant()
    owner = token_client(member(tenant, Role.OWNER))
    connection = connections["default"]
    connection.close()
    options = connection.settings_dict["OPTIONS"]
    connection.settings_dict["OPTIONS"] = {**options, "timeout": 0.3}
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        busy = put_member(owner, tenant.slug, "newcomer", "viewer")
        assert busy.status_code == 503, busy.content
        assert busy["Retry-After"] and "retry" in busy.json()["detail"]
        other.execute("ROLLBACK")
        assert not Invitation.objects.filter(tenant=tenant, username="newcomer").exists()
        assert put_member(owner, tenant.slug, "newcomer", "viewer").status_code == 202
    finally:
        other.close()
        connection.close()
        connection.settings_dict["OPTIONS"] = options
