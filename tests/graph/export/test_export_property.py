"""Export and import as a property: after any sequence of uploads, re-uploads, deletions,
facts added through the API, merges and undos (the lifecycle property's steps), the
tenant exported, imported into an empty namespace and exported again gives the same
file apart from its header; and the import is a working tenant, not a copy to look at:
undoing its last merge there leaves the same graph as undoing it in the original.

`KG_LIFECYCLE_EXAMPLES` sets the number of examples (`make lifecycle` runs many more).
"""

from __future__ import annotations

import asyncio

from django.conf import settings
from hypothesis import example, given
from hypothesis import strategies as st

from kgapp.graph import schema
from kgapp.graph.curation.common import CurationRefused
from kgapp.graph.curation.undo import undo
from kgapp.graph.store import Pool, StoreConfig, TenantStore
from tests.conftest import unique_slug
from tests.graph.export.test_jsonl import META, body, exported, loaded
from tests.graph.ingest.test_lifecycle_property import (
    SCENARIO_SETTINGS,
    STEP,
    Scenario,
    _fresh,
    graph_of,
)

UNDONE: list[str] = []  # what undoing a merge did, in the examples that had one


class Exported(Scenario):
    """The steps applied to a live tenant, then the export's round trip checked."""

    async def run(self, steps: list[tuple[str, int]]) -> None:
        live = await _fresh(self.config, self.pools)
        try:
            for kind, choice in steps:
                await self.step(live, kind, choice)
            await self.check(live, steps)
        finally:
            await self.close()

    async def check(self, live: TenantStore, steps: list[tuple[str, int]]) -> None:
        first = await exported(live)
        copy = await self.bare()
        await loaded(copy, first)
        second = await exported(copy, META)
        assert body(second) == body(first), f"after {steps}"
        merges = [action for action in self.model.actions if action[0] == "merge"]
        if not merges:
            return
        entry = merges[-1][3]
        outcomes = []
        for store in (live, copy):
            try:
                await undo(store, entry, actor="curator")
                outcomes.append("undone")
            except CurationRefused as refusal:
                outcomes.append(str(refusal))
        assert outcomes[0] == outcomes[1], f"after {steps}: {outcomes}"
        assert await graph_of(copy) == await graph_of(live), f"after {steps}, undo"
        UNDONE.append(outcomes[0])

    async def bare(self) -> TenantStore:
        """A new tenant's namespace: the schema only (the steps' tenant has an ontology)."""
        namespace = "t_" + unique_slug("copy").replace("-", "_")
        pool = Pool(self.config, namespace)
        self.pools.append((pool, namespace))
        store = TenantStore(pool)
        await schema.migrate(store, schema.load_migrations(settings.SCHEMA_DIR), embedding_dim=384)
        return store


def test_any_lifecycle_survives_export_and_import(store_config: StoreConfig) -> None:
    @SCENARIO_SETTINGS
    @given(st.lists(STEP, min_size=1, max_size=6))
    @example([("upload", 0), ("upload", 4), ("merge", 7)])
    def check(steps: list[tuple[str, int]]) -> None:
        asyncio.run(Exported(store_config).run(steps))

    UNDONE.clear()
    check()
    assert "undone" in UNDONE  # the undo after an import was really tried
