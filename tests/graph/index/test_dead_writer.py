"""A writer of the search index that dies in the middle of a pass, as a SIGKILLed
indexer does (issue 32): the next writer indexes what it left half done, and a search
finds it, once. The columns are shared memory maps, so what the dead writer put there
stays; tantivy keeps only what it committed."""

from __future__ import annotations

import gc

import pytest

from kgapp.graph.index import directories, indexer
from kgapp.graph.index.text import TextWriter
from tests.graph.index.test_search_index import (
    add_fact,
    at,
    facts_store,
    forget_this_process,
    found,
)


class Killed(Exception):
    """Where the writer's process died."""


async def die_in_a_pass(store, monkeypatch, *, where: str) -> None:
    """One pass over what the feed recorded since the last, by a writer that dies
    `where`: before tantivy commits, or after it committed, before the manifest."""

    def killed(*args, **kwargs):
        raise Killed(where)

    if where == "before the text commit":
        monkeypatch.setattr(TextWriter, "commit", killed)
    else:
        monkeypatch.setattr(directories, "write_manifest", killed)
    directory = directories.tenant_dir(store.namespace)
    writer = indexer.TenantWriter(directory, store.namespace)
    with pytest.raises(Killed):
        await writer.run_pass(store)
    monkeypatch.undo()
    for table in writer.tables.values():  # gone with its process: nothing closed
        table.text._writer = None
    del writer
    gc.collect()


@pytest.mark.parametrize("where", ["before the text commit", "before the manifest"])
async def test_what_a_dead_writer_left_half_done_is_indexed_by_the_next(
    migrated_store, monkeypatch, where: str
) -> None:
    store = await facts_store(migrated_store)
    assert await found(store, "Orbital") == ["Ada works at Orbital Labs."]
    forget_this_process()
    await add_fact(store, "f2", "Ada joined Quantum Labs.", "quantum", at(2024, 6, 1))
    await store.query("UPDATE relates_to:f1 SET fact = 'Ada runs Orbital Labs.';")
    await die_in_a_pass(store, monkeypatch, where=where)
    # The next writer (a process started afterwards) follows the feed from the manifest.
    assert await found(store, "Quantum") == ["Ada joined Quantum Labs."]
    assert await found(store, "Orbital") == ["Ada runs Orbital Labs."]
    assert await found(store, "works") == []
