"""Check a draft answer sentence by sentence against the passages it was written from.

Each checkable sentence is sent to the verifier (MiniCheck's "Document: … Claim: …" → Yes/No)
against its cited passages first, then against the passages that share the most words with it,
with a hard cap on the number of checks: on a CPU every check is a model call. Two string checks
come first and cost nothing: a claim whose numbers or names no passage states is unsupported, and a
claim that quotes a passage (most of its word sequences, same negations) is supported.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from ...config import VerifySettings
from ..corpus.catalog import ALIASES, Catalog, DocEntry
from ..retrieval.query import NUMBER_WORDS
from ..text import LIST_MARKER, line_sentences, ngrams, split_sentences
from ..vocabulary import CLAIM_STOPWORDS
from ..types import Passage, Verdict
from .premise import (AGREEING_WORDS, CLAUSE_END, CONFIRMS, DOCUMENT_WORDS, NEGATION, denies, presuppositions, stem,
                      stems)

_CITATION = re.compile(r"\[(\d+(?:\s*[,;–-]\s*\d+)*)\]")
_WORD = re.compile(r"[a-z0-9]+")
# The reader declining, in the four languages it answers in: it does not know, the passages do not
# say, or it asks for more context (a small reader's answer to a follow-up it did not follow, else
# shown with a passage quoted under it as if it were an answer).
DONT_KNOW = re.compile(
    r"\b(?:i (?:do not|don't|don’t) know|(?:i'm|i am) not sure|i (?:cannot|can't|can’t|am unable to) "
    r"(?:answer|find|determine)|(?:the )?(?:context|passages?|documents?|provided information)"
    r" (?:does|do) not (?:contain|provide|mention|include|say|specify|address|cover)|"
    r"(?:is|are) not (?:mentioned|covered|provided|addressed|specified|found) in the (?:context|passages?|documents?)|"
    r"no (?:information|mention) (?:about|of|on)|not enough information|"
    r"(?:please|could you|can you)\s+(?:please\s+)?(?:provide|give me|share) (?:me )?(?:more|additional|further) "
    r"(?:context|information|details)|"
    r"i need more (?:context|information)|could you (?:please )?(?:clarify|specify|rephrase)|"
    r"no (?:lo )?sé|no (?:tengo|hay) (?:suficiente )?informaci[oó]n|no puedo (?:responder|encontrar|determinar)|"
    r"(?:el contexto|los pasajes|el pasaje|los documentos|el documento) no (?:contiene|contienen|menciona|mencionan|"
    r"proporciona|proporcionan|dice|dicen|incluye|incluyen|especifica|especifican|aborda|abordan)|"
    r"(?:proporciona|proporcione|proporci[oó]name|dame|denme) m[aá]s (?:contexto|informaci[oó]n|detalles)|"
    r"ich wei(?:ß|ss) (?:es )?nicht|ich kann (?:die frage |das |dies |sie )?nicht beantworten|"
    r"nicht (?:gen[uü]gend|ausreichend|genug) informationen|(?:gib|geben sie) (?:mir )?mehr (?:kontext|informationen)|"
    r"(?:der kontext|die textstellen?|die passagen|die dokumente|das dokument) "
    r"(?:enth[aä]lt|enthalten|erw[aä]hnt|erw[aä]hnen|nennt|nennen) (?:keine|nicht)|"
    r"je ne sais pas|je ne peux pas (?:r[eé]pondre|trouver|d[eé]terminer)|pas (?:assez|suffisamment) d'informations|"
    r"(?:(?:veuillez|pourriez-vous|pouvez-vous|merci de) (?:fournir|donner|pr[eé]ciser)|fournissez|donnez|"
    r"pr[eé]cisez) (?:plus de|davantage de|plus d') ?(?:contexte|d[eé]tails|informations)|"
    r"(?:le contexte|les passages|le passage|les documents|le document) ne (?:contient|contiennent|mentionne|"
    r"mentionnent|pr[eé]cise|pr[eé]cisent|fournit|fournissent|dit|disent|traite|traitent))\b", re.IGNORECASE)


# A passage quoted in an answer ('The sources say: "Smith [74] showed …" [2]'): the marks inside
# the quote are the document's own references, part of its words, and cite no passage.
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


def in_quote(text: str, at: int) -> bool:
    """Whether position `at` of `text` lies inside a quotation (`QUOTED`), where a mark is the
    document's. The price: a reader's own mark written inside its quote is not read as one. A
    quote over two sentences, split, and quotes in « » or „ “ are not seen as quotes."""
    return any(m.start() < at < m.end() for m in QUOTED.finditer(text))


def citations(sentence: str) -> list[int]:
    """Passage numbers cited in a sentence: [2], [1, 3], [2-4], outside a quotation (`in_quote`)."""
    nums = []
    for m in _CITATION.finditer(sentence):
        if in_quote(sentence, m.start()):
            continue
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            if re.fullmatch(r"\d+\s*[–-]\s*\d+", part):
                a, b = (int(x) for x in re.split(r"\s*[–-]\s*", part))
                nums.extend(range(a, min(b, a + 20) + 1))
            elif part.strip().isdigit():
                nums.append(int(part))
    return nums


def claim_text(sentence: str) -> str:
    """What is checked: the sentence without its list marker and citation marks."""
    text = " ".join(_CITATION.sub("", LIST_MARKER.sub("", sentence)).split())
    return re.sub(r"\s+([.,;:!?])", r"\1", text)


def says_dont_know(text: str) -> bool:
    """The reader declined: its first sentence (or the whole short answer) says it does not know, or
    it wrote no word at all."""
    sentences = split_sentences(text)
    if not any(re.search(r"\w", claim_text(s)) for s in sentences):
        return True  # nothing but marks ("[1].")
    return bool(DONT_KNOW.search(sentences[0]) or (len(sentences) <= 2 and DONT_KNOW.search(text)))


# A yes/no question opens with an auxiliary verb, possibly after a fronted clause ("Because …, are they …?"),
# before a word or a document's number ("does 600-1 …").
_YES_NO = re.compile(r"(?:\s*|.*,\s*)(?:is|are|was|were|do|does|did|can|could|should|would|will|shall|may|might|"
                     r"must|has|have|had)\s+(?:it|they|there|this|these|that|those|we|you|i|the|an?|[a-z0-9][\w.-]*)\b",
                     re.IGNORECASE)


def asks_yes_no(question: str) -> bool:
    """The question asks yes or no ("does X …?", a statement tagged "X, right?" or drawn as a
    conclusion, "so X?"): the one test the checks below share."""
    return bool(question and (_YES_NO.match(question)
                              or any(p.form in ("tag", "declarative") for p in presuppositions(question))))


# Words a draft adds around an echo without saying anything ("... is the answer given in the context").
_FILLER = set("""because since answer answers context passage passages provided mentioned information following
according based stated states described given document documents text source sources""".split())


def restates_question(text: str, question: str) -> bool:
    """The draft only echoes the question ("ISO/IEC 42001 contains the requirement to perform …",
    "Lab testing is not enough because [1]."): no content word beyond the question's own and filler.
    Small readers do this when the context lacks the answer; it is a non-answer, however fluent.
    One new word is enough to be an answer: "The objective added to availability, integrity and
    privacy is abuse." """
    if not question or asks_yes_no(question):
        return False  # to a yes/no question, restating it with a polarity *is* the answer
    said = _content_words(claim_text(text))
    new = {w for w in said - _content_words(question) - _FILLER
           if len(w) > 1 or w.isdigit()}  # a lone letter ("clause R") says nothing
    return len(said) >= 4 and not new


