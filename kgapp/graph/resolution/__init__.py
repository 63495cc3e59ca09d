"""Entity resolution: which extracted name is which entity, and which fact repeats, ends
or is ended by one the graph holds.

- `canonical`: names as resolution compares them (canonical names, alias keys, hashes).
- `names`: name-level evidence: embeddings propose, names decide.
- `vectors`: the tenant's entity name embeddings, held in the worker.
- `entities`: the ingest stage that maps each extracted entity onto a record.
- `facts`: the ingest stage that finds each extracted fact's repeats and contradictions.
- `decide`: the one batched model call per episode for what the rules cannot settle.

The stages work on the ingest pipeline's per-episode records (`ingest.model`); nothing
here reaches the rest of the pipeline, search or curation (import-linter holds it).
"""
