"""Every SurrealQL string the application sends, outside the schema migrations.

Values always travel as `$parameters`. The only identifiers ever formatted into a
string are namespace names, which `check_namespace` validates against a strict
pattern first, and table names, which come from the `GRAPH_TABLES` allowlist.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from kgapp.graph.errors import GraphError

NAMESPACE_PATTERN = re.compile(r"^t_[a-z0-9_]{1,60}$")

# Tables whose rows the edges may name by record id or subscribe to.
GRAPH_TABLES = frozenset(
    {
        "episode",
        "document",
        "entity",
        "alias",
        "relates_to",
        "mentions",
        "occurred_after",
        "saga",
        "has_episode",
        "community",
        "has_member",
        "dedup_candidate",
        "job",
        "audit",
        "ontology",
    }
)
# Tables a browser may watch live (the explorer's view of the graph and its jobs).
LIVE_TABLES = frozenset({"entity", "relates_to", "community", "job"})


def check_namespace(namespace: str) -> str:
    if not NAMESPACE_PATTERN.fullmatch(namespace):
        raise GraphError(f"not a tenant namespace: {namespace!r}")
    return namespace


def check_table(table: str, allowed: frozenset[str] = GRAPH_TABLES) -> str:
    if table not in allowed:
        raise GraphError(f"not an allowed table: {table!r}")
    return table


def in_transaction(sql: str) -> str:
    return f"BEGIN TRANSACTION;\n{sql.rstrip().rstrip(';')};\nCOMMIT TRANSACTION;"


def is_unique_violation(message: str) -> bool:
    return "already contains" in message


def is_rollback_notice(message: str) -> bool:
    return "not executed due to a failed transaction" in message or (
        "transaction" in message and "cancelled" in message
    )


# --- namespaces (root level) ---------------------------------------------------------


def define_namespace(namespace: str, database: str) -> str:
    ns = check_namespace(namespace)
    db = _check_database(database)
    return f"DEFINE NAMESPACE IF NOT EXISTS {ns}; USE NS {ns}; DEFINE DATABASE IF NOT EXISTS {db};"


def remove_namespace(namespace: str) -> str:
    return f"REMOVE NAMESPACE IF EXISTS {check_namespace(namespace)};"


ROOT_INFO = "INFO FOR ROOT;"


def _check_database(database: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", database):
        raise GraphError(f"not a database name: {database!r}")
    return database


# --- schema migrations ---------------------------------------------------------------

MIGRATION_TABLE = """
DEFINE TABLE IF NOT EXISTS schema_migration SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS name ON schema_migration TYPE string;
DEFINE FIELD IF NOT EXISTS version ON schema_migration TYPE int;
DEFINE FIELD IF NOT EXISTS checksum ON schema_migration TYPE string;
DEFINE FIELD IF NOT EXISTS embedding_dim ON schema_migration TYPE int;
DEFINE FIELD IF NOT EXISTS applied_at ON schema_migration TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS schema_migration_version ON schema_migration FIELDS version UNIQUE;
"""

MIGRATIONS_APPLIED = """
SELECT name, version, checksum, embedding_dim, applied_at FROM schema_migration
ORDER BY version;
"""

MIGRATION_RECORD = """
CREATE schema_migration CONTENT {
    name: $name, version: $version, checksum: $checksum, embedding_dim: $embedding_dim
};
"""

# --- health and jobs -----------------------------------------------------------------

PING = "RETURN true;"

# `SELECT count() ... GROUP ALL` counts a table's keys; `count(SELECT VALUE id ...)` read
# every record, vectors included (1.4 s for these counts at 10,000 facts; 19 ms now).
TABLE_COUNTS = """
RETURN {
    entities: (SELECT count() FROM entity GROUP ALL)[0].count ?? 0,
    facts: (SELECT count() FROM relates_to GROUP ALL)[0].count ?? 0,
    episodes: (SELECT count() FROM episode GROUP ALL)[0].count ?? 0,
    documents: (SELECT count() FROM document GROUP ALL)[0].count ?? 0,
    communities: (SELECT count() FROM community GROUP ALL)[0].count ?? 0
};
"""

ENTITY_COUNT = "RETURN (SELECT count() FROM entity GROUP ALL)[0].count ?? 0;"

JOB_CREATE = """
CREATE ONLY job CONTENT {
    kind: $kind, status: 'queued', progress: 0, total: $total, counts: {}, timings: {},
    created_by: $created_by, params: $params, document: $document
};
"""

JOB_GET = "SELECT * FROM ONLY $job;"

JOB_LIST = """
SELECT *, document.file_name AS file_name FROM job WHERE $status = NONE OR status = $status
ORDER BY created_at DESC LIMIT $limit START $offset;
"""

JOB_START = """
UPDATE ONLY $job SET status = 'running', started_at = time::now(), updated_at = time::now(),
    heartbeat_at = time::now(), attempts += 1
WHERE status IN ['queued', 'running'];
"""

# A running job's worker says it is alive (jobs.heartbeat). A job that ran before
# heartbeats existed is judged by its last update.
JOB_HEARTBEAT = "UPDATE $job SET heartbeat_at = time::now() WHERE status = 'running' RETURN NONE;"

_JOB_STALE = """status = 'running'
    AND (heartbeat_at ?? updated_at) < time::now() - duration::from_millis($stale_ms)"""

JOBS_STALE = f"SELECT id, kind FROM job WHERE {_JOB_STALE} AND kind IN $kinds;"

# Conditional, so that of two workers requeueing at once only one sends the task again.
JOB_REQUEUE_STALE = f"""
UPDATE ONLY $job SET status = 'queued', phase = NONE, updated_at = time::now()
WHERE {_JOB_STALE};
"""

JOB_FINISH = """
UPDATE ONLY $job SET status = 'completed', progress = total, finished_at = time::now(),
    updated_at = time::now(), counts = $counts, timings = $timings, error = NONE;
"""

JOB_FAIL = """
UPDATE ONLY $job SET status = 'failed', finished_at = time::now(), updated_at = time::now(),
    error = $error;
"""

# --- live changes --------------------------------------------------------------------


def live_select(table: str) -> str:
    return f"LIVE SELECT * FROM {check_table(table, LIVE_TABLES)};"


KILL_LIVE = "KILL $id;"


_MISSING_RECORD = re.compile(r"The record '[^']+' does not exist")


def is_missing_record(message: str) -> bool:
    """A statement named a record that is not there (RELATE into an ENFORCED relation)."""
    return _MISSING_RECORD.search(message) is not None


def is_conflict(message: str) -> bool:
    """A concurrent writer touched the same records: retrying the transaction is right."""
    lowered = message.lower()
    return "already exists" in message or "conflict" in lowered or "can be retried" in lowered


# --- statement batches ---------------------------------------------------------------

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class Batch:
    """Many parameterised statements sent as one query (one transaction, usually).

    Each `add` renames the statement's own parameters with a numeric suffix so that
    statements cannot read each other's values; `$input`-style engine variables and
    names not passed in `params` are left alone.
    """

    def __init__(self) -> None:
        self._statements: list[str] = []
        self.params: dict[str, object] = {}

    def add(self, statement: str, **params: object) -> int:
        index = len(self._statements)

        def rename(match: re.Match[str]) -> str:
            name = match.group(1)
            return f"${name}_{index}" if name in params else match.group(0)

        self._statements.append(_PARAM.sub(rename, statement.strip().rstrip(";")))
        for name, value in params.items():
            self.params[f"{name}_{index}"] = value
        return index

    def __len__(self) -> int:
        return len(self._statements)

    @property
    def sql(self) -> str:
        return ";\n".join(self._statements) + ";"


# --- ingestion: reads ----------------------------------------------------------------

RECORD_EXISTS = "RETURN record::exists($id);"

EPISODE_CONTEXT = """
SELECT id, content, valid_at FROM episode
WHERE saga = $saga AND valid_at <= $at AND id != $id
ORDER BY valid_at DESC LIMIT $limit;
"""

ENTITIES_BY_CANONICAL = """
SELECT id, name, canonical_name, entity_type, summary, merged_into FROM entity
WHERE canonical_name IN $names;
"""

# Entities whose names say they are one thing (kgapp/graph/names.py).
ENTITIES_BY_MATCH_KEY = """
SELECT id, name, entity_type, match_key, merged_into FROM entity WHERE match_key IN $keys;
"""

ALIASES_BY_NAME = """
SELECT name, entity_type, entity.id AS entity, entity.merged_into AS merged_into FROM alias
WHERE name IN $names;
"""

# Entities created since a moment (all when NONE), with their name vectors, for the
# in-process copy used by resolution (kgapp/graph/ingest/vectors.py).
ENTITY_VECTORS_ALL = """
SELECT id, name, entity_type, summary, name_embedding, merged_into, created_at FROM entity;
"""

# The entities created after $since that are not among $held: only the created_at
# condition, so that the planner takes that index (3.0.2 picks the merged_into index
# otherwise and scans every entity); ids first, so that vectors are read only for
# entities not yet held. One round trip.
ENTITY_VECTORS_SINCE = """
LET $ids = (SELECT VALUE id FROM entity WHERE created_at > $since);
RETURN array::complement($ids, $held).map(|$id| (SELECT id, name, entity_type, summary,
    name_embedding, merged_into, created_at FROM ONLY $id));
