"""The demo dataset loaded into a tenant as `make run` loads it (kgapp/demo), the chain
run eagerly: the graph it leaves, read back whole, against the answer key."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from kgapp.demo.dataset import DEMO_FILES, answer_key
from kgapp.demo.load import demo_load
from kgapp.demo.score import DemoGraph, demo_score
from kgapp.graph.ingest import service
from tenants.models import Tenant
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_loads_into_a_true_graph_once(make_tenant, eager) -> None:
    tenant = make_tenant()
    other = make_tenant()
    assert len(demo_load(tenant)) == len(DEMO_FILES)
    graph = tenant_graph(tenant).run(DemoGraph.read)
    score = demo_score(graph)
    key = answer_key()

    assert score.missing_entities == [] and score.junk == []
    found, total = score.facts_found
    assert found >= 0.9 * total, score.missing_facts
    assert score.dates_right[0] >= 0.9 * score.dates_right[1]
    assert score.apart == (len(key["apart"]), len(key["apart"]))
    assert score.aliases_merged[0] == score.aliases_merged[1] > 0
    assert score.supersessions == (len(key["supersessions"]["chains"]),) * 2
    assert graph.communities > 0
    assert graph.candidates > 0  # the review queue has pairs to show
    # Every document's episodes carry the file's own date, not the upload's.
    documents = tenant_graph(tenant).run(service.document_list, status=None, limit=50, offset=0)
    dates = {d["file_name"]: d["reference_time"] for d in documents}
    assert dates == {f.name: f.reference_time for f in DEMO_FILES}
    assert {d["status"] for d in documents} == {"completed"}

    # A second start finds every file there and queues nothing.
    assert demo_load(tenant) == []
    assert tenant_graph(tenant).run(DemoGraph.read).episodes == graph.episodes
    # The other tenant saw nothing of it (the candidates were generated for one tenant).
    untouched = tenant_graph(other).run(DemoGraph.read)
    assert (untouched.episodes, untouched.entities, untouched.candidates) == (0, {}, 0)


def test_bootstrap_demo_skips_the_demo_data_when_it_is_off(
    runtime, settings, tmp_path, capsys
) -> None:
    settings.VAR_DIR = tmp_path
    settings.DEMO_DATA = False
    call_command("bootstrap_demo", "--tenant", "demo-off", "--username", "demo-off-admin")
    tenant = Tenant.objects.get(slug="demo-off")
    documents = tenant_graph(tenant).run(service.document_list, status=None, limit=50, offset=0)
    call_command("delete_tenant", "demo-off", "--confirm", "demo-off")
    assert documents == []
    assert "demo data" not in capsys.readouterr().out
