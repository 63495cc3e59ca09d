"""The offline extractor: entities and facts from a spaCy English pipeline, no LLM.

It answers in the shape of the `extract_graph` LLM task, so everything after extraction
is the same with or without a model; the same text and pipeline give the same answer.

What it finds, per turn of a conversation (or in the whole text of other episodes):
- entities: named entities (PERSON Person, ORG Organization, GPE/LOC/FAC Location,
  PRODUCT Product, EVENT Event, WORK_OF_ART Document, NORP/LANGUAGE Concept; dates,
  times and numbers are not entities), and the noun phrases people talk about
  ("pottery class", "LGBTQ support group"): the head noun with the compounds and
  classifying adjectives before it, lower-case as written mid-sentence, typed Event,
  Organization or Location by its head noun, else Concept. A phrase of one word is an
  entity only when a fact uses it. "my mom" is the Person "<speaker>'s mom". Pronouns,
  discourse words ("Wow", "Gotcha"), generic heads ("thing", "lot", "way") and dates
  are not entities. The speakers are always Person entities.
- facts from the dependency parse: subject-verb-object and verb-(particle)-preposition-
  object named by the verb's lemma (GO_TO, SIGN_UP_FOR); xcomp chains ("started to
  paint landscapes" PAINT, "want to open a studio" WANT_TO_OPEN); copulas ("Mel is a
  counselor" IS_A, "the CEO of Acme" CEO_OF, "married to Bob" MARRIED_TO, "inspired by
  Mel" INSPIRED_BY); "my friend Mel" FRIEND_OF. The subject carries over conjunctions
  ("joined Acme and moved to Boston"); conjoined subjects and objects each get a fact.
  `fact` is the clause rewritten around the two entities, pronouns replaced.
- conversations: I/me/my are the speaker; we/us/our the speaker too, with a lower
  confidence (others took part); in a two-party conversation you/your is the other
  speaker; a turn's sentence in the past tense with no subject ("Lost my job") is the
  speaker's.
- time: the clause's own date words, resolved against the reference time by
  `resolve_date`, are the fact's valid_at; a leaving verb ("left", "quit", "resigned
  from", "moved out of", "broke up with") states the end (invalid_at) of the relation
  it ends (WORKS_AT, LIVES_IN, MEMBER_OF, ...).
Limits: no coreference beyond the speakers (a fact whose subject is he/she/they/it is
dropped); questions, negated, conditional and modal clauses ("would", "should",
"can") assert nothing; the parser's mistakes on chatty text are the extractor's; English
only. It needs spaCy and a pipeline package (`OfflineExtractor.problem` says which).

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