def is_checkable(sentence: str) -> bool:
    """Lead-ins ("The six categories are:") and refusals carry no claim worth a model call."""
    claim = claim_text(sentence)
    if claim.endswith(":") or len(_WORD.findall(claim.lower())) < 3:
        return False
    return not DONT_KNOW.search(claim)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in CLAIM_STOPWORDS}


def rank_by_overlap(sentence: str, passages: list[Passage]) -> list[int]:
    """1-based passage numbers, most shared content words first (ties keep retrieval order)."""
    words = _content_words(claim_text(sentence))
    scored = [(-len(words & _content_words(p.text + " " + p.section)), i) for i, p in enumerate(passages, 1)]
    return [i for _, i in sorted(scored)]


def best_matches(claim: str, units: list[str], most: int = 3) -> list[int]:
    """Indices of the units (a passage's sentences or table rows) that back the claim, for marking
    in the document viewer: each holding at least half the claim's content words and near the
    best unit's share (a table's other rows repeat some of its words), else the one sharing most
    (two words at least); at most `most`, in passage order."""
    words = _content_words(claim_text(claim))
    if not words:
        return []
    shared = [len(words & _content_words(u)) for u in units]
    top = max(shared, default=0)
    strong = [i for i, n in enumerate(shared) if n / len(words) >= 0.5 and n >= 0.75 * top]
    if not strong and shared and max(shared) >= 2:
        strong = [shared.index(max(shared))]
    return sorted(sorted(strong, key=lambda i: -shared[i])[:most])


