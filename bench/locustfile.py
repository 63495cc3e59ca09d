"""Locust users of bench/load.py (not a benchmark on its own: `make bench` skips it).

Reads its plan from the JSON file named by KG_LOAD_PLAN: the offered rate, the number of
users, the tenants (slug, viewer tokens, search texts, questions, entity ids to centre
graphs on) and where to write the samples. Each user belongs to one tenant and uses one
of that tenant's tokens; `constant_throughput(rate / users)` paces every user, so the
users together offer `rate` requests per second whatever the response times (until one
request outlasts a user's interval, which load.py reports as achieved < offered).

Mix, by weight: search 4, query without an answer 2, query answered by the (scripted)
model 1, graph 2. Every request's name, time, start and outcome is written to the
samples file when the run stops; load.py computes the figures from them.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant_throughput, events, task

PLAN: dict[str, Any] = json.loads(Path(os.environ["KG_LOAD_PLAN"]).read_text())
MODES = ["local", "global", "hybrid", "naive", "mix"]
_numbers = itertools.count()
_samples: list[tuple[str, float, bool, float, str]] = []


@events.request.add_listener
def _record(
    name: str,
    response_time: float,
    exception: BaseException | None,
    start_time: float = 0.0,
    **_kwargs: Any,
) -> None:
    _samples.append((name, response_time, exception is None, start_time, str(exception or "")))


@events.quitting.add_listener
def _write_samples(**_kwargs: Any) -> None:
    Path(PLAN["samples"]).write_text(json.dumps(_samples))


class Member(FastHttpUser):
    wait_time = constant_throughput(PLAN["rate"] / PLAN["users"])
    network_timeout = 30.0
    connection_timeout = 10.0

    def on_start(self) -> None:
        number = next(_numbers)
        tenants = PLAN["tenants"]
        self.tenant = tenants[number % len(tenants)]
        tokens = self.tenant["tokens"]
        token = tokens[(number // len(tenants)) % len(tokens)]
        self.headers = {"Authorization": f"Bearer {token}"}
        self.base = f"/api/v1/t/{self.tenant['slug']}"
        self.rng = random.Random(number)

    def _check(self, name: str, method: str, path: str, expect: str, **kwargs: Any) -> None:
        """One request; a failure unless it answers 200 with JSON holding `expect`."""
        with self.client.request(
            method,
            self.base + path,
            name=name,
            headers=self.headers,
            catch_response=True,
            **kwargs,
        ) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
                return
            try:
                body = response.json()
            except ValueError:
                response.failure("the answer is not JSON")
                return
            if not isinstance(body, dict) or body.get(expect) is None:
                response.failure(f"no {expect!r} in the answer")

    @task(4)
    def search(self) -> None:
        scopes = self.rng.choice(
            [["facts", "entities"], ["facts", "entities", "episodes", "communities"]]
        )
        self._check(
            "search",
            "POST",
            "/search",
            "facts",
            json={"query": self.rng.choice(self.tenant["searches"]), "scopes": scopes, "limit": 10},
        )

    @task(2)
    def query(self) -> None:
        self._check(
            "query",
            "POST",
            "/query",
            "context_text",
            json={
                "query": self.rng.choice(self.tenant["questions"]),
                "mode": self.rng.choice(MODES),
            },
        )

    @task(1)
    def query_answered(self) -> None:
        self._check(
            "query+answer",
            "POST",
            "/query",
            "answer",
            json={
                "query": self.rng.choice(self.tenant["questions"]),
                "mode": self.rng.choice(["hybrid", "mix"]),
                "answer": True,
            },
        )

    @task(2)
    def graph(self) -> None:
        if self.rng.random() < 0.5:
            self._check("graph", "GET", "/graph?limit=200", "nodes")
        else:
            seed = self.rng.choice(self.tenant["seeds"])
            self._check("graph", "GET", "/graph", "nodes", params={"seed": seed, "depth": 2})