"""

# What a cached entity is now: its survivor if merged, else itself, with its type now
# (a generic type is refined by later mentions); nothing if deleted.
ENTITY_CURRENT = """
SELECT VALUE {id: merged_into ?? id, entity_type: (merged_into ?? id).entity_type} FROM $id;
"""

# WITH INDEX: left alone, 3.0.2's planner scans the expired_at index (every current fact).
FACTS_OF_SOURCE = """
SELECT * OMIT fact_embedding FROM relates_to WITH INDEX relates_to_in_relation
WHERE in = $source AND expired_at = NONE;
"""

# --- ingestion: writes (one transaction per episode) ----------------------------------

EPISODE_CREATE = "CREATE $id CONTENT $data RETURN NONE;"

SAGA_UPSERT = """
IF record::exists($saga) {} ELSE { CREATE $saga CONTENT {name: $name} };
RELATE $saga->has_episode->$episode RETURN NONE;
"""

EPISODE_FOLLOWS = "RELATE $episode->occurred_after->$previous RETURN NONE;"

# A new entity is created outright: if a concurrent writer created the same key first,
# the transaction fails with "already exists" and the episode is resolved again.
ENTITY_CREATE = "CREATE $id CONTENT $row RETURN NONE;"

# One type per entity: the one most of its mentions give (kgapp/graph/ontology.py), from
# $type_votes ({type, seen} per mention). Ranks as ontology.BROAD_ENTITY_TYPES: a broad
# type only where no mention gives another; a tie goes to the type said first, then to
# the name. A mention written before 0016 says no type: it counts for the type there is.
ENTITY_TYPE_WON = """(SELECT type, IF type = 'Entity' THEN 2 ELSE IF type = 'Concept' THEN 1 ELSE 0 END AS rank, n, first
    FROM (SELECT type, count() AS n, time::min(seen) AS first FROM $type_votes GROUP BY type)
    ORDER BY rank, n DESC, first, type LIMIT 1)[0].type"""
_MENTION_VOTES = """(SELECT VALUE {type: entity_type ?? $type_now, seen: seen_at} FROM mentions
    WITH INDEX mentions_out WHERE out = $id)"""

# An existing entity mentioned again, by an episode whose mention (written after this)
# gives $vote: one write for what the episode tells of it (seen at $seen, its summary
# $summary, NONE: unchanged, $delta more current facts), unless a curator merged it, or
# someone deleted it, since resolution read it: then the transaction fails as a
# conflict, and the episode is resolved again (following `merged_into`). Then, if $vote
# may change its type, the type its mentions give now, and if $vote wins, $key, the match
# key of its name as $vote (NONE: the episode did not say its name, the key stays until
# a recount); a vote for the type it has, or for a broader one, cannot change it and
# reads nothing. Two statements: each costs about half a millisecond of its own. Inside
# the episode's transaction, so that two episodes deciding one entity's type conflict.
ENTITY_SEEN = (
    """
LET $was = (UPDATE ONLY $id SET last_seen_at = time::max([last_seen_at, $seen]),
    first_seen_at = time::min([first_seen_at, $seen]),
    name_embedding = name_embedding ?? $embedding, summary = $summary ?? summary,
    degree += $delta WHERE merged_into = NONE RETURN BEFORE);
IF $was = NONE {
    THROW "conflict: an entity was merged or deleted meanwhile; resolve again";
} ELSE IF $vote != $was.entity_type
    AND ($vote NOTINSIDE ['Concept', 'Entity'] OR $was.entity_type = 'Entity') {
    LET $type_now = $was.entity_type;
    LET $type_votes = array::append("""
    + _MENTION_VOTES
    + """, {type: $vote, seen: $seen});
    LET $type_won = """
    + ENTITY_TYPE_WON
    + """;
    UPDATE $id SET entity_type = $type_won,
        match_key = IF $type_won = $vote AND $key != NONE THEN $key ELSE match_key END
        RETURN NONE;
};
"""
)

# The entities' types as their mentions give them now (ontology.entity_types_recount,
# which sets the match keys that follow a change): their types before, their rows after.
ENTITY_TYPE_RECOUNT = (
    """
SELECT id, entity_type FROM $ids WHERE id != NONE;
FOR $id IN $ids {
    IF record::exists($id) {
        LET $type_now = (SELECT VALUE entity_type FROM ONLY $id);
        LET $type_votes = """
    + _MENTION_VOTES
    + """;
        LET $type_won = """
    + ENTITY_TYPE_WON
    + """;
        IF $type_won != NONE AND $type_won != $type_now {
            UPDATE $id SET entity_type = $type_won RETURN NONE;
        };
    };
};
SELECT id, name, entity_type FROM $ids WHERE id != NONE;
"""
)
ENTITY_MATCH_KEY_SET = "UPDATE $id SET match_key = $key RETURN NONE;"

ALIAS_WRITE = """
IF record::exists($id) {} ELSE { CREATE $id CONTENT {name: $name, entity_type: $type, entity: $entity} RETURN NONE };
"""

MESSAGE_KEYS_SET = """
FOR $key IN $keys { UPSERT type::record('message_key', $key) SET episode = $episode RETURN NONE; };
"""

FACT_CREATE = "INSERT RELATION INTO relates_to $row RETURN NONE;"

# A revision's vector is its fact's: the same text.
FACT_VECTOR_COPY = "UPDATE $id SET fact_embedding = $source.fact_embedding RETURN NONE;"

FACT_REPEATED = """
UPDATE $id SET episodes = array::union(episodes, [$episode]),
    statements = IF statements = NONE THEN NONE ELSE array::append(statements, $said) END,
    confidence = math::max([confidence, $confidence]) RETURN NONE;
"""

FACT_RETIRE = "UPDATE $id SET expired_at = $now, superseded_by = $by RETURN NONE;"

FACT_RELINK = "UPDATE $id SET supersedes = $supersedes RETURN NONE;"

JOB_PROGRESS = """
UPDATE ONLY $job SET progress = $progress, total = $total, counts = $counts,
    timings = $timings, usage = $usage, phase = $phase, updated_at = time::now();
"""

LLM_CACHE_GET = "SELECT VALUE response FROM ONLY llm_cache WHERE key = $key LIMIT 1;"

# The record's id is its key: two requests storing the same answer at once write one
# record (the unique index alone let two CREATEs with random ids both in, now and then,
# on 3.0.2); the later one rewrites it with the same answer, or conflicts (no error).
LLM_CACHE_PUT = """
IF (SELECT VALUE id FROM llm_cache WHERE key = $key LIMIT 1) {} ELSE {
    UPSERT type::record('llm_cache', $key) CONTENT {key: $key, kind: $kind, model: $model,
        response: $response, prompt_tokens: $prompt_tokens, completion_tokens: $completion_tokens}
    RETURN NONE
};
"""

# --- ontology ------------------------------------------------------------------------

ONTOLOGY_ALL = (
    "SELECT kind, name, description, single_valued, aliases FROM ontology ORDER BY kind, name;"
)

ONTOLOGY_REPLACE = "DELETE ontology; INSERT INTO ontology $rows;"

# One record per statement (batched): `FROM $ids` with an array parameter fails on
# 3.0.2 ("Specify a database to use"), and `WHERE id IN $ids` scans the table.
ENTITY_SUMMARY = "SELECT id, summary FROM ONLY $id;"

JOB_REPORT = """
UPDATE ONLY $job SET status = $status, finished_at = time::now(), updated_at = time::now(),
    progress = IF $status = 'completed' THEN total ELSE progress END, counts = $counts,
    timings = $timings, failures = $failures, notes = $notes, result = $result,
    usage = $usage, error = $error, phase = NONE;