def candidate_passages(sentence: str, passages: list[Passage], per_sentence: int) -> list[int]:
    """Cited passages (valid numbers only) first, then best lexical matches, at most `per_sentence`."""
    cited = [n for n in dict.fromkeys(citations(sentence)) if 1 <= n <= len(passages)]
    rest = [n for n in rank_by_overlap(sentence, passages) if n not in cited]
    return (cited + rest)[:per_sentence]


_ANCHOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9./:-]*")


def anchors(claim: str) -> list[str]:
    """The exact-match facts of a claim: numbers and identifiers (42001, LLM10, M-24-10, PW.1.1) and
    acronyms (GDPR, HIPAA). A small judge model waves these through when they are wrong; a
    string check cannot."""
    found = []
    for token in _ANCHOR.findall(claim):
        token = token.rstrip(".:-/")
        if any(c.isdigit() for c in token) or (len(token) >= 2 and token.isupper() and token.isalpha()):
            found.append(token)
    return list(dict.fromkeys(found))


def _present(anchor: str, haystack: str) -> bool:
    a = anchor.lower()
    if a.isdigit() and int(a) < len(NUMBER_WORDS) and re.search(rf"\b{NUMBER_WORDS[int(a)]}\b", haystack):
        return True
    return re.search(rf"(?<![a-z0-9]){re.escape(a)}(?![a-z0-9])", haystack) is not None


def _haystack(passage: Passage) -> str:
    return " ".join((passage.doc, passage.title, passage.section, passage.text)).lower()


def stated_nowhere(claim_anchors: list[str], haystacks: list[str]) -> list[str]:
    """The anchors that none of the texts contains."""
    return [a for a in claim_anchors if not any(_present(a, h) for h in haystacks)]


def ungrounded(claim: str, passage: Passage) -> list[str]:
    """Anchors of the claim that the passage (with its document id, title and section) never states."""
    return stated_nowhere(anchors(claim), [_haystack(passage)])


def unknown_named(claim: str, unknown_terms: list[str]) -> list[str]:
    """The names the corpus never mentions (refusal.unknown_terms of the question) that a claim repeats:
    whatever it says about them, the documents cannot support it ("the Colorado AI Act takes effect ...")."""
    low = claim.lower()
    return [t for t in unknown_terms if _present(t, low)]


def ungrounded_verdicts(sentences: list[str], passages: list[Passage], question: str = "",
                        unknown_terms: list[str] | None = None) -> list[Verdict]:
    """Sentences stating a number, identifier or acronym that neither the question nor any passage
    contains, or a name the corpus never mentions: unsupported without any model call, so it is
    cheap enough to run on every answer."""
    sources = [question.lower()] + [_haystack(p) for p in passages]
    out = []
    for sentence in sentences:
        if not is_checkable(sentence):
            continue
        claim = claim_text(sentence)
        never = unknown_named(claim, unknown_terms or [])
        absent = stated_nowhere(anchors(claim), sources)
        if never:
            out.append(Verdict(sentence, False, None, f"the documents never mention: {', '.join(never)}"))
        elif absent:
            out.append(Verdict(sentence, False, None, f"not in any passage: {', '.join(absent)}"))
    return out


def count_mismatch(answer: str, count: int | None) -> Verdict | None:
    """A question naming N items ("the four tiers of X") answered with a list of M != N items: the list
    is about something else (another document's three tiers) or incomplete, and the reader's lead-in
    ("The four tiers are:") hides it. Flagged on that lead-in (or the first item), no model call.
    Only top-level, different items count: indented sub-points belong to an item."""
    if not count:
        return None
    lines = [ln for ln in (answer or "").splitlines() if ln.strip()]
    items = [i for i, ln in enumerate(lines) if LIST_MARKER.match(ln) and not ln[:1].isspace()]
    distinct = len({claim_text(lines[i]).lower() for i in items})  # a repeated item pads the list to size
    if len(items) < 2 or distinct == count:
        return None
    before = line_sentences(lines[items[0] - 1].strip()) if items[0] > 0 else []
    where = before[-1] if before else lines[items[0]].strip()
    repeats = f" different ones ({len(items)} with repeats)" if distinct < len(items) else ""
    return Verdict(where, False, None, f"the question asks for {count} items; the answer lists {distinct}{repeats}")


