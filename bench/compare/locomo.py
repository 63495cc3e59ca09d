"""One LoCoMo conversation (../shared/data/conversations/locomo/) as a corpus the bench
model can answer from, and its questions.

Episodes: each session's turns in windows of WINDOW turns, each turn rendered
"Speaker: text" under the session's date, so no system splits one further; each a
message episode (a chat's, as every system takes one). The gold
extraction of an episode is the human observations (session_N_observation) whose
evidence turn lies in it: each becomes a fact of its speaker, its sentence as written,
towards the first noun phrase of the sentence that is not the speaker or a pronoun
(spaCy's English pipeline), as a Concept. Questions: QA categories 1 (multi-hop),
2 (temporal) and 4 (single-hop), scored as bench/extraction.py scores them: every
content word of the answer in the context.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from bench.compare.corpus import Corpus, Entity, Episode, Fact, Mention

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "conversations" / "locomo"
WINDOW = 8
QA_CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
_SESSION = re.compile(r"session_(\d+)")


def session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> tuple[Corpus, list[dict[str, object]]]:
    from kgapp.graph.ingest.offline.extractor import DEFAULT_MODEL, load_pipeline

    nlp = load_pipeline(DEFAULT_MODEL)  # the offline extractor's spaCy pipeline
    raw = json.loads(path.read_text())
    speakers = (raw["speaker_a"], raw["speaker_b"])
    entities = {
        f"person:{s.lower()}": Entity(f"person:{s.lower()}", s, "Person", (s,)) for s in speakers
    }
    facts: dict[str, Fact] = {}
    episodes: list[Episode] = []
    sessions = sorted(int(m[1]) for key in raw if (m := _SESSION.fullmatch(key)))
    for number in sessions:
        when = session_date(raw[f"session_{number}_date_time"])
        turns = raw[f"session_{number}"]
        evidence = {
            item[1]: (speaker, item[0])
            for speaker, items in raw.get(f"session_{number}_observation", {}).items()
            for item in items
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], str)
        }
        for start in range(0, len(turns), WINDOW):
            window = turns[start : start + WINDOW]
            episode = Episode(
                f"s{number:02d}w{start // WINDOW:02d}",
                when,
                "\n".join(_line(t) for t in window),
                [],
                [],
                source="message",
            )
            for turn in window:
                if turn.get("dia_id") in evidence:
                    speaker, sentence = evidence[turn["dia_id"]]
                    _observation(nlp, entities, facts, episode, speaker, sentence)
            episodes.append(episode)
    qa = [q for q in raw.get("qa", []) if q.get("category") in QA_CATEGORIES and "answer" in q]
    return Corpus(entities, facts, episodes, [], seed=0), qa


def _line(turn: dict[str, str]) -> str:
    text = turn.get("text", "").strip()
    caption = (turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shared a photo: {caption}]".strip()
    return f"{turn['speaker']}: {text}"


def _observation(
    nlp: object,
    entities: dict[str, Entity],
    facts: dict[str, Fact],
    episode: Episode,
    speaker: str,
    sentence: str,
) -> None:
    if any(f.text == sentence for f in facts.values()):
        return
    topic = _topic(nlp, sentence, speaker)
    if topic is None:
        return
    key = "concept:" + topic.lower()
    if key not in entities and not any(
        topic.casefold() in (v.casefold() for v in e.variants) for e in entities.values()
    ):
        entities[key] = Entity(key, topic, "Concept", (topic,))
    key = next(
        e.id for e in entities.values() if topic.casefold() in (v.casefold() for v in e.variants)
    )
    person = f"person:{speaker.lower()}"
    fid = f"f{len(facts):05d}"
    facts[fid] = Fact(fid, person, "RELATED_TO", key, sentence, episode.reference_time, episode.id)
    episode.facts.append(fid)
    for entity in (person, key):
        if all(m.entity != entity for m in episode.mentions):
            episode.mentions.append(Mention(entity, entities[entity].name))


def _topic(nlp: object, sentence: str, speaker: str) -> str | None:
    for chunk in nlp(sentence).noun_chunks:  # type: ignore[operator]
        if chunk.root.pos_ == "PRON" or speaker in chunk.text:
            continue
        words = [t.text for t in chunk if t.pos_ not in ("DET", "PRON") and t.dep_ != "poss"]
        text = " ".join(words).strip(" '")
        if len(text) > 2:
            return text
    return None