"""

# What the jobs since a moment used (costs.py adds them up per month).
JOBS_USAGE_SINCE = "SELECT created_at, usage FROM job WHERE created_at >= $since;"

# A document's content (`text`, `messages`, and a PDF's `raw` bytes) is read only by
# the worker; every other read leaves it out.
DOCUMENT_BY_HASH = (
    "SELECT * OMIT text, messages, raw FROM document WHERE content_hash = $hash LIMIT 1;"
)

DOCUMENT_CREATE = """
CREATE ONLY $id CONTENT $data RETURN NONE;
UPDATE ONLY $id SET versions = [{version: 1, content_hash: $version.content_hash,
    file_name: $version.file_name, size: $version.size, uploaded_by: $version.uploaded_by,
    uploaded_at: created_at}] RETURN NONE;
SELECT * OMIT text, messages, raw FROM ONLY $id;
"""

# The document of that name and kind, if any: a new upload of it is its next version.
# (3.0.2 applies ORDER BY ... LIMIT before such a filter: the oldest document of the
# tenant was read, and a later one of that name never found; the caller picks.)
DOCUMENT_BY_NAME = """
SELECT id, created_at FROM document WITH INDEX document_file_name
    WHERE file_name = $name AND kind IN $kinds;
"""

# A document's next version, unless its job is still running (then nothing): its content
# replaced, its version history one longer.
DOCUMENT_NEW_VERSION = """
LET $done = (SELECT VALUE id FROM $id WHERE status IN ['completed', 'failed']);
IF array::len($done) > 0 {
    UPDATE $id SET versions += {version: version + 1, content_hash: $version.content_hash,
        file_name: $version.file_name, size: $version.size, uploaded_by: $version.uploaded_by,
        uploaded_at: time::now()} RETURN NONE;
    UPDATE $id MERGE $data RETURN NONE;
    UPDATE $id SET version += 1, updated_at = time::now(), error = NONE RETURN NONE;
};
SELECT * OMIT text, messages, raw FROM $id WHERE array::len($done) > 0;
"""

# What the versions brought (the last one's summary written once its job is done).
DOCUMENT_VERSIONS = "SELECT VALUE versions FROM ONLY $id;"
DOCUMENT_VERSIONS_SET = "UPDATE ONLY $id SET versions = $versions RETURN NONE;"

# A document shows what its job's model calls used.
DOCUMENT_GET = "SELECT *, job.usage ?? [] AS usage OMIT text, messages, raw FROM ONLY $id;"

DOCUMENT_CONTENT = """
SELECT kind, text, messages, raw, file_name, title, created_at, reference_time, version,
    versions[array::len(versions) - 1].uploaded_at AS version_at FROM ONLY $id;
"""

# A PDF read by the worker becomes a text document; the file itself is not kept.
DOCUMENT_TEXT_SET = "UPDATE ONLY $id SET kind = 'text', text = $text, raw = NONE RETURN NONE;"

DOCUMENT_STATUS = """
UPDATE ONLY $id SET status = $status, error = $error, chunk_count = $chunks ?? chunk_count,
    updated_at = time::now();
"""

DOCUMENT_LINK_JOB = "UPDATE ONLY $id SET job = $job;"

# The page of documents, each with the episodes its current version holds (shared ones
# included) and the current facts those episodes support. Episodes and facts are read
# once for the whole page: a count per document would scan both tables per row
# (3.0.2 plans `CONTAINS` on an array field as a table scan).
DOCUMENT_LIST = """
LET $documents = (SELECT *, job.usage ?? [] AS usage OMIT text, messages, raw FROM document
    WHERE $status = NONE OR status = $status ORDER BY created_at DESC LIMIT $limit START $offset);
LET $held = (SELECT id, documents FROM episode WHERE documents ANYINSIDE $documents.id);
LET $current = (SELECT id, episodes FROM relates_to
    WHERE expired_at = NONE AND episodes ANYINSIDE $held.id);
SELECT *, array::len(held) AS episode_count,
    count(SELECT VALUE id FROM $current WHERE episodes ANYINSIDE $parent.held) AS fact_count
    OMIT held
FROM (SELECT *, (SELECT VALUE id FROM $held WHERE documents CONTAINS $parent.id) AS held
    FROM $documents);
"""

EPISODE_LIST = """
SELECT * OMIT content_embedding FROM episode
WHERE ($saga = NONE OR saga = $saga) AND ($document = NONE OR document = $document)
ORDER BY valid_at DESC, chunk_index LIMIT $limit START $offset;
"""

# What a document's previous version held (kgapp/graph/ingest/versions.py), and the
# episodes that hold given conversation messages.
DOCUMENT_EPISODES_HELD = """
SELECT id, content_hash, chunk_index, created_at FROM episode WHERE documents CONTAINS $document;
"""
MESSAGE_EPISODES = """
LET $holders = array::distinct((SELECT VALUE episode FROM $ids WHERE id != NONE));
SELECT id, message_keys, created_at, documents FROM $holders WHERE id != NONE;
"""

# The episodes a document's current version holds, with the documents that hold each.
DOCUMENT_CLAIMS = "SELECT id, documents FROM episode WHERE documents CONTAINS $document;"

# A document lets go of episodes: each shows another document that holds it, if any;
# the ids of those no document holds any more.
CLAIMS_WITHDRAW = """
UPDATE episode SET documents = array::complement(documents, [$document]) WHERE id IN $episodes
    RETURN NONE;
UPDATE episode SET document = documents[0] WHERE id IN $episodes AND document = $document
    AND array::len(documents) > 0 RETURN NONE;
SELECT VALUE id FROM episode WHERE id IN $episodes AND array::len(documents) = 0;
"""

# Episodes a document's new version keeps from another upload or its earlier version.
CLAIMS_ADD = """
UPDATE episode SET documents = array::union(documents, [$document]) WHERE id IN $episodes
    RETURN NONE;
"""

FACT_GET = "SELECT * OMIT fact_embedding FROM ONLY $id;"

FACTS_OF_EPISODE = "SELECT * OMIT fact_embedding FROM relates_to WHERE episodes CONTAINS $id;"

# Removing episodes, and what only they supported. A fact whose every episode goes is
# deleted; a revision it caused is undone (the fact it ended is current again); an
# entity left with no mention and no fact is deleted with its aliases and the records
# merged into it. Who is left alone is decided before anything is deleted: inside one
# transaction 3.0.2's index scans miss rows that the transaction's own DELETEs left
# (an entity still mentioned elsewhere looked unmentioned, and went); and a count over
# $parent inside this chain of LETs came out 0 for entities still mentioned: what still
# holds the candidates is read as flat selections instead.
# `withdrawn`: what the gone episodes said of the entities that stay (their mentions),
# for lifecycle.entities_recompute.
_REMOVAL_PLAN = """
LET $gone = $episodes;
LET $orphans = (SELECT VALUE id FROM relates_to
    WHERE episodes ANYINSIDE $gone AND array::len(array::complement(episodes, $gone)) = 0);
LET $revisions = (SELECT VALUE id FROM relates_to WHERE superseded_by IN $orphans AND revision_of != NONE);
LET $restored = (SELECT VALUE revision_of FROM relates_to WHERE id IN $revisions);
LET $dropped = array::concat($orphans, $revisions);
LET $ends = array::distinct(array::flatten((SELECT VALUE [in, out] FROM relates_to WHERE id IN $dropped)));
LET $withdrawn = (SELECT out AS entity, name, names, summary FROM mentions WHERE in IN $gone);
LET $mentioned = array::distinct($withdrawn.entity);
LET $candidates = array::union($mentioned, $ends);
LET $still_mentioned = (SELECT VALUE out FROM mentions WHERE out IN $candidates AND in NOTINSIDE $gone);
LET $still_joined = (SELECT VALUE [in, out] FROM relates_to
    WHERE (in IN $candidates OR out IN $candidates) AND id NOTINSIDE $dropped);
LET $lonely = array::complement($candidates,
    array::union(array::distinct($still_mentioned), array::distinct(array::flatten($still_joined))));
LET $followers = (SELECT VALUE id FROM entity WHERE merged_into IN $lonely);
"""
EPISODES_REMOVE = (
    _REMOVAL_PLAN
    + """
UPDATE relates_to SET expired_at = NONE, superseded_by = NONE WHERE id IN $restored;
DELETE relates_to WHERE id IN $dropped;
DELETE retrieval WHERE fact IN $dropped;
UPDATE relates_to SET superseded_by = NONE WHERE superseded_by IN $orphans;
UPDATE relates_to SET supersedes = NONE WHERE supersedes IN $dropped;
LET $restated = (SELECT VALUE id FROM relates_to
    WHERE episodes ANYINSIDE $gone AND id NOTINSIDE $dropped AND statements != NONE);