COUNTED_NOT_LISTED = "the answer counts the items but names none"
# "identifies six categories", "names several kinds of attacks": a count before a plural (a number
# as a word or digits, or a vague one), the thing counted within the next four words.
_COUNTED = re.compile(r"(?<![\w.-])(?:\d{1,2}|" + "|".join(NUMBER_WORDS[2:]) + r"|several|multiple|various|"
                      r"a number of)\s+((?:[A-Za-z][\w-]*\b[\s,]*){1,4})", re.IGNORECASE)
_ASKS_HOW_MANY = re.compile(r"\bhow many\b|\bnumber of\b|\bcu[aá]nt[oa]s\b|\bwie viele\b|\bcombien\b",
                            re.IGNORECASE)


# Words that ask for a list's items whatever the things are: "what kinds of gadget checks …?" is
# answered by "six gadget-check categories" as much as by "six gadget checks".
_KIND_WORDS = frozenset("kind kinds type types sort sorts category categories variety varieties".split())


def _kind(word: str, stem: str) -> str:
    """`stem`, the word as the check cuts it, or one stem for all the words of `_KIND_WORDS`."""
    return "kind" if word in _KIND_WORDS else stem


def counted_not_listed(answer: str, question: str, items: list[str]) -> Verdict | None:
    """An answer that says how many of the things asked about there are ("The report identifies
    six monitoring categories.") and names none of them (`items`: the list the answer gives, read
    by the follow-up rules): a small reader's way of dodging a list, which also leaves "the 4th
    one" nothing to point at. Not for a question that asks how many, or yes or no. Flagged on the
    counting sentence, no model call."""
    if items or _ASKS_HOW_MANY.search(question) or asks_yes_no(question):
        return None
    if any(LIST_MARKER.match(line) for line in (answer or "").splitlines()):
        return None
    sentences = split_sentences(answer or "")
    if not sentences or len(sentences) > 3:
        return None
    asked = {_kind(w, w.rstrip("s")) for w in _WORD.findall((question or "").lower()) if len(w) > 3}
    for sentence in sentences:
        for m in _COUNTED.finditer(_CITATION.sub("", sentence)):
            things = [_kind(w, w[:-3] if w.endswith("ies") else w[:-1]) for w in _WORD.findall(m.group(1).lower())
                      if len(w) > 3 and w.endswith("s")]
            if any(w.startswith(stem) or stem.startswith(w) for stem in things for w in asked):
                return Verdict(sentence.strip(), False, None, COUNTED_NOT_LISTED)
    return None


BARE_POLARITY = "the answer says yes in the question's own words, with nothing from the passages"


def _stated(answer: str) -> list[str]:
    """The answer's sentences that say something: a stray "(2)" a reader writes for a citation is none."""
    return [s for s in split_sentences(answer or "") if re.search(r"[A-Za-z]", s)]


def bare_polarity(answer: str, question: str, names: str = "") -> Verdict | None:
    """A yes/no question answered by one sentence that opens with Yes and restates the question
    ("Yes, the guide makes recommendations on it."): a small reader's reflex, which says nothing
    a passage says, however the passages settle it. A bare "No, it does not …" is left alone: it
    is no reflex, and its negated verb is often the passage's own ("does not mandate"). At most
    one word of its own beyond the question's and the documents' names (`names`, and the words
    naming any document: an answer spells them out) is allowed, for a changed form ("checked" for
    "check"); words are compared by their first six letters. Flagged on the sentence, no model call."""
    sentences = _stated(answer)
    if not asks_yes_no(question) or len(sentences) != 1 or not CONFIRMS.match(sentences[0]):
        return None
    known = {stem(w) for w in _content_words(f"{question} {names}") | _FILLER | set(AGREEING_WORDS)} | DOCUMENT_WORDS
    own = {stem(w) for w in _content_words(claim_text(sentences[0]))} - known
    return Verdict(sentences[0].strip(), False, None, BARE_POLARITY) if len(own) <= 1 else None


