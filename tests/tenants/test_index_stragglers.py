"""The periodic sweep task (kgapp.index_stragglers): every tenant's facts and passages
that no ingest job embedded get their vectors, each tenant in its own namespace."""

from __future__ import annotations

import pytest

from kgapp import tasks
from tenants.wiring import tenant_graph
from tests.graph.ingest.test_indexing import CHAT, TEXT, forget_vectors, run, unembedded

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sweep_embeds_what_no_job_did_in_every_tenant(make_tenant) -> None:
    first, second, clean = make_tenant(), make_tenant(), make_tenant()
    for tenant, episode in ((first, CHAT), (second, TEXT), (clean, CHAT)):
        graph = tenant_graph(tenant)
        graph.run(run, [episode])
        if tenant is not clean:
            graph.run(forget_vectors, episode.content)
            assert graph.run(unembedded)["episodes"] == [episode.content]
    written = tasks.index_stragglers()
    assert written[first.slug] > 0 and written[second.slug] > 0 and written[clean.slug] == 0
    for tenant in (first, second, clean):
        assert tenant_graph(tenant).run(unembedded) == {"facts": [], "episodes": []}