UPDATE relates_to SET statements = statements[WHERE episode NOTINSIDE $gone] WHERE id IN $restated;
UPDATE relates_to SET
    fact_embedding = IF statements[0].fact = fact THEN fact_embedding ELSE NONE END,
    fact = statements[0].fact,
    valid_at = IF invalid_at = NONE OR statements[0].valid_at < invalid_at
        THEN statements[0].valid_at ELSE valid_at END,
    confidence = math::max(statements.confidence)
    WHERE id IN $restated AND array::len(statements) > 0;
UPDATE relates_to SET episodes = array::complement(episodes, $gone) WHERE episodes ANYINSIDE $gone;
DELETE mentions WHERE in IN $gone;
DELETE has_episode WHERE out IN $gone;
DELETE occurred_after WHERE in IN $gone OR out IN $gone;
DELETE episode_units WHERE episode IN $gone;
DELETE message_key WHERE episode IN $gone;
DELETE episode WHERE id IN $gone;
LET $entities_gone = array::union($lonely, $followers);
DELETE alias WHERE entity IN $entities_gone;
DELETE dedup_candidate WHERE a IN $entities_gone OR b IN $entities_gone;
DELETE has_member WHERE out IN $entities_gone;
DELETE entity WHERE id IN $entities_gone;
RETURN {endpoints: $ends, facts_deleted: array::len($orphans), facts_restored: array::len($restored),
        restored: $restored, entities_deleted: array::len($lonely), episodes_deleted: array::len($gone),
        withdrawn: (SELECT * FROM $withdrawn WHERE entity NOTINSIDE $entities_gone)};
"""
)

# Facts with the current facts that share their subject and relation but not their
# object: what may end a fact made current again (removal._end_restored).
FACTS_WITH_RIVALS = """
SELECT *, (SELECT id, valid_at FROM relates_to WITH INDEX relates_to_in_relation
        WHERE in = $parent.in AND relation = $parent.relation AND out != $parent.out
        AND expired_at = NONE) AS rivals
FROM $ids WHERE id != NONE AND expired_at = NONE;
"""

# What removing `$episodes` would take away, and what would stay (nothing is written).
EPISODES_REMOVAL_PREVIEW = (
    _REMOVAL_PLAN
    + """
LET $kept = array::complement($candidates, $lonely);
RETURN {episodes_deleted: array::len($gone), facts_deleted: array::len($orphans),
        facts_restored: array::len($restored), entities_deleted: array::len($lonely),
        entities_kept: array::len($kept),
        facts_kept: count(SELECT VALUE id FROM relates_to WHERE episodes ANYINSIDE $gone
            AND id NOTINSIDE $orphans AND expired_at = NONE),
        entity_names_deleted: (SELECT VALUE name FROM $lonely LIMIT 20),
        entity_names_kept: (SELECT VALUE name FROM $kept LIMIT 20)};
"""
)

# Separately from EPISODES_REMOVE: inside that transaction, 3.0.2's index scans do not
# yet see the transaction's own updates of relates_to, and the counts come out low.
ENTITY_DEGREE_RECOUNT = """
FOR $endpoint IN $ids {
    IF record::exists($endpoint) {
        UPDATE $endpoint SET degree =
            count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_in_relation
                WHERE in = $endpoint AND expired_at = NONE)
            + count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_out_relation
                WHERE out = $endpoint AND expired_at = NONE)
            RETURN NONE;
    };
};
"""

DOCUMENT_REMOVE = "DELETE job WHERE document = $document; DELETE $document;"

# Entities that lost mentions, with what their remaining mentions say, their aliases and
# the records merged into them; and which of those records an automatic merge made.
ENTITIES_SUPPORT = """
SELECT id, name, entity_type, summary, first_seen_at, last_seen_at,
    (SELECT id, name, names, summary, seen_at, created_at FROM mentions WITH INDEX mentions_out
        WHERE out = $parent.id) AS mentions,
    (SELECT id, name FROM alias WITH INDEX alias_entity WHERE entity = $parent.id) AS aliases,
    (SELECT id, canonical_name FROM entity WITH INDEX entity_merged_into
        WHERE merged_into = $parent.id) AS followers
FROM $ids WHERE id != NONE;
SELECT VALUE after.merged FROM audit WITH INDEX audit_action
    WHERE action = 'auto_merge' AND after.survivor IN $ids AND undone_by = NONE;
"""
ENTITY_SUPPORT_SET = "UPDATE $id MERGE $changes RETURN NONE;"
SUPPORT_RECORDS_DELETE = """
DELETE alias WHERE id IN $aliases;
DELETE dedup_candidate WHERE a IN $entities OR b IN $entities;
DELETE entity WHERE id IN $entities;
"""

# What the indexing phase embeds (ingest/indexing.py): facts written without a vector,
# then episodes whose units are not embedded yet (schema/0011_passages.surql). A job's:
# given by record.
UNEMBEDDED_OF = """
SELECT id, fact FROM $facts WHERE fact_embedding = NONE AND expired_at = NONE;
SELECT id, source, content FROM $episodes WHERE content_embedding = NONE;
"""

# The facts of an episode, by index: `episodes = $episode` matches an element of the
# array through the index only (a scan compares the whole array: keep WITH INDEX);
# ANYINSIDE, CONTAINS and IN scan the whole table on 3.0.2.
EPISODE_FACT_IDS = """
SELECT VALUE id FROM relates_to WITH INDEX relates_to_episodes WHERE episodes = $episode;
"""

# ... and the sweep's (`index_stragglers`): every such row of the tenant. No index knows
# them, so this reads every fact and episode: a periodic task's work, not a job's.
UNEMBEDDED = """
SELECT id, fact FROM relates_to WHERE fact_embedding = NONE AND expired_at = NONE LIMIT $facts;
SELECT id, source, content FROM episode WHERE content_embedding = NONE LIMIT $units;
"""

FACT_EMBEDDING_SET = "UPDATE $id SET fact_embedding = $vector RETURN NONE;"

EPISODE_UNITS_SET = """
UPSERT $units SET episode = $episode, vectors = $vectors, units = $count RETURN NONE;
UPDATE $episode SET content_embedding = $mean RETURN NONE;
"""

JOB_REQUEUE = f"""
UPDATE ONLY $job SET status = 'queued', error = NONE, phase = NONE, updated_at = time::now()
WHERE string::starts_with(kind, 'ingest') AND (status IN ['failed', 'paused'] OR ({_JOB_STALE}));
"""


# --- retrieval -------------------------------------------------------------------------

# Bi-temporal visibility (kgapp/graph/time.py): true in the world at $as_of, as known at $known_at.
# The one SurrealQL copy of kgapp/graph/time.py's visible() (tests/graph/test_time.py).
_VISIBLE = """valid_at <= $as_of AND (invalid_at = NONE OR invalid_at > $as_of)
    AND created_at <= $known_at AND (expired_at = NONE OR expired_at > $known_at)"""
# Which of the given fact rows are visible at ($as_of, $known_at), in order.
VISIBLE_ROWS = f"SELECT VALUE ({_VISIBLE}) FROM $facts;"

_FACT_FIELDS = """id, in AS source, out AS target, in.name AS source_name, out.name AS target_name,
    relation, edge_type, fact, episodes, confidence, valid_at, invalid_at, created_at,
    expired_at, supersedes, superseded_by, revision_of,
    (type::record('retrieval', record::id(id)).count ?? 0.0) AS retrieval_count"""

# --- search indexes (kgapp/graph/index/) ---
# The namespace's epoch (its first migration record, new when a namespace is made
# again) and the server's clock.
SEARCH_INDEX_EPOCH = "RETURN (SELECT VALUE id FROM schema_migration WHERE version = 1)[0];"
SEARCH_INDEX_STATE = SEARCH_INDEX_EPOCH + "\nRETURN time::now();\n"

# A rebuild reads a table's ids, then its rows a page of ids at a time (keyset paging
# would scan the table for each page, docs/surrealdb-notes.md).
FACT_INDEX_IDS = "SELECT VALUE id FROM relates_to;"
FACT_INDEX_ROWS = """
SELECT id, in, out, fact, fact_embedding, relation, edge_type, confidence, valid_at,
    invalid_at, created_at, expired_at FROM $ids WHERE id != NONE;