COPIED_BACK = "the answer it was asked to shorten came back as it was"
COPY_SHARE = 0.8  # of the shortened answer's words, and of its length: at or above, it was copied back


def copied_back(answer: str, shortened: str) -> Verdict | None:
    """A rewrite asked to be brief that gives the answer back as it was, as a small reader may
    whatever the ask (docs/decisions.md). Flagged on the answer's first sentence, no model call;
    None when `shortened` is one sentence already (nothing to shorten)."""
    said, wanted = _WORD.findall(answer.lower()), _WORD.findall(shortened.lower())
    if len(_stated(shortened)) < 2 or not wanted:
        return None
    share = len(set(wanted) & set(said)) / len(set(wanted))
    if share < COPY_SHARE or len(said) < COPY_SHARE * len(wanted):
        return None
    stated = _stated(answer)
    return Verdict((stated[0] if stated else answer).strip(), False, None, COPIED_BACK)


ASKED_BACK = "the answer asks a question instead of answering"
_MARKS_AT_END = re.compile(r"(?:\s*\(\d{1,2}\)|[\s\"'”»])+$")  # "(1)", a citation neutralised in a rewrite; closing quotes


def asked_back(answer: str, passages: list[Passage] = ()) -> Verdict | None:
    """A draft made only of questions ("¿Los documentos dicen que …?", the question put back in
    other words): a small reader writing in another language does this, and it answers nothing.
    Flagged on its first sentence, no model call. Not a list, nor questions a passage asks (the
    open questions a report lists are an answer)."""
    stated = [(s, claim) for s in split_sentences(answer) if (claim := _MARKS_AT_END.sub("", claim_text(s)))]
    if not stated or not all(claim.endswith("?") for _, claim in stated) \
            or any(LIST_MARKER.match(s) for s, _ in stated) \
            or quoted_by(claim_text(stated[0][0]), passages, list(range(1, len(passages) + 1))) is not None:
        return None
    return Verdict(stated[0][0], False, None, ASKED_BACK)


YES_AGAINST_NO = "the answer says yes where the sentence that settles the question says no"


def yes_against_no(answer: str, question: str, settles: str) -> Verdict | None:
    """A yes/no question answered "Yes, …" where `settles`, the passage sentence the question turns
    on (`premise.settling`), negates what it asks ("Yes, there is an agreed method" against "there
    is no agreed method"): a small reader's reflex that the sentence-by-sentence judge, when it
    runs at all, lets pass. Not when the question or the answer's opening negates itself ("is
    there no …?"). Flagged on the opening sentence, no model call."""
    sentences = _stated(answer)
    if not settles or not sentences or not asks_yes_no(question) or not CONFIRMS.match(sentences[0]):
        return None
    if NEGATION.search(question) or NEGATION.search(sentences[0]) or not denies(question, settles):
        return None
    return Verdict(sentences[0].strip(), False, None, YES_AGAINST_NO)


QUOTE_MIN_SHARE = 0.7  # share of a claim's word trigrams found in one stretch of passage text
QUOTE_MIN_TRIGRAMS = 4  # shorter claims ("It is voluntary.") always go to the judge


def _trigrams(text: str) -> list[tuple[str, ...]]:
    return ngrams(_WORD.findall(text.lower()))


def _stretches(passage: Passage) -> list[str]:
    """The passage's sentences and each pair of adjacent ones: a claim may join two sentences."""
    sentences = split_sentences(passage.text)
    return sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]


def quoted_by(claim: str, passages: list[Passage], numbers: list[int]) -> int | None:
    """The first of `numbers` (1-based) whose text the claim quotes: at least QUOTE_MIN_SHARE of the
    claim's word trigrams in one sentence or adjacent pair, with the same negations.

    Why: a small judge model answers No to near-verbatim quotes often enough to refuse supported
    answers; a quote is supported by construction. The negation guard keeps "DP provides guarantees
    against model extraction" from passing as a quote of "DP does not provide guarantees ...".
    """
    grams = _trigrams(claim)
    if len(grams) < QUOTE_MIN_TRIGRAMS:
        return None
    negated = bool(NEGATION.search(claim))
    for n in numbers:
        for stretch in _stretches(passages[n - 1]):
            have = set(_trigrams(stretch))
            share = sum(g in have for g in grams) / len(grams)
            if share >= QUOTE_MIN_SHARE and bool(NEGATION.search(stretch)) == negated:
                return n
    return None


