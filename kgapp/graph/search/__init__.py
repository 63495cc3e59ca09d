"""Retrieval: hybrid search over facts, entities and episodes, as of any moment.

- `model`: what a search asks for and finds; `hybrid`: search() and its methods;
  `ranking`: fusion and reranking (`rerank`: the pure rerankers; `recipes`: named
  configurations); `activation`: spreading activation and the search method built on it;
- `reads`: records by id and the facts around entities; `history`: a fact's
  supersession chain; `elements`: the explorer's graph; `diff`: what differs between
  two moments; `retrieval`: retrieval counts;
- `query`: `POST query` (LightRAG's modes), its context built in `context` and its
  sources in `passages`.
"""