"""
ENTITY_INDEX_IDS = "SELECT VALUE id FROM entity;"
ENTITY_INDEX_ROWS = """
SELECT id, name, entity_type, summary, name_embedding, merged_into FROM $ids
WHERE id != NONE;
"""
# SurrealDB's full-text index of facts serves the admin's fact filter only; bench/search.py
# removes it from its own namespace before loading (minutes per 100,000 facts).
FACT_FULLTEXT_REMOVE = "REMOVE INDEX IF EXISTS relates_to_fact_ft ON relates_to;"
# What a search hit shows of an entity, read back for the hits (current values).
ENTITY_HITS = "SELECT id, name, entity_type, summary, degree FROM $ids WHERE id != NONE;"


def changes_since(table: str, since: int | datetime, limit: int) -> str:
    """A table's changefeed from a versionstamp or a time. SHOW CHANGES takes no
    parameters (3.0.2: "expected a version stamp or a date-time"), so the cursor, an
    integer or a datetime of our own, is formatted after its type is checked.

    LIMIT counts the entries of every table of the database (3.0.2), so a page may hold
    fewer than `limit` entries of this table, or none, before the feed's end."""
    cursor = _feed_cursor(since)
    return f"SHOW CHANGES FOR TABLE {check_table(table)} SINCE {cursor} LIMIT {int(limit)};"


def feed_since(since: int | datetime, limit: int) -> str:
    """Every changefeed table of the database, in versionstamp order (kgapp/graph/live.py
    reads it in pages). One versionstamp holds one entry per table it touched."""
    return f"SHOW CHANGES FOR DATABASE SINCE {_feed_cursor(since)} LIMIT {int(limit)};"


SERVER_NOW = "RETURN time::now();"


def _feed_cursor(since: int | datetime) -> str:
    if isinstance(since, datetime):
        return "d'" + since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") + "'"
    if isinstance(since, int) and not isinstance(since, bool) and 0 <= since < 2**64:
        return str(since)
    raise GraphError(f"not a changefeed cursor: {since!r}")


FACTS_OF_ENTITY = f"""
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_in_relation
WHERE in = $entity AND {_VISIBLE};
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_out_relation
WHERE out = $entity AND {_VISIBLE};
"""

FACT_BY_ID = f"SELECT {_FACT_FIELDS} FROM ONLY $id;"
# A missing record (deleted since the index heard of it) is skipped, not evaluated as
# NONE (3.0: record::id(NONE) fails the whole statement).
FACTS_BY_IDS = f"SELECT {_FACT_FIELDS} FROM $ids WHERE id != NONE;"

# What an answer's sources are called (kgapp/graph/search/ask.py): its entities' names
# and types, and the documents its passages came from.
SOURCE_NAMES = """
SELECT id, name, entity_type FROM $entities WHERE id != NONE;
SELECT id, title, file_name FROM $documents WHERE id != NONE;
"""

# Every community and membership of the tenant (bench/million.py, before detecting
# communities afresh on a kept tenant).
COMMUNITIES_CLEAR = "DELETE has_member RETURN NONE; DELETE community RETURN NONE;"

# Facts within `depth` hops of the seed entities (breadth-first over visible facts).
FACTS_NEAR = f"""
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_in_relation
WHERE in IN $entities AND {_VISIBLE} LIMIT $limit;
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_out_relation
WHERE out IN $entities AND {_VISIBLE} LIMIT $limit;
"""

# A range on canonical_name, so the index serves the prefix.
ENTITIES_PREFIX = """
SELECT id, name, entity_type, summary, degree, merged_into FROM entity
WITH INDEX entity_canonical_name
WHERE canonical_name >= $prefix AND canonical_name < $prefix_end
LIMIT $limit;
"""

ENTITY_GET = """
SELECT id, name, canonical_name, entity_type, summary, labels, attributes, first_seen_at,
    last_seen_at, degree, merged_into, created_at, pinned ?? false AS pinned,
    (SELECT VALUE name FROM alias WHERE entity = $parent.id) AS aliases
FROM ONLY $id;
"""

EPISODES_BM25 = """
SELECT id, name, content, source, source_description, valid_at, created_at, saga, document,
    search::score(1) AS score
FROM episode WHERE content @1,OR@ $query ORDER BY score DESC LIMIT $limit;
"""

# The episodes nearest a vector by meaning: an exact scan (HNSW is not isolated per
# namespace on 3.0.2, docs/surrealdb-notes.md).
EPISODES_NEAREST = """
SELECT id, name, content, source, source_description, valid_at, created_at, saga, document,
    vector::similarity::cosine(content_embedding, $vector) AS score
FROM episode WHERE content_embedding != NONE ORDER BY score DESC LIMIT $limit;
"""

# The episodes of a period, earliest first (a question that names a date).
EPISODES_IN_PERIOD = """
SELECT id, name, content, source, source_description, valid_at, created_at, saga, document
FROM episode WHERE valid_at >= $start AND valid_at < $end ORDER BY valid_at LIMIT $limit;
"""

EPISODE_UNIT_VECTORS = (
    "SELECT episode, vectors, units FROM episode_units WHERE episode IN $episodes;"
)

# Up to $limit episodes that mention an entity (provenance in the explorer).
# The episodes mentioning an entity, as (id, valid_at) to pick the newest in Python:
# ORDER BY over `FROM ($id<-mentions<-episode)` is not reliable on 3.0.2
# (docs/surrealdb-notes.md); then those few in full.
ENTITY_EPISODE_TIMES = "RETURN ($id<-mentions<-episode).{id, valid_at};"
EPISODE_PASSAGE = """
SELECT id, name, content, source, source_description, valid_at, created_at, document
FROM ONLY $id;
"""

ENTITY_MENTION_COUNT = "SELECT VALUE count(<-mentions) FROM ONLY $id;"

FACT_REVISIONS = "SELECT VALUE id FROM relates_to WHERE revision_of = $id;"

FACTS_RETRIEVED = """
FOR $id IN $ids {
    UPSERT type::record('retrieval', record::id($id))
        SET fact = $id, count += 1, last_retrieved_at = time::now() RETURN NONE;
};
"""

# count x e^(-lambda x elapsed days), elapsed since the last decay (or retrieval).
RETRIEVAL_DECAY = """
UPDATE retrieval SET
    count = count * math::pow(math::e, 0 - $lambda
        * (time::unix($now) - time::unix(decayed_at ?? last_retrieved_at ?? $now)) / 86400),
    decayed_at = $now
WHERE count > 0 RETURN NONE;
"""

# What the explorer's first view ranks (kgapp/graph/search/salience.py): every current
# entity's name, facts and pin, and its mentions, from the two views SurrealDB keeps
# (schema/0020): scans of small rows, where one of `entity` decodes every record whole
# and `count(<-mentions)` on each read its mentions' keys.
GRAPH_STANDINGS = """
SELECT type::record('entity', record::id(id)) AS id, name, degree, pinned FROM entity_standing
WHERE merged_into = NONE AND ($types = NONE OR entity_type IN $types);
SELECT entity, mentions FROM entity_mentions;
"""

# Mentions from the view (a point read), not `count(<-mentions)`: that reads every
# mention of a hub, thousands for a city in a 100,000-fact graph.
_GRAPH_ENTITY_FIELDS = """id, name, entity_type, degree, summary, created_at, pinned,
    type::record('entity_mentions', [id]).mentions ?? 0 AS mentions"""
GRAPH_ENTITY = f"SELECT {_GRAPH_ENTITY_FIELDS} FROM ONLY $id;"
# Many in one statement: each statement of a query pays about half a millisecond of its
# own on two cores, more than reading a record (docs/surrealdb-notes.md). NONE: gone.
GRAPH_ENTITIES = f"""
RETURN $ids.map(|$id| (SELECT {_GRAPH_ENTITY_FIELDS} FROM ONLY $id));
"""

# An entity's pin; nothing when it is gone or merged away.
PIN_ENTITY = (
    "UPDATE $id SET pinned = $pinned WHERE merged_into = NONE RETURN id, name, entity_type, pinned;"
)

# The first `$limit` facts (history included) out of each of `$outs` and into each of
# `$intos`, one list an entity: the explorer filters on the four timestamps itself. One
# entity a read, through the index of its end: `in IN $entities` scanned the whole table
# on 3.0.2 (the (in, relation) index is not used for IN; 1.5 s at 10,000 facts).
_GRAPH_FACT_FIELDS = """id, in AS source, out AS target, relation, edge_type, fact, confidence,
    valid_at, invalid_at, created_at, expired_at, supersedes, superseded_by, revision_of"""
GRAPH_FACTS = f"""
RETURN [
    $outs.map(|$e| (SELECT {_GRAPH_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_in_relation
        WHERE in = $e LIMIT $limit)),
    $intos.map(|$e| (SELECT {_GRAPH_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_out_relation
        WHERE out = $e LIMIT $limit))
];
"""