def document_for(passage: Passage, limit_chars: int) -> str:
    """The passage as the verifier's document, with its heading so table cells keep their meaning."""
    text = passage.text.strip()
    if len(text) > limit_chars:
        text = text[:limit_chars].rsplit(" ", 1)[0] + " …"
    return f"{passage.section}\n{text}" if passage.section else text


def short_answer_claim(sentences: list[str], question: str) -> str | None:
    """A bare answer ("High", "NSSCET") has no checkable sentence of its own; paired with the question
    it becomes a claim, so a terse answer cannot pass unverified. None when there is nothing to pair."""
    if not question or any(is_checkable(s) for s in sentences):
        return None
    text = " ".join(claim_text(s) for s in sentences).strip()
    if not text or DONT_KNOW.search(text):
        return None
    return f"Question: {question.strip()} Answer: {text}"


# A sentence saying that documents say the same thing. One passage cannot back it: each document must.
AGREEMENT = re.compile(r"\b(?:agree(?:s|d)?|in agreement|(?:say|says|said|state|states|define|defines|describe|describes|"
                       r"mean|means|use|uses) the same|likewise|similarly|both (?:documents|reports|profiles|frameworks|"
                       r"publications|sources|passages))\b", re.IGNORECASE)


def claims_agreement(sentence: str) -> bool:
    """Whether the sentence says documents agree ("both documents agree that …", "… says the same")."""
    return bool(AGREEMENT.search(claim_text(sentence)))


AGREEMENT_SHARE = 0.5  # of what a claim of agreement says, the share a passage must hold to say the same
_AGREEMENT_WORDS = stems("agree agrees agreed agreement same both likewise similarly alike say says said state states "
                         "define defines described describe describes mean means use uses core "
                         + " ".join(AGREEING_WORDS))


def said_alike(claim: str, names: str) -> set[str]:
    """What a claim of agreement says (word stems), less the documents' `names` and the words
    saying that they agree."""
    return stems(claim) - DOCUMENT_WORDS - _AGREEMENT_WORDS - stems(names)


def speaks_of(said: set[str], passage: Passage, share: float = AGREEMENT_SHARE) -> bool:
    """Whether `passage` holds at least `share` of `said` (`said_alike`): a document that does not
    speak of a thing says nothing the same about it, however readily a small judge nods at "both
    documents agree on X". A claim with nothing left to hold is left to the judge."""
    return not said or len(said & stems(f"{passage.section} {passage.text}")) >= share * len(said)


# A sentence saying that a document speaks of a thing ("the framework also talks about X", "it
# mentions X"): what it names after the verb, up to the clause's end or a "and"/"but"/"as"/"in".
_MENTIONS = re.compile(r"\b(?:(?:talk|speak)(?:s|ed)?|spoke)\s+(?:about|of)\s+|\bmention(?:s|ed)?\s+|"
                       r"\bdiscuss(?:es|ed)?\s+|\baddress(?:es|ed)?\s+|\brefers?\s+to\s+|\btouch(?:es|ed)?\s+on\s+",
                       re.IGNORECASE)
_PASSIVE = re.compile(r"\b(?:be|is|are|was|were|been|being)$", re.IGNORECASE)
_REPORTED = re.compile(r"(?:that|how|why|whether|what|when|where|if)\b", re.IGNORECASE)
_MENTIONED_END = re.compile(r"[,;:()\[]|[.!?](?:\s|$)|\s(?:and|but|as|in|while|whereas|which|because|by)\s",
                            re.IGNORECASE)


def mentioned(claim: str) -> tuple[str, str]:
    """Who an affirmative claim says speaks of a thing (the words before the verb) and that thing;
    ('', '') for none, or a denied one: "it does not mention X" is no claim that a passage holds X."""
    found = _MENTIONS.search(claim)
    if not found:
        return "", ""
    who = CLAUSE_END.split(claim[:found.start()])[-1].strip()
    if NEGATION.search(who) or _PASSIVE.search(who):  # "X is addressed by …" says nothing of a document
        return "", ""
    thing = _MENTIONED_END.split(claim[found.end():], maxsplit=1)[0].strip()
    if _REPORTED.match(thing):  # "it mentions that developers should …" reports what it says, in other words
        return "", ""
    return who, thing


