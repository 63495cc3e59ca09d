"""resolve_entities on its own: each extracted name mapped onto an existing entity or
a new record, on the real SurrealDB server with the real local embeddings."""

from __future__ import annotations

from functools import partial

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.ingest.indexing import embed_episode
from kgapp.graph.resolution.canonical import alias_key
from kgapp.graph.resolution.entities import new_record, resolve_entities
from tests.graph.ingest.stages import JAN, MAR, context, entity, episode, write


async def known(store, name: str, entity_type: str = "Person") -> RecordID:
    """An entity written by an earlier episode; its record."""
    draft = entity(name, entity_type)
    await write(store, episode(f"{name} was mentioned.", JAN, [draft]))
    return draft.record


async def resolved(store, *drafts):
    """The drafts of a later episode after resolve_entities, and what it counted."""
    ctx = await context(store)
    later = episode("A later episode.", MAR, drafts)
    await resolve_entities(ctx, later, partial(embed_episode, ctx, later))
    return ctx.counts


async def test_the_same_name_resolves_to_the_existing_entity(migrated_store) -> None:
    store = await migrated_store()
    alice = await known(store, "Alice Moreau")
    again = entity("  ALICE   moreau ")
    counts = await resolved(store, again)
    assert (again.record, again.is_new, again.merge, again.candidates) == (alice, False, None, [])
    assert counts["entities_matched"] == 1


async def test_the_same_name_of_another_type_is_the_same_entity(migrated_store) -> None:
    """One type per name per tenant: what type it is, its mentions decide (persist)."""
    store = await migrated_store()
    manchester = await known(store, "Manchester", "Location")
    person = entity("Manchester", "Person")
    counts = await resolved(store, person)
    assert (person.record, person.is_new, person.merge, person.own_name) == (
        manchester,
        False,
        None,
        True,
    )
    assert counts["entities_matched"] == 1


async def test_an_alias_of_another_type_resolves_to_its_entity(migrated_store) -> None:
    store = await migrated_store()
    katherine = await known(store, "Katherine Smith")
    await store.query(
        queries.ALIAS_WRITE,
        {
            "id": RecordID("alias", alias_key("Person", "kate smith")),
            "name": "kate smith",
            "type": "Person",
            "entity": katherine,
        },
    )
    kate = entity("Kate Smith", "Organization")
    await resolved(store, kate)
    assert (kate.record, kate.is_new) == (katherine, False)


async def test_an_alias_resolves_to_its_entity(migrated_store) -> None:
    store = await migrated_store()
    katherine = await known(store, "Katherine Smith")
    await store.query(
        queries.ALIAS_WRITE,
        {
            "id": RecordID("alias", alias_key("Person", "kate smith")),
            "name": "kate smith",
            "type": "Person",
            "entity": katherine,
        },
    )
    kate = entity("Kate Smith")
    counts = await resolved(store, kate)
    assert (kate.record, kate.is_new, kate.merge, kate.candidates) == (katherine, False, None, [])
    assert counts["entities_matched"] == 1


async def test_a_name_that_says_the_same_is_merged_by_rule(migrated_store) -> None:
    store = await migrated_store()
    globex = await known(store, "Globex LLC", "Organization")
    short = entity("Globex", "Organization")
    counts = await resolved(store, short)
    assert (short.record, short.is_new, short.alias) == (globex, False, "globex")
    assert (short.merge.rule, short.merge.score, short.merge.survivor_name) == (
        "same_name",
        1.0,
        "Globex LLC",
    )
    assert counts["entities_merged"] == 1


async def test_one_typo_in_a_long_word_is_merged_by_rule(migrated_store) -> None:
    store = await migrated_store()
    kestrel = await known(store, "Kestrelworks", "Organization")
    typo = entity("Kestrelwroks", "Organization")
    await resolved(store, typo)
    assert (typo.record, typo.is_new, typo.merge.rule) == (kestrel, False, "typo")
    assert typo.merge.cosine is not None and typo.merge.cosine < 0.85  # the vectors alone would not


async def test_a_company_differing_in_a_distinguishing_word_stays_apart(migrated_store) -> None:
    store = await migrated_store()
    east = await known(store, "Acme Labs East", "Organization")
    west = entity("Acme Labs West", "Organization")
    counts = await resolved(store, west)
    assert west.is_new and west.record == new_record(west) != east
    assert west.merge is None and west.candidates == []  # not even asked about
    assert counts["entities_new"] == 1
    assert counts["entities_merge_blocked"] == 1  # the embeddings alone were close enough


async def test_a_near_name_that_names_cannot_settle_is_a_candidate(migrated_store) -> None:
    store = await migrated_store()
    corp = await known(store, "Acme Corp", "Organization")
    group = entity("Acme Group", "Organization")
    counts = await resolved(store, group)
    assert group.is_new and group.record == new_record(group) and group.merge is None
    assert [c["id"] for c in group.candidates] == [corp]
    assert group.candidates[0]["method"] == "embedding_band"
    assert 0.70 <= group.candidates[0]["score"] < 0.85
    assert counts["entities_ambiguous"] == 1 and counts["entities_new"] == 0