# --- diff between two moments (kgapp/graph/search/diff.py) ---
# The facts with a bound between two moments on one axis: only they can hold at one
# moment and not the other. Each statement is a range on one indexed field and nothing
# else (no LIMIT: on 3.0.2 a LIMIT may cut an index scan before the rest of the WHERE
# filters it, docs/surrealdb-notes.md); what was known when is judged in Python. The
# names of the ends are read afterwards for the facts listed only (DIFF_ENTITY_NAMES):
# `in.name` on every row read two entities more per fact between the moments.
_DIFF_FIELDS = """id, in AS source, out AS target, relation, edge_type, fact, confidence,
    valid_at, invalid_at, created_at, expired_at, supersedes, superseded_by, revision_of"""
DIFF_VALID_BOUNDS = f"""
SELECT {_DIFF_FIELDS} FROM relates_to WITH INDEX relates_to_valid_at
WHERE valid_at > $low AND valid_at <= $high;
SELECT {_DIFF_FIELDS} FROM relates_to WITH INDEX relates_to_invalid_at
WHERE invalid_at > $low AND invalid_at <= $high;
"""
DIFF_KNOWN_BOUNDS = f"""
SELECT {_DIFF_FIELDS} FROM relates_to WITH INDEX relates_to_created_at
WHERE created_at > $low AND created_at <= $high;
SELECT {_DIFF_FIELDS} FROM relates_to WITH INDEX relates_to_expired_at
WHERE expired_at > $low AND expired_at <= $high;
"""
DIFF_ENTITY_NAMES = "RETURN $ids.map(|$id| (SELECT VALUE name FROM ONLY $id));"

# Bulk loading (benchmarks, imports): rows carry their ids.
ENTITIES_BULK_INSERT = "INSERT INTO entity $rows RETURN NONE;"
FACTS_BULK_INSERT = "INSERT RELATION INTO relates_to $rows RETURN NONE;"


# --- curation (kgapp/graph/curation/) --------------------------------------------------
# Relation records cannot change their ends (3.0.2 ignores `SET in = ...`) and a record
# deleted in a transaction cannot be created again with the same id in it ("already
# exists"): a merge re-creates an entity's facts under new ids; an undo restores the
# old ids and deletes the new ones.

CURATION_READ = """
SELECT * FROM ONLY $survivor;
SELECT * FROM ONLY $merged;
SELECT * FROM relates_to WITH INDEX relates_to_in_relation WHERE in = $merged;
SELECT * FROM relates_to WITH INDEX relates_to_out_relation WHERE out = $merged;
SELECT * FROM relates_to WITH INDEX relates_to_in_relation WHERE in = $survivor;
SELECT * FROM relates_to WITH INDEX relates_to_out_relation WHERE out = $survivor;
SELECT * FROM mentions WITH INDEX mentions_out WHERE out = $merged;
SELECT * FROM mentions WITH INDEX mentions_out WHERE out = $survivor;
SELECT * FROM has_member WITH INDEX has_member_out WHERE out = $merged;
SELECT * FROM has_member WITH INDEX has_member_out WHERE out = $survivor;
SELECT * FROM alias WITH INDEX alias_entity WHERE entity = $merged;
SELECT * FROM dedup_candidate WHERE (a = $survivor AND b = $merged) OR (a = $merged AND b = $survivor);
"""

# Facts that point at the given facts through their supersession links.
FACT_REFERRERS = """
SELECT * FROM relates_to WITH INDEX relates_to_supersedes WHERE supersedes = $id;
SELECT * FROM relates_to WITH INDEX relates_to_superseded_by WHERE superseded_by = $id;
SELECT * FROM relates_to WITH INDEX relates_to_revision_of WHERE revision_of = $id;
"""

# Inside the merge transaction: nothing touching the merged entity appeared since the
# read (a writer that commits later conflicts on the entity record instead).
MERGE_GUARD = """
IF count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_in_relation WHERE in = $merged)
    + count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_out_relation WHERE out = $merged)
    != $facts {
    THROW "conflict: the entity changed while merging; try again";
};
"""

RECORD_DELETE = "DELETE $id RETURN NONE;"
RECORD_REPLACE = "UPDATE $id CONTENT $row RETURN NONE;"
MENTIONS_INSERT = "INSERT RELATION INTO mentions $rows RETURN NONE;"
MEMBERSHIPS_INSERT = "INSERT RELATION INTO has_member $rows RETURN NONE;"
ALIAS_POINT = "UPDATE $id SET entity = $entity RETURN NONE;"
ALIAS_ADD = """
IF count(SELECT VALUE id FROM alias WITH INDEX alias_name_type
        WHERE name = $row.name AND entity_type = $row.entity_type) = 0 {
    CREATE ONLY type::record('alias', $key) CONTENT $row RETURN NONE;
};
"""
ENTITY_MERGED_MARK = "UPDATE $id SET merged_into = $survivor RETURN NONE;"
ENTITY_UNMERGE = "UPDATE $id SET merged_into = NONE RETURN NONE;"
# A pair a curator said apart (an automatic merge undone): never proposed again.
CANDIDATE_REJECTED_ADD = """
CREATE dedup_candidate CONTENT {a: $a, b: $b, score: $score, method: $method,
    status: 'rejected', decided_by: $actor, decided_at: time::now()} RETURN NONE;
"""
CANDIDATE_DECIDE = """
UPDATE $id SET status = $status, decided_by = $actor, decided_at = time::now() RETURN NONE;
"""
AUDIT_CREATE = """
CREATE ONLY audit CONTENT {actor: $actor, action: $action, target: $target, before: $before,
    after: $after, reason: $reason};
"""
RECORD_GET = "SELECT * FROM ONLY $id;"
AUDIT_UNDONE = "UPDATE $id SET undone_by = $by RETURN NONE;"
AUDIT_LIST = """
SELECT id, actor, action, target, reason, at, undone_by FROM audit
WHERE ($action = NONE OR action = $action) AND ($actor = NONE OR actor = $actor)
ORDER BY at DESC LIMIT $limit START $offset;
"""

# A whole tenant's graph, for comparing before and after (tests) and for exports.
GRAPH_EXPORT = """
SELECT * FROM entity ORDER BY id;
SELECT * FROM alias ORDER BY id;
SELECT * FROM relates_to ORDER BY id;
SELECT * FROM mentions ORDER BY id;
SELECT * FROM has_member ORDER BY id;
SELECT * FROM community ORDER BY id;
SELECT * FROM dedup_candidate ORDER BY id;
"""
GRAPH_EXPORT_TABLES = (
    "entity",
    "alias",
    "relates_to",
    "mentions",
    "has_member",
    "community",
    "dedup_candidate",
)

# The review queue: pairs proposed by ingestion (its ambiguous band, without a model)
# or by the candidate generator (embedding band, name similarity).
CANDIDATE_PAIRS = "SELECT a, b FROM dedup_candidate;"
CANDIDATE_ADD = """
CREATE dedup_candidate CONTENT {a: $a, b: $b, score: $score, method: $method} RETURN NONE;
"""
CANDIDATE_LIST = """
SELECT *, a.{id, name, entity_type, summary, degree, merged_into} AS a_entity,
    b.{id, name, entity_type, summary, degree, merged_into} AS b_entity,
    (SELECT VALUE name FROM alias WITH INDEX alias_entity WHERE entity = $parent.a LIMIT 5)
        AS a_aliases,
    (SELECT VALUE name FROM alias WITH INDEX alias_entity WHERE entity = $parent.b LIMIT 5)
        AS b_aliases,
    (SELECT VALUE fact FROM relates_to WITH INDEX relates_to_in_relation
        WHERE in = $parent.a AND expired_at = NONE LIMIT 3) AS a_facts,
    (SELECT VALUE fact FROM relates_to WITH INDEX relates_to_in_relation
        WHERE in = $parent.b AND expired_at = NONE LIMIT 3) AS b_facts
FROM dedup_candidate WITH INDEX dedup_candidate_status WHERE status = $status
ORDER BY created_at DESC LIMIT $limit START $offset;
"""

# The admin's fact list: optional filters ($x = NONE: any), newest first.
_FACT_FILTERS = """($relation = NONE OR relation = $relation)
    AND ($entity = NONE OR in = $entity OR out = $entity)
    AND ($valid_from = NONE OR valid_at >= $valid_from)
    AND ($valid_to = NONE OR valid_at <= $valid_to)
    AND ($known_at = NONE OR (created_at <= $known_at
        AND (expired_at = NONE OR expired_at > $known_at)))
    AND ($state = NONE
        OR ($state = 'current' AND expired_at = NONE AND (invalid_at = NONE OR invalid_at > time::now()))
        OR ($state = 'invalidated' AND expired_at = NONE AND invalid_at != NONE
            AND invalid_at <= time::now())
        OR ($state = 'expired' AND expired_at != NONE))"""