def speaker(who: str, passages: list[Passage]) -> str:
    """The one document `who` names ("the AI RMF also"), '' for none or several: what it is said
    to speak of, a passage of another document cannot show."""
    titles = {p.doc: p.title for p in passages}
    named = Catalog(DocEntry(doc, titles.get(doc, "")) for doc in dict.fromkeys([*ALIASES, *titles])).named(who)
    return named[0] if len(named) == 1 else ""


def verify_sentences(sentences: list[str], passages: list[Passage], check: Callable[[str, str], bool],
                     budget: VerifySettings | None = None, question: str = "",
                     unknown_terms: list[str] | None = None,
                     check_at: Callable[[int, str], bool] | None = None) -> Iterator[Verdict]:
    """One Verdict per checkable sentence, in order; a sentence the budget cannot reach is unsupported
    (never assumed true). `check(document, claim)` is the verifier. With `question`, an answer with no
    checkable sentence is checked as one question+answer claim. A sentence naming one of
    `unknown_terms` (names the corpus never mentions) is unsupported without a check.

    The judge is asked in rounds: every open sentence's first candidate passage, then the second
    for those still unsupported. Within a round the calls go passage by passage, so consecutive
    calls open with the same document and llama.cpp reads it once (the prompt's common prefix is
    kept); `budget.order = "sentence"` asks sentence by sentence instead. The same pairs are
    judged either way; only where `max_checks` binds does the breadth-first order spend it on
    every sentence's first try before any second try. A verdict is yielded as soon as it and all
    before it are decided. `check_at(number, claim)`, when given, is asked instead of `check`: a
    judge that already holds the numbered passages (the answer's own prompt) needs only the number.

    A sentence saying that documents agree (`claims_agreement`), among passages of two documents or
    more, is supported only when a passage of two different documents each supports it: the judge
    finds "both documents agree that X" true of the one passage that says X."""
    budget = budget or VerifySettings()
    short = short_answer_claim(sentences, question)
    if short is not None:
        sentences = [" ".join(sentences)]
    open_ = [_opened(s, short, passages, unknown_terms or [], budget.per_sentence) for s in sentences
             if short is not None or is_checkable(s)]
    used, shown = 0, 0
    for o, n in _schedule(open_, budget.order):
        while shown < len(open_) and (open_[shown].verdict is not None or not open_[shown].tries_left):
            yield open_[shown].final()
            shown += 1
        if o.verdict is not None:
            continue
        if used >= budget.max_checks:
            break
        used += 1
        o.tries_left -= 1
        if (check_at(n, o.claim) if check_at else check(document_for(passages[n - 1], budget.doc_chars), o.claim)):
            o.supported_by(n, passages[n - 1])
    for o in open_[shown:]:
        yield o.final()


def _schedule(open_: list[_Open], order: str) -> Iterator[tuple[_Open, int]]:
    """The (sentence, passage) pairs to judge, in the order asked (see verify_sentences)."""
    if order == "sentence":
        for o in open_:
            for n in o.grounded[:o.tries]:
                yield o, n
        return
    for r in range(max((o.tries for o in open_), default=0)):
        pending = [o for o in open_ if o.verdict is None and r < o.tries]
        for o in sorted(pending, key=lambda o: o.grounded[r]):  # stable: sentence order within a passage
            yield o, o.grounded[r]


class _Open:
    """A sentence being checked: what is sent to the judge, the passages that may support it, the
    judge calls it may still get, and the verdict once known (free checks decide some at once)."""

    def __init__(self, sentence: str, claim: str, grounded: list[int], reason: str, tries: int,
                 verdict: Verdict | None = None, documents: int = 1):
        self.sentence, self.claim, self.grounded, self.reason, self.verdict = \
            sentence, claim, grounded, reason, verdict
        self.documents = documents  # how many documents must each support it (2: a claim of agreement)
        self.backing: dict[str, tuple[int, str]] = {}  # document -> the first passage of it that supported the
        # sentence, and the document's title
        self.tries = self.tries_left = 0 if verdict else min(max(tries, documents), len(grounded))

    def supported_by(self, n: int, passage: Passage) -> None:
        """The judge found passage `n` to support the sentence."""
        self.backing.setdefault(passage.doc, (n, passage.title or passage.doc))
        if len(self.backing) >= self.documents:
            self.verdict = Verdict(self.sentence, True, min(n for n, _ in self.backing.values()), "")

    def final(self) -> Verdict:
        if self.verdict is None and self.backing:
            said = ", ".join(title for _, title in self.backing.values())
            return Verdict(self.sentence, False, None, f"only {said} says it, of the documents it says agree")
        return self.verdict or Verdict(self.sentence, False, None, self.reason)


