"""The word classes the reader goes by: general English, not tuned to any data set."""

from __future__ import annotations

from kgapp.graph.time import WEEKDAYS


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


NER_TYPES = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "PRODUCT": "Product",
    "EVENT": "Event",
    "WORK_OF_ART": "Document",
    "NORP": "Concept",
    "LANGUAGE": "Concept",
}
# Interjections and conversational openers that NER or the tagger take for names.
DISCOURSE = _wordset(
    """absolutely ah aha alright aw aww awesome bye cheers congrats congratulations
    cool damn definitely dude gee geez golly gosh gotcha great haha hah hehe hello
    hey hi hm hmm huh indeed lol man nah nice no nope oh ok okay omg oops ouch
    please right sorry sure thank thanks totally ugh uh um welcome well whoa woah
    wow yay yeah yep yes yup every woohoo woo hooray yikes phew wanna gonna gotta
    kinda sorta lemme dunno fyi btw imo tbh idk"""
)
# Heads that say nothing on their own: placeholders, amounts, times, and the abstract
# nouns of feeling and striving that chat is full of ("my passion", "all the support").
GENERIC = _wordset(
    """thing things stuff time times lot lots way ways day days kind kinds sort sorts
    bit bits something anything everything nothing someone anyone everyone nobody
    one ones people person guy guys moment moments part parts type types piece place
    places idea ideas fun chance reason reasons fact question questions answer point
    end start beginning deal sense matter case feeling feelings experience
    experiences life world while week weeks month months year years weekend weekends
    today tonight tomorrow yesterday morning afternoon evening night nights hour
    hours minute minutes second seconds ton tons number amount couple bunch other
    others rest side area level example word words name news update updates plan
    plans goal goals step steps situation problem problems issue issues job home
    work everybody somebody anybody yours mine ours theirs hers his self myself
    memory memories shot try look care attempt go dream dreams passion passions
    love joy happiness hope hopes help support success successes progress confidence
    courage effort efforts trouble control growth learning meaning motivation
    inspiration advice luck stress pressure fear fears pain peace strength energy
    attention patience pride comfort freedom balance challenge challenges
    opportunity opportunities obstacle obstacles setback setbacks destiny greatness
    purpose journey vibe vibes mood mind heart hearts soul spirit emotion emotions
    thought thoughts belief reminder risk risks decision decisions choice choices
    change changes difference impact result results outcome benefit benefits value
    power focus dedication commitment determination kindness gratitude appreciation
    encouragement positivity escape outlet drive boost splash blast favor favour
    pleasure honor honour privilege relief break back corner touch track future past
    present age death skill skills talent talents hobby hobbies interest interests"""
)
CALENDAR_WORDS = _wordset(
    f"{' '.join(WEEKDAYS)} mon tue tues wed thu thur thurs fri sat sun january february"
    " march april june july august september october november december jan feb mar apr jun"
    " jul aug sep sept oct nov dec"
)
# Adjectives that rate or size a thing rather than say which kind it is.
EVALUATIVE = _wordset(
    """good great nice new old big small little large huge tiny amazing awesome
    wonderful beautiful cool fun funny lovely best better favorite favourite fave
    own other same whole entire first last next previous recent different special
    real true perfect incredible fantastic super pretty cute happy sad hard tough
    busy exciting interesting important long short quick few many several various
    certain crazy awful terrible bad sweet fresh main total full early late current
    latest upcoming final original proud simple basic extra such much more most less
    least lot lots particular major minor epic brilliant gorgeous stunning lucky
    cozy fabulous unforgettable memorable tremendous meaningful powerful inspiring
    positive negative difficult easy free only single double usual regular normal
    typical additional random ideal top nearby possible enough successful strong"""
)
EVENT_HEADS = _wordset(
    """class classes party parties conference concert concerts festival festivals
    wedding weddings meeting meetings game games match competition competitions show
    shows workshop workshops event events ceremony race tournament camp parade
    celebration exhibition exhibit fair lesson lessons course courses vacation
    holiday tour hike retreat marathon performance recital audition interview
    funeral birthday graduation reunion session sessions seminar lecture rally
    protest march meetup gathering fundraiser gala premiere screening trip trips
    visit cruise picnic barbecue"""
)
ORGANIZATION_HEADS = _wordset(
    """company agency studio school university college club team band church group
    organization organisation charity shelter firm bank hospital clinic startup
    business foundation association society council committee department center
    centre institute academy orchestra choir league union nonprofit non-profit
    network community operator developer maker manufacturer provider retailer supplier
    producer publisher consultancy carrier airline brewery distributor chain start-up
    cooperative co-op outfit label lab laboratory corporation conglomerate insurer
    broker agency subsidiary trust fund cooperative boatyard shipyard yard works mill
    brewery"""
)
# Organizations one is a member of rather than employed by.
GROUP_HEADS = _wordset(
    """club group team band choir orchestra league community society association union"""
)
PLACE_HEADS = _wordset(
    """park beach city town village lake mountain mountains museum restaurant cafe
    store shop gym library house apartment country island river forest garden street
    neighborhood neighbourhood state coast valley trail farm bakery bar hotel zoo
    airport station campus downtown aquarium theater theatre stadium arena mall
    market temple"""
)
# Nouns for someone's relatives and relations: "my mom" is a person of the speaker's.
RELATIONAL = _wordset(
    """mom mum mother dad father parents parent sister brother sibling siblings husband
    wife spouse partner son daughter kid kids child children baby grandma grandpa
    grandmother grandfather grandparents grandson granddaughter aunt uncle cousin
    cousins niece nephew friend friends bestie boyfriend girlfriend fiance fiancee
    boss coworker colleague colleagues neighbor neighbour neighbors neighbours
    roommate mentor teacher coach family"""
)
# Objects that say how much, not what: "put in a lot on", "spent time in".
AMOUNTS = _wordset("lot lots ton tons bit bunch couple plenty amount time place stuff thing things")
LIGHT_VERBS = _wordset("take bring get put have make give send keep")
# The tokenizer splits "gonna", "wanna", "gotta": the fact sentence writes them out.
SPLIT_WORDS = {"gon": "going", "wan": "want", "got": "have", "na": "to", "ta": "to"}
CHAT_WORDS = {"wanna": "want to", "gonna": "going to", "gotta": "have to"}
# Verbs whose object may be a speaker ("I met you"): with any other verb, "you" and
# "me" are conversation ("tell you", "thank you"), not facts.
PERSONAL_VERBS = _wordset(
    """meet know marry date visit miss love like adore help support inspire invite
    teach hug introduce join hire mentor raise adopt"""
)
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
FIRST_PLURAL = frozenset({"we", "us", "our", "ours", "ourselves"})
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "ya", "u"})
MODALS_OF_DOUBT = frozenset(
    {"would", "'d", "could", "should", "might", "may", "must", "can", "ca", "shall"}
)
# A head verb whose xcomp only says the act began or goes on: "started to paint".
ASPECT = frozenset({"start", "begin", "continue", "keep", "resume", "love", "like", "enjoy"})
# A head verb of intent: "want to open a studio" WANT_TO_OPEN. Other heads ("felt
# like", "seemed to") assert nothing about the act.
INTENT = _wordset(
    """want plan hope try need decide wish intend aim mean prepare promise learn choose
    agree expect dream"""
)
# Verb (+ particle + preposition) that ends a relation, by the object's type.
ENDINGS: dict[str, dict[str, str]] = {
    "LEAVE": {
        "Organization": "WORKS_AT",
        "Entity": "WORKS_AT",
        "Location": "LIVES_IN",
        "Project": "MEMBER_OF",
    },
    # One quits or resigns from a job whatever NER took the employer for ("*": any type).
    "QUIT": {"*": "WORKS_AT"},
    "RESIGN_FROM": {"*": "WORKS_AT"},
    "RETIRE_FROM": {"*": "WORKS_AT"},
    "STEP_DOWN_FROM": {"Organization": "WORKS_AT"},
    "MOVE_OUT_OF": {"Location": "LIVES_IN"},
    "MOVE_FROM": {"Location": "LIVES_IN"},
    "MOVE_AWAY_FROM": {"Location": "LIVES_IN"},
    "DROP_OUT_OF": {"Organization": "STUDIES_AT"},
    "GRADUATE_FROM": {"Organization": "STUDIES_AT"},
    "LOSE_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "LOSE_JOB_WITH": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "QUIT_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "LEAVE_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "HAND_IN_NOTICE_AT": {"*": "WORKS_AT"},
    "GIVE_NOTICE_AT": {"*": "WORKS_AT"},
    "QUIT_POSITION_AT": {"*": "WORKS_AT"},
    "LEAVE_POSITION_AT": {"*": "WORKS_AT"},
    "BREAK_UP_WITH": {"Person": "DATES"},
    "SPLIT_UP_WITH": {"Person": "DATES"},
    "DIVORCE": {"Person": "MARRIED_TO"},
}
# The endpoint types of declared person relations: "Alice joined Beta Inc" makes Alice
# a Person whatever NER guessed.
ROLES: dict[str, tuple[str | None, str | None]] = {
    "WORKS_AT": ("Person", "Organization"),
    "LIVES_IN": ("Person", "Location"),
    "HEADQUARTERED_IN": ("Organization", "Location"),
    "LOCATED_IN": (None, "Location"),
    # What is used is a tool, whatever NER guessed ("uses Tableau" is not a place).
    "USES": (None, "Product"),
    "STUDIES_AT": ("Person", "Organization"),
    "CEO_OF": ("Person", "Organization"),
    "MARRIED_TO": ("Person", "Person"),
    "KNOWS": ("Person", "Person"),
    "FAMILY_OF": ("Person", "Person"),
    "LIKES": ("Person", None),
}
# A name that starts with one of these is a named piece of work: "Project Harrier".
PROJECT_WORDS = frozenset({"project", "programme", "program", "operation", "initiative"})
DATE_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY"})
# Nouns of a position held in an organisation: "CEO of Acme", "its chief executive".
ROLE_NOUNS = _wordset(
    """ceo cto cfo coo cmo cio cpo vp svp evp chairman chairwoman chairperson chair president
    vice-president director executive head manager founder co-founder cofounder owner
    leader lead editor editor-in-chief spokesperson spokesman spokeswoman treasurer
    secretary principal dean captain superintendent mayor governor chancellor
    commissioner"""
)
# Adverbs that hedge what the clause says: it is not stated as true.
HEDGES = _wordset(
    """maybe perhaps possibly probably reportedly allegedly apparently supposedly
    hopefully presumably seemingly rumoredly"""
)
# Verbs whose complement clause is someone's belief, hope or report, not the text's own
# statement: "I think she moved", "she said they had hired forty people".
REPORTING = _wordset(
    """think believe guess suppose suspect hope wish doubt assume bet imagine expect
    hear say tell claim report allege rumor rumour seem appear predict reckon fear
    pray dream wonder"""
)
RUMOUR = _wordset("rumor rumour rumors rumours word gossip")
# Verbs that state a lasting relation between two things (general English, grouped by
# the relation they state): in prose a clause with another verb is narration ("Helen
# thanked Dev"), not a fact of the graph.
RELATION_VERBS = _wordset(
    """found co-found cofound establish start launch set incorporate open close
    join work hire employ recruit appoint promote lead head manage run chair direct
    supervise oversee captain coach mentor leave quit resign retire depart fire dismiss
    replace succeed live move relocate settle reside study graduate enrol enroll attend
    teach train learn marry wed date divorce engage propose buy acquire purchase own sell
    merge invest fund sponsor back build create design develop write publish release
    produce compose invent paint record film draw use adopt migrate switch deploy supply
    provide deliver serve partner sign win award earn compete participate perform play
    speak present host organise organize visit tour belong contain include name base
    know meet befriend volunteer intern
    headquarter locate sit represent report"""
)
# Verbs that say little of a thing not named: "had yoga", "felt a mix", "got the photo",
# "need a break". With a named thing they still state a fact ("got a job at Acme").
EMPTY_VERBS = _wordset(
    """have get feel find see need keep put give show send bring wish hope mean say tell
    ask know think seem sound hear notice remember"""
)
# Nouns for a job: "quit her job at X", "took a position with X".
POSTS = _wordset("job jobs position post role seat notice")
# Verbs of liking or practising, and adjectives of fondness: their object is a topic
# of someone's life ("loves dance", "plays guitar", "passionate about fashion").
TOPICAL_VERBS = _wordset(
    """love like enjoy adore prefer play practise practice learn teach study pursue"""
)
FOND = _wordset("passionate keen crazy mad obsessed interested fond into")
# Verbs of talking to someone: with a person's name, conversation, not a fact.
TALK_VERBS = _wordset(
    "say tell ask hear ring rang call text email message thank phone answer congrat"
    " congratulate wish greet"
)  # "rang": the small English pipeline does not lemmatise it
# Prepositions that place an act: "cried in the supermarket", "slept at the station".
PLACING = _wordset("in at on near inside outside")