# Which of the given fact rows the filters pass, in order: how tests/graph/test_time_filters.py
# holds their system-time filter and states to kgapp/graph/time.py's rule.
ADMIN_FACT_ROWS = f"SELECT VALUE ({_FACT_FILTERS}) FROM $facts;"
ADMIN_FACTS = f"""
SELECT {_FACT_FIELDS} FROM relates_to WHERE {_FACT_FILTERS}
ORDER BY created_at DESC LIMIT $limit START $offset;
"""
# The same among the facts whose words match (the search index finds them: SurrealDB's
# own full-text index of facts is gone, schema/0017).
ADMIN_FACTS_AMONG = f"""
SELECT {_FACT_FIELDS} FROM $ids WHERE id != NONE AND {_FACT_FILTERS}
ORDER BY created_at DESC LIMIT $limit START $offset;
"""
ADMIN_RELATIONS = "SELECT VALUE relation FROM relates_to GROUP BY relation;"
EPISODE_BRIEF = "SELECT id, name, content, source, valid_at, created_at FROM ONLY $id;"
ADMIN_ENTITY = """
SELECT * OMIT name_embedding FROM ONLY $id;
SELECT id, name, entity_type, created_at FROM alias WITH INDEX alias_entity WHERE entity = $id;
SELECT VALUE in.{id, name, member_count} FROM has_member WITH INDEX has_member_out WHERE out = $id;
SELECT id, name, entity_type FROM entity WITH INDEX entity_merged_into WHERE merged_into = $id;
SELECT id, actor, action, reason, at, undone_by FROM audit WITH INDEX audit_target
    WHERE target = $id ORDER BY at DESC LIMIT 50;
"""
ENTITY_ALL_FACTS = f"""
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_in_relation WHERE in = $id;
SELECT {_FACT_FIELDS} FROM relates_to WITH INDEX relates_to_out_relation WHERE out = $id;
"""

# --- communities (kgapp/graph/communities.py) ----------------------------------------
COMMUNITIES_OF_MOMENT = """
SELECT id, fingerprint FROM community WITH INDEX community_as_of WHERE as_of = $as_of;
"""
COMMUNITY_REMOVE = """
DELETE has_member WITH INDEX has_member_in WHERE in = $id RETURN NONE;
DELETE $id RETURN NONE;
"""
COMMUNITY_CREATE = "CREATE $id CONTENT $row RETURN NONE;"
FACT_TEXTS = "SELECT VALUE fact FROM $ids;"
COMMUNITIES_LIST = """
SELECT id, name, summary, member_count, fact_count, level, resolution, as_of, created_at
FROM community WITH INDEX community_as_of WHERE as_of = $as_of
ORDER BY member_count DESC LIMIT $limit;
"""
COMMUNITY_GET = """
SELECT * OMIT summary_embedding FROM ONLY $id;
SELECT VALUE out.{id, name, entity_type, degree} FROM has_member WITH INDEX has_member_in
    WHERE in = $id;
"""
# A new entity joins the current community most common among its neighbours (ties:
# the lowest id), unless it is in one already. Answers whether it joined. Written into
# the episode's transaction, so the block ends on its value, never on RETURN: a RETURN
# inside a transaction ends the whole transaction there (docs/surrealdb-notes.md).
COMMUNITY_ASSIGN = """
{
    LET $near = array::distinct(array::concat(
        (SELECT VALUE out FROM relates_to WITH INDEX relates_to_in_relation
            WHERE in = $entity AND expired_at = NONE),
        (SELECT VALUE in FROM relates_to WITH INDEX relates_to_out_relation
            WHERE out = $entity AND expired_at = NONE)));
    LET $member = count(SELECT VALUE id FROM has_member WITH INDEX has_member_out
        WHERE out = $entity AND in.as_of = NONE) > 0;
    LET $votes = IF $member { [] } ELSE {
        (SELECT in AS community, count() AS n FROM has_member
            WHERE out IN $near AND in.as_of = NONE GROUP BY community ORDER BY n DESC, community)
    };
    IF array::len($votes) = 0 { false } ELSE {
        LET $chosen = $votes[0].community;
        RELATE $chosen->has_member->$entity RETURN NONE;
        UPDATE $chosen SET member_count += 1 RETURN NONE;
        true
    }
};
"""
COMMUNITIES_BM25 = """
SELECT id, name, summary, member_count, level,
    (search::score(1) ?? 0) + (search::score(2) ?? 0) AS score
FROM community WHERE (name @1,OR@ $query OR summary @2,OR@ $query) AND as_of = NONE
ORDER BY score DESC LIMIT $limit;
"""
# Whether ingestion should ask for community detection: episodes since the last
# detection was asked for (whatever it found), and whether one is queued or running.
COMMUNITIES_DUE = """
LET $asked = (SELECT VALUE created_at FROM job WHERE kind = 'communities'
    ORDER BY created_at DESC LIMIT 1)[0] ?? d'1970-01-01T00:00:00Z';
RETURN {
    episodes: count(SELECT VALUE id FROM episode WITH INDEX episode_created_at
        WHERE created_at > $asked),
    active: count(SELECT VALUE id FROM job WHERE kind = 'communities'
        AND status IN ['queued', 'running'])
};
"""
# In lists of IN_INDEXED entities at most: with more values in an IN list, 3.0.2 scans
# the whole table instead of the index (docs/surrealdb-notes.md).
COMMUNITIES_OF_ENTITIES = """
RETURN array::flatten($lists.map(|$entities| (
    SELECT out AS entity, in AS community FROM has_member WITH INDEX has_member_out
    WHERE out IN $entities AND in.as_of = NONE)));
"""
IN_INDEXED = 32


# --- retention (kgapp/graph/retention/) --------------------------------------------------
# What a retention policy removes: facts ended in system time before $facts_cutoff, and
# episodes stored before $episodes_cutoff (a cutoff of NONE removes nothing of its kind).
# An episode's going never removes a fact: the facts it supported only lose it from
# their `episodes`. A document goes when all of its episodes go and it was uploaded
# before the cutoff; an entity goes when nothing else mentions it or joins it by a fact.
# The same conditions are read three times (plan, archive, and the guard inside the
# deleting transaction), so they live in one place each.
_RETENTION_FACTS = """(SELECT VALUE id FROM relates_to WITH INDEX relates_to_expired_at
    WHERE $facts_cutoff != NONE AND expired_at != NONE AND expired_at < $facts_cutoff)"""
_RETENTION_EPISODES = """(SELECT VALUE id FROM episode WITH INDEX episode_created_at
    WHERE $episodes_cutoff != NONE AND created_at < $episodes_cutoff)"""
# (3.0.2: in a LET, `$parent` inside a subquery of the WHERE clause is not the row being
# filtered; in RETURN and in an IF's condition it is. So these two are never LET.)
_RETENTION_DOCUMENT_KEPT = """$episodes_cutoff != NONE AND created_at < $episodes_cutoff
    AND status IN ['completed', 'failed']
    AND count(SELECT VALUE id FROM episode WHERE document = $parent.id
        AND id NOTINSIDE $episodes) = 0"""
_RETENTION_ENTITY_LEFT = """merged_into = NONE
    AND count(SELECT VALUE id FROM entity WITH INDEX entity_merged_into
        WHERE merged_into = $parent.id) = 0
    AND count(SELECT VALUE id FROM mentions WITH INDEX mentions_out
        WHERE out = $parent.id AND in NOTINSIDE $episodes) = 0
    AND count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_in_relation
        WHERE in = $parent.id AND id NOTINSIDE $facts) = 0
    AND count(SELECT VALUE id FROM relates_to WITH INDEX relates_to_out_relation
        WHERE out = $parent.id AND id NOTINSIDE $facts) = 0"""
_RETENTION_CANDIDATES = """array::distinct(array::concat(
    array::flatten((SELECT VALUE [in, out] FROM relates_to WHERE id IN $facts)),
    (SELECT VALUE out FROM mentions WHERE in IN $episodes)))"""

RETENTION_PLAN = f"""
LET $facts = {_RETENTION_FACTS};
LET $episodes = {_RETENTION_EPISODES};
LET $candidates = {_RETENTION_CANDIDATES};
RETURN $facts;
RETURN $episodes;
RETURN (SELECT VALUE id FROM document WHERE {_RETENTION_DOCUMENT_KEPT});
RETURN (SELECT VALUE id FROM entity WHERE id IN $candidates AND {_RETENTION_ENTITY_LEFT});
RETURN (SELECT VALUE id FROM relates_to WITH INDEX relates_to_episodes
    WHERE episodes ANYINSIDE $episodes AND id NOTINSIDE $facts);
"""