def _opened(sentence: str, short: str | None, passages: list[Passage], unknown_terms: list[str],
            tries: int) -> _Open:
    claim = short or claim_text(sentence)
    stated = claim.split(" Answer: ", 1)[-1] if short else claim  # the question's own anchors are given
    never = unknown_named(stated, unknown_terms)
    if never:
        return _Open(sentence, claim, [], "", tries,
                     Verdict(sentence, False, None, f"the documents never mention: {', '.join(never)}"))
    # a passage that lacks the claim's numbers or names cannot support it: the string check is
    # free, so it runs over every passage and the judge's budget goes to the ones that remain
    ordered = candidate_passages(claim if short else sentence, passages, len(passages))
    alike = not short and claims_agreement(sentence)
    agreement = alike and len({p.doc for p in passages}) > 1
    facts = anchors(stated)
    if agreement:  # the documents it names are no facts a passage of one of them must state
        facts = [a for a in facts if not any(_present(a, f"{p.doc} {p.title}".lower()) for p in passages)]
    grounded = [n for n in ordered if not stated_nowhere(facts, [_haystack(passages[n - 1])])]
    who, thing = ("", "") if short else mentioned(claim)
    if alike or thing:  # only a passage that speaks of the thing can say the same about it, or speak of it
        names = " ".join(f"{p.doc} {p.title} {' '.join(ALIASES.get(p.doc, ()))}" for p in passages)
        # what a document is said to speak of, a passage of it names in full ("sprocket drift", not "sprocket")
        said, share = (said_alike(claim, names), AGREEMENT_SHARE) if alike else \
            (stems(thing) - DOCUMENT_WORDS - stems(names), 1.0)
        doc = speaker(who, passages) if thing and not alike else ""
        spoken = [n for n in grounded if speaks_of(said, passages[n - 1], share)
                  and (not doc or passages[n - 1].doc == doc)]
        if grounded and not spoken and thing:
            of = f" of {DocEntry(doc, next((p.title for p in passages if p.doc == doc), '')).display}" if doc else ""
            return _Open(sentence, claim, [], "", tries,
                         Verdict(sentence, False, None, f"no passage{of} speaks of: {thing}"))
        grounded = spoken
    if agreement:
        grounded = _each_document_first(grounded, passages)
    reason = ""
    if not grounded:
        absent = stated_nowhere(facts, [_haystack(p) for p in passages])
        reason = f"not in any passage: {', '.join(absent or facts)}"
    quoted = None if short or agreement else quoted_by(claim, passages, grounded)
    if quoted is not None:
        return _Open(sentence, claim, grounded, reason, tries, Verdict(sentence, True, quoted, "quotes the passage"))
    return _Open(sentence, claim, grounded, reason, tries, documents=2 if agreement else 1)


def _each_document_first(numbers: list[int], passages: list[Passage]) -> list[int]:
    """`numbers` with each document's best passage first, in the order the documents come: the
    first tries of a claim of agreement go one to each document."""
    firsts: dict[str, int] = {}
    for n in numbers:
        firsts.setdefault(passages[n - 1].doc, n)
    return list(firsts.values()) + [n for n in numbers if n not in firsts.values()]


def support_counts(verdicts: list[Verdict]) -> tuple[int, int]:
    passed = sum(1 for v in verdicts if v.supported)
    return passed, len(verdicts) - passed


def should_retry(verdicts: list[Verdict]) -> bool:
    """Retry once when more sentences fail than pass."""
    passed, failed = support_counts(verdicts)
    return failed > passed


def support_score(verdicts: list[Verdict]) -> float:
    """Share of checked sentences supported (0 when nothing was checked)."""
    return support_counts(verdicts)[0] / len(verdicts) if verdicts else 0.0
