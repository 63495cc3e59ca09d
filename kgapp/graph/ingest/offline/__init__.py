"""The offline extractor: entities and facts from a spaCy English pipeline, no LLM.

It answers in the shape of the `extract_graph` LLM task, so everything after extraction
is the same with or without a model; the same text and pipeline give the same answer.

What it finds, per turn (a message; a text's heading, paragraph or list item):
- entities: named things (PERSON Person, ORG Organization, GPE/LOC/FAC Location,
  PRODUCT Product, EVENT Event, WORK_OF_ART Document, NORP/LANGUAGE Concept; dates,
  times and numbers are not entities), one type per name in the episode, by the
  evidence of all its mentions (a name's own head noun, "founded X", "CEO of X", "X, a
  shipping company" outweigh NER's guess); a short name is the one full name it stands
  for ("Berg", "NS"). A noun phrase is an entity only when a fact needs it, and then
  only a specific one: several words ("pottery class"), a word general English uses
  rarely (`wordfreq`), a topic someone loves or practises ("dance"), or a thing of
  someone's ("Gina's store", "my mom": "<speaker>'s mom"). The speakers are Persons.
- facts from the dependency parse: subject-verb-object and verb-(particle)-preposition-
  object named by the verb's lemma (GO_TO, SIGN_UP_FOR); xcomp chains ("want to open a
  studio" WANT_TO_OPEN); copulas ("Mel is a counselor" IS_A, "married to Bob"
  MARRIED_TO); "X was founded by Y" (Y FOUND X); "my friend Mel" FRIEND_OF; positions
  ("became its first chief executive" CEO_OF, "joined X as head of sales"), their ends
  ("stepped down", "retired", "no longer", "until 2023") and successions ("Y replaced X
  as CEO": X's ends where Y's begins; no fact of its own); where organisations are
  ("founded X in Bergen", "X, an operator based in Tromsø": LOCATED_IN). In prose a
  fact joins two named things by a verb of a lasting relation; narration ("thanked")
  is no fact. In conversation a fact needs more than having or feeling ("had yoga",
  "felt a mix" are no facts), and talk to someone is none ("rang Lars").
- who: I/me/my are the speaker, we/us/our too with a lower confidence; in a two-party
  conversation you/your is the other speaker; he/she, it/its are the entity in focus
  (`focus`), "the company" the organisation the text names most nearby.
- time (`dating`): the clause's own date words; else, in the past tense, the date its
  paragraph or section stated ("In March 2019, ..." then "She became its CEO"; "## 2019";
  "later that year", "the following spring"); else a message's own day. "Last week" is
  counted from the message or the dated section it is in.
- what is not asserted: questions, negated, conditional ("if we win the bid, ..."),
  hedged ("might", "probably"), reported ("she thinks", "according to", "rumour has
  it") clauses, predictions about someone else ("you'll love Lisbon"), and memories of
  an undated past ("when I was a kid").
Limits: no gender, so "she" is the latest person in focus, whoever she is; an episode is
read after its document's chunk before it (`extract(context=...)`), no further; the small
English pipeline's parse and NER mistakes are the extractor's; English only. It needs
spaCy and a pipeline package (`OfflineExtractor.problem` says which).

The modules: `extractor` loads the pipeline and runs it over an episode's `turns` (a
text's headings, paragraphs and list items; a conversation's messages); `reader` reads
each parsed turn into facts, through `mentions` (who or what the words are), `evidence`
(each name's type and full name, by all its mentions), `focus` (who "she", "its" and
"the company" are), `dating` (the dates paragraphs and sections state), `positions` and
`roles` (positions held, ended and passed on; where organisations are) and `record`
(the episode's entities and facts so far); `syntax` says what the parse says of a
clause, `phrases` of a noun phrase, `sentence` writes the fact sentence; the word
classes all of them go by are in `vocabulary`.
"""

from kgapp.graph.ingest.offline.extractor import (
    DEFAULT_MODEL,
    ExtractorUnavailable,
    OfflineExtractor,
)

__all__ = ["DEFAULT_MODEL", "ExtractorUnavailable", "OfflineExtractor"]