# Every row the plan removes or changes, one statement per kind of archive line, in the
# order of kgapp/graph/retention/archive.py's KINDS. Vectors are derived data (computed
# again from the text) and stay out of the archive; episode_units rows keep their count.
RETENTION_ROWS = """
SELECT * OMIT fact_embedding FROM relates_to WHERE id IN $facts ORDER BY id;
SELECT * FROM retrieval WHERE fact IN $facts ORDER BY id;
SELECT * OMIT content_embedding FROM episode WHERE id IN $episodes ORDER BY id;
SELECT * FROM mentions WHERE in IN $episodes ORDER BY id;
SELECT * FROM has_episode WHERE out IN $episodes ORDER BY id;
SELECT * FROM occurred_after WHERE in IN $episodes OR out IN $episodes ORDER BY id;
SELECT id, episode, units ?? array::len(vectors) AS vectors_omitted FROM episode_units
    WHERE episode IN $episodes ORDER BY id;
SELECT * OMIT raw FROM document WHERE id IN $documents ORDER BY id;
SELECT * FROM job WHERE document IN $documents ORDER BY id;
SELECT * OMIT name_embedding FROM entity WHERE id IN $entities ORDER BY id;
SELECT * FROM alias WHERE entity IN $entities ORDER BY id;
SELECT * FROM dedup_candidate WHERE a IN $entities OR b IN $entities ORDER BY id;
SELECT * FROM has_member WHERE out IN $entities ORDER BY id;
SELECT id, array::intersect(episodes, $episodes) AS episodes FROM relates_to
    WHERE id IN $unlinked ORDER BY id;
SELECT id, supersedes, superseded_by, revision_of FROM relates_to
    WHERE id NOTINSIDE $facts AND (supersedes IN $facts OR superseded_by IN $facts
        OR revision_of IN $facts) ORDER BY id;
"""

# Inside the deleting transaction: the rows about to go are exactly the ones archived
# ($expected_rows: counts by kind, documents and entities checked one by one), else nothing is removed (a writer changed the graph
# between the archive and the delete; the next run archives again).
RETENTION_APPLY = f"""
LET $now_facts = {_RETENTION_FACTS};
LET $now_episodes = {_RETENTION_EPISODES};
LET $found = {{
    fact: count(SELECT VALUE id FROM relates_to WHERE id IN $facts AND id IN $now_facts),
    retrieval: count(SELECT VALUE id FROM retrieval WHERE fact IN $facts),
    episode: count(SELECT VALUE id FROM episode WHERE id IN $episodes AND id IN $now_episodes),
    mention: count(SELECT VALUE id FROM mentions WHERE in IN $episodes),
    has_episode: count(SELECT VALUE id FROM has_episode WHERE out IN $episodes),
    occurred_after: count(SELECT VALUE id FROM occurred_after WHERE in IN $episodes OR out IN $episodes),
    episode_units: count(SELECT VALUE id FROM episode_units WHERE episode IN $episodes),
    job: count(SELECT VALUE id FROM job WHERE document IN $documents),
    alias: count(SELECT VALUE id FROM alias WHERE entity IN $entities),
    dedup_candidate: count(SELECT VALUE id FROM dedup_candidate WHERE a IN $entities OR b IN $entities),
    has_member: count(SELECT VALUE id FROM has_member WHERE out IN $entities),
    provenance: count(SELECT VALUE id FROM relates_to WHERE episodes ANYINSIDE $episodes AND id NOTINSIDE $facts),
    link: count(SELECT VALUE id FROM relates_to WHERE id NOTINSIDE $facts
        AND (supersedes IN $facts OR superseded_by IN $facts OR revision_of IN $facts))
}};
IF $found != $expected_rows
    OR count(SELECT VALUE id FROM document WHERE id IN $documents AND {_RETENTION_DOCUMENT_KEPT})
        != array::len($documents)
    OR count(SELECT VALUE id FROM entity WHERE id IN $entities AND {_RETENTION_ENTITY_LEFT})
        != array::len($entities) {{
    THROW "the graph changed while retention was archiving; nothing was removed (run it again)";
}};
UPDATE relates_to SET episodes = array::complement(episodes, $episodes)
    WHERE episodes ANYINSIDE $episodes AND id NOTINSIDE $facts RETURN NONE;
UPDATE relates_to SET supersedes = NONE WHERE supersedes IN $facts AND id NOTINSIDE $facts RETURN NONE;
UPDATE relates_to SET superseded_by = NONE WHERE superseded_by IN $facts AND id NOTINSIDE $facts RETURN NONE;
UPDATE relates_to SET revision_of = NONE WHERE revision_of IN $facts AND id NOTINSIDE $facts RETURN NONE;
DELETE retrieval WHERE fact IN $facts;
DELETE relates_to WHERE id IN $facts;
DELETE mentions WHERE in IN $episodes;
DELETE has_episode WHERE out IN $episodes;
DELETE occurred_after WHERE in IN $episodes OR out IN $episodes;
DELETE episode_units WHERE episode IN $episodes;
DELETE episode WHERE id IN $episodes;
DELETE job WHERE document IN $documents;
DELETE document WHERE id IN $documents;
DELETE alias WHERE entity IN $entities;
DELETE dedup_candidate WHERE a IN $entities OR b IN $entities;
DELETE has_member WHERE out IN $entities;
DELETE entity WHERE id IN $entities;
CREATE ONLY audit CONTENT {{actor: $actor, action: 'retention_run', target: 'retention',
    after: $after}};
"""

# What the preview shows of a plan: a few of each kind, oldest first.
RETENTION_SAMPLES = """
SELECT id, fact, relation, in.name AS source_name, out.name AS target_name, valid_at,
    invalid_at, created_at, expired_at FROM relates_to WHERE id IN $facts ORDER BY expired_at
    LIMIT $limit;
SELECT id, name, source, string::slice(content, 0, 160) AS excerpt, valid_at, created_at
    FROM episode WHERE id IN $episodes ORDER BY created_at LIMIT $limit;
SELECT id, file_name, created_at FROM document WHERE id IN $documents ORDER BY created_at
    LIMIT $limit;
SELECT id, name, entity_type FROM entity WHERE id IN $entities ORDER BY name LIMIT $limit;
"""

RETENTION_POLICY_AUDIT = """
CREATE ONLY audit CONTENT {actor: $actor, action: 'retention_policy', target: 'retention',
    before: $before, after: $after};
"""
RETENTION_HISTORY = """
SELECT id, actor, action, before, after, at FROM audit
WHERE action IN ['retention_run', 'retention_policy'] ORDER BY at DESC LIMIT $limit;
"""

# --- tenant export and import (kgapp/graph/export/) --------------------------------------
# A table's ids in order, then its rows a page of ids at a time (keyset paging scans the
# table for each page, docs/surrealdb-notes.md). Import jobs are the deployment's own.
EXPORT_IDS = "SELECT VALUE id FROM type::table($table) ORDER BY id;"
EXPORT_JOB_IDS = "SELECT VALUE id FROM job WHERE kind != $import_kind ORDER BY id;"
EXPORT_ROWS = "SELECT * FROM $ids WHERE id != NONE;"
# Whether a table holds anything an import would collide with.
IMPORT_ANY = "RETURN array::len(SELECT VALUE id FROM type::table($table) LIMIT 1);"
IMPORT_ANY_JOB = "RETURN array::len(SELECT VALUE id FROM job WHERE kind != $import_kind LIMIT 1);"
IMPORT_PROGRESS = """
UPDATE ONLY $job SET progress = $progress, total = $total, phase = $phase,
    updated_at = time::now() RETURN NONE;
"""
IMPORT_CLEAR = "DELETE type::table($table) RETURN NONE;"
IMPORT_CLEAR_JOBS = "DELETE job WHERE kind != $import_kind RETURN NONE;"


def import_rows(table: str, *, relation: bool, allowed: frozenset[str]) -> str:
    """Insert rows exactly as given, ids and all; a relation's rows carry `in` and `out`."""
    into = "INSERT RELATION INTO" if relation else "INSERT INTO"
    return f"{into} {check_table(table, allowed)} $rows RETURN NONE;"


# The graph at a moment, for GraphML and CSV: the facts visible at ($as_of, $known_at) and
# the entities they join.
MOMENT_FACT_ENDS = f"SELECT id, in, out FROM relates_to WHERE {_VISIBLE} ORDER BY id;"
MOMENT_FACT_ROWS = """
SELECT id, in AS source, out AS target, relation, edge_type, fact, confidence, valid_at,
    invalid_at, created_at, expired_at FROM $ids WHERE id != NONE;
"""
MOMENT_ENTITY_ROWS = """
SELECT id, name, entity_type, summary, labels, first_seen_at, last_seen_at, degree
FROM $ids WHERE id != NONE;
"""
