"""Curators' changes to a tenant's graph, one module per concern; each change is one
transaction with the audit entry that records it, `before` holding the records as they
were.

- merge: merging a duplicate entity into another;
- undo: putting back what an audited merge (a curator's or resolution's) changed;
- corrections: invalidating and correcting facts;
- duplicates: candidate pairs for review, generated and decided;
- pages: what the admin pages list and show (facts, entities, the audit log);
- export: a whole tenant's graph, table by table;
- common: what they share (the refusal, record reads, the audit entry written).
"""
