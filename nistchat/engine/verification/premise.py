"""A question's premise checked against the passages before the reader writes.

"X is mandatory, right?", "since X, …", "why is X required …" take a claim for granted. When a
retrieved sentence says the opposite about the same things (a negation over the claim's words,
or an antonym of one of them: mandatory/voluntary), a small reader still tends to open by
agreeing and correct itself later, if at all. So the premise is checked here, with strings only
(no model call, cheap enough for every question): the answer opens with the passage's sentence
(`PremiseCheck.lead`), and a reader whose first sentence still confirms the contradicted premise
gets an unsupported verdict on it (`opening_verdict`), and the answer is the lead alone.

Only positive claims are checked: a negated premise ("why can't I find X") would need a passage
that affirms it, and an affirmative sentence sharing a few words is no evidence of that.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from ..text import split_sentences
from ..types import Passage, Trace, Verdict
from ..vocabulary import CLAIM_STOPWORDS

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# A statement with a tag asking for agreement: "X, right?", "X, correct?", "X, yeah?"
# The tags that ask even without a question mark, as people type in a chat ("X, right"); not "no"
# or "ok", which end requests as often ("a list, no bullets", "in one line, ok").
_TAG_UNMARKED = r"(?:right|correct|yeah|true|innit|am i right|is that (?:right|correct|true))"
_TAG_WORDS = (rf"(?:{_TAG_UNMARKED}|yes|no|ok|isn'?t (?:it|that so)|aren'?t (?:they|we)|don'?t (?:we|they)|"
              r"doesn'?t (?:it|he|she))")
_TAG = re.compile(rf"^(?P<claim>.+?)(?:[\s,;:-]+{_TAG_WORDS}\s*\?+|\s*,\s*{_TAG_UNMARKED}\s*[.!]*)\s*$",
                  re.IGNORECASE)
# "is it true (that) X?", "isn't it the case that X?"
_IS_IT_TRUE = re.compile(r"^(?:is it (?:true|the case|correct|right)|isn'?t it (?:true|the case))\s+(?:that\s+)?"
                         r"(?P<claim>.+?)\s*\?*\s*$", re.IGNORECASE)
# A fronted reason: "since X, …", "because X, …", "given that X, …"
_FRONTED = re.compile(r"^(?:since|because|given (?:that)?|seeing (?:as|that)|now that)\s+(?P<claim>[^,;?]{8,}?)\s*[,;]",
                      re.IGNORECASE)
# "why is/does/must X …", "how come X …": the rest is taken for granted
_WHY = re.compile(r"^(?:why|how come)\s+(?:(?P<aux>is|are|was|were|does|do|did|has|have|had|must|should|can|"
                  r"would|will)(?P<neg>n'?t)?\s+)?(?P<claim>.+?)\s*\?*\s*$", re.IGNORECASE)
_LEAD = re.compile(r"^(?:so|ok(?:ay)?|and|but|well|also|hey|hi|alright|just to confirm|to confirm)[\s,:;-]+",
                   re.IGNORECASE)
# A statement asked as a question, drawn as a conclusion: "so X does Y?", "X does Y then?". Not one
# that opens with a question word, an auxiliary or a request (those ask), nor a "then?" after a
# clause of its own ("in short, is X … then?").
_ASKS = r"(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|do|does|did|can|could|should|would|will|" \
        r"must|has|have|had|may|might|shall|and|or|please|pls|tell|give|show|list|say)\b"
_SO = re.compile(rf"^(?:ok(?:ay)?,?\s+)?so[\s,]+(?!{_ASKS})(?P<claim>.+?)(?:[\s,]+then)?\s*\?+\s*$", re.IGNORECASE)
_THEN = re.compile(rf"^(?!{_ASKS})(?P<claim>[^,]+?)[\s,]+then\s*\?+\s*$", re.IGNORECASE)

NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|without|cannot)\b|n't\b|n’t\b", re.IGNORECASE)
_NOT_NEGATION = re.compile(r"\b(?:not only|whether or not|no matter|not just|if not|no later than|no less than|"
                           r"not necessarily)\b", re.IGNORECASE)  # "not necessarily" hedges, it does not deny
CLAUSE_END = re.compile(r"[,;:()]|[.!?](?:\s|$)|\s[-–—]\s|\b(?:but|although|though|however|whereas|while|yet)\b",
                        re.IGNORECASE)

# Pairs of opposite words a premise and a passage use: obligation, degree, frequency, completion.
# Words whose stem is another common word's are left out ("optional" is "options", "completed"
# "complex", "considerable" "consider"), and so are modal verbs ("must", "should"): a claim uses
# them in passing ("the tolerance each organization must use") more often than it asserts them.
_OPPOSITE_WORDS = (
    ("mandatory required compulsory obligatory binding force forced forcing", "voluntary nonbinding discretionary"),
    ("major significant substantial huge", "minimal negligible marginal slight"),
    ("always", "never rarely sometimes"),
    ("final finished", "draft preliminary"),
)
# Question-side words that carry no claim (the tag, the asker, the conversation).
_QUESTION_NOISE = frozenset("""we us our i me my you your basically just really actually still need needs
have has got get gets want wants right correct yeah yes ok okay true so like bunch lot lots kind sort""".split())


def stem(word: str) -> str:
    """A crude stem that lets "templates" meet "template" and "attackers" meet "attack": the first
    six letters of a long word, a short word without its plural s."""
    word = word.lower().replace("'", "").replace("’", "")
    if len(word) > 6:
        return word[:6]
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


# Words by which a claim names the document it is about: like the heading's words, they say what
# a sentence is about, not what it denies ("… is not within the scope of this report").
DOCUMENT_WORDS = frozenset(stem(w) for w in """report document framework publication plan profile paper
guidance guide nist""".split())


_OPPOSITES = tuple(({stem(w) for w in a.split()}, {stem(w) for w in b.split()}) for a, b in _OPPOSITE_WORDS)
_OBLIGED = {stem("mandatory")}  # what "why must X …" claims of X, though "must" itself is left out above
# Words that claim the same thing, so that a passage denying one denies a claim made with another:
# "not exhaustive" against "a complete list".
_SAME_WORDS = (frozenset(stem(w) for w in "complete comprehensive exhaustive everything entire".split()),)


def stems(text: str, noise: frozenset[str] = frozenset()) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in CLAIM_STOPWORDS and w not in noise}


def _with_same(word_stems: set[str]) -> set[str]:
    return word_stems.union(*(same for same in _SAME_WORDS if same & word_stems))


def _opposite(word_stem: str) -> set[str]:
    for a, b in _OPPOSITES:
        if word_stem in a:
            return b
        if word_stem in b:
            return a
    return set()


@dataclass(frozen=True)
class Premise:
    """What a question takes for granted, as the words of a statement; `form` says which shape
    of question it came from (tag, is-it-true, fronted, why, declarative: "so X?")."""
    claim: str
    form: str
    negated: bool = False  # "why can't I …": not checked (see the module's docstring)
    obliged: bool = False  # "why must X …": the question takes it for granted that X is required


# A second question joined to the premise: "why is X required, and what happens if …"
_JOINED = re.compile(r",?\s+(?:and|or|but|so)\s+(?:what|how|why|when|where|who|which|whom|whose|is|are|do|does|did|"
                     r"can|could|should|will|would)\b.*$", re.IGNORECASE)


def _clean(claim: str) -> str:
    claim = _JOINED.sub("", _LEAD.sub("", claim.strip()))
    return claim.strip(" ,;:-")


def _pieces(question: str, lead: bool = False) -> list[str]:
    """Each ?-terminated piece of a question, its lead ("so", "ok", …) off unless `lead`: "X,
    right? where do I get it" has a tag and a request."""
    text = " ".join((question or "").split())
    return [p.strip() if lead else _LEAD.sub("", p.strip()) for p in re.findall(r"[^?]+\?*", text) if p.strip()]


def presuppositions(question: str) -> list[Premise]:
    """The claims a question takes for granted, in question order; [] for an ordinary question
    ("what does X say about Y?", "does X require Y?", which ask rather than assume)."""
    found: list[Premise] = []
    for piece in _pieces(question, lead=True):
        body = _LEAD.sub("", piece)
        fronted = _FRONTED.match(body)
        if fronted:
            claim = _clean(fronted.group("claim"))
            found.append(Premise(claim, "fronted", bool(NEGATION.search(claim))))
            body = body[fronted.end():].strip()
        for form, pattern in (("is_it_true", _IS_IT_TRUE), ("tag", _TAG), ("why", _WHY)):
            m = pattern.match(body)
            if m:
                claim = _clean(m.group("claim"))
                negated = bool(m.groupdict().get("neg")) or bool(NEGATION.search(claim))
                obliged = (m.groupdict().get("aux") or "").lower() == "must"  # asserted, not in passing
                if len(_WORD.findall(claim)) >= 3:
                    found.append(Premise(claim, form, negated, obliged))
                break
        else:
            m = None if fronted else _SO.match(piece) or _THEN.match(body)
            claim = _clean(m.group("claim")) if m else ""
            if len(_WORD.findall(claim)) >= 4:
                found.append(Premise(claim, "declarative", bool(NEGATION.search(claim))))
    return found


# A yes/no question ("is X mandatory?", "does X require Y?") asks rather than assumes; but when a
# passage says the opposite word ("intended to be voluntary"), its answer is No, and a small reader
# still tends to open with "Yes". Negation is no cue for it: a "not" near two shared words is too
# weak a sign that the answer is No.
_POLAR = re.compile(r"^(?:is|are|were|does|do|did|must|should|has|have|will)\s+(?P<claim>.+?)\s*\?*\s*$",
                    re.IGNORECASE)


def polar_claims(question: str) -> list[Premise]:
    """The claims a question asks yes or no about (form "polar"), one per ?-terminated piece."""
    found = []
    for piece in _pieces(question):
        m = _POLAR.match(piece)
        claim = _clean(m.group("claim")) if m else ""
        if len(_WORD.findall(claim)) >= 3 and not NEGATION.search(claim):
            found.append(Premise(claim, "polar"))
    return found


def claims(question: str) -> list[Premise]:
    """What the check reads: the claims taken for granted, else those asked yes or no about."""
    return presuppositions(question) or polar_claims(question)


@dataclass
class Contradiction:
    """Where the passages say the opposite of a premise: passage `passage` (1-based), the sentence,
    the cue ("not" or "mandatory/voluntary") and the premise's words it shares."""
    premise: Premise
    passage: int
    sentence: str
    cue: str
    shared: list[str] = field(default_factory=list)


# Words that deny their whole clause, what comes before them too: "exact copies were shown to be
# impossible" denies the copies, as "no exact copy can be made" does.
_DENYING = re.compile(r"\b(?:impossible|infeasible|unattainable)\b", re.IGNORECASE)


def _negated_scope(sentence: str) -> list[str]:
    """The stretches of a sentence under a negation: from the negation to the end of its clause,
    or the whole clause around a word that denies it (`_DENYING`)."""
    text = _NOT_NEGATION.sub(" ", sentence)
    scopes = []
    for m in NEGATION.finditer(text):
        rest = text[m.end():]
        end = CLAUSE_END.search(rest)
        scopes.append(rest[:end.start()] if end else rest)
    for m in _DENYING.finditer(text):
        start = max((e.end() for e in CLAUSE_END.finditer(text[:m.start()])), default=0)
        rest = text[m.end():]
        end = CLAUSE_END.search(rest)
        scopes.append(f"{text[start:m.start()]} {rest[:end.start()] if end else rest}")
    return scopes


def denies(question: str, sentence: str) -> bool:
    """The sentence negates, within a clause, a word the question asks about ("there is no agreed
    method …" against "is there an agreed method …"): what makes a "Yes" to the question wrong."""
    asked = stems(question, _QUESTION_NOISE) - DOCUMENT_WORDS
    return any(asked & stems(scope) for scope in _negated_scope(sentence))


def contradiction(premise: Premise, passages: list[Passage], min_shared: int = 2,
                  subject: str = "") -> Contradiction | None:
    """The passage sentence that best contradicts a positive premise, or None.

    A sentence is about the premise when it shares at least `min_shared` of its content words,
    its passage's heading counting too ("the AI RMF is mandatory" against "Be … voluntary" under
    "Attributes of the AI RMF"). It contradicts when it uses an opposite word (mandatory/voluntary)
    or negates, within a clause, a word of the premise that is not the heading's ("does not
    prescribe profile templates"; "JTC 21 has not published any standards": the subject alone
    under a negation, "… should not be used without SP 800-218", says nothing about the claim).
    The best has the most negated words (an opposite word counts two), then the most shared ones.
    `subject`, the document a follow-up's pronoun stood for, is read like a heading: it says what
    the claim is about where a passage's heading holds it, and its words are never what is denied."""
    if premise.negated:
        return None
    claim = stems(premise.claim, _QUESTION_NOISE)
    given = stems(subject)
    if len(claim) < 2:
        return None
    denied = _with_same(claim)  # the words whose denial contradicts the claim
    claimed = (claim | _OBLIGED) if premise.obliged else claim  # with what "why must" claims
    opposites = {o for s in claimed for o in _opposite(s)}
    best: tuple[tuple[int, int], Contradiction] | None = None
    for n, p in enumerate(passages, 1):
        heading = stems(f"{p.doc} {p.title} {p.section}")
        pieces = split_sentences(p.text, "plain")
        for i, sentence in enumerate(pieces):
            words = stems(sentence)
            about = (claim - given) & (words | heading) | given & claim & heading
            if len(about) < min_shared:
                continue
            flipped = sorted(opposites & words)
            under = set().union(*(stems(scope) for scope in _negated_scope(sentence))) \
                if premise.form != "polar" else set()
            negated = under & denied - heading - given - DOCUMENT_WORDS
            if not (flipped or negated):
                continue
            cue = "/".join([next(s for s in sorted(claimed) if _opposite(s) & set(flipped)), flipped[0]]) \
                if flipped else "not"
            rank = (len(negated) + 2 * bool(flipped), len(about))
            if best is None or rank > best[0]:
                best = (rank, Contradiction(premise, n, _with_list_opening(pieces, i), cue, sorted(about)))
    return best[1] if best else None


_OPENS_LIST = re.compile(r":\s*(?:\(?\w{1,2}[.)])?\s*$")  # "… strives to:" or "… strives to: 1."
_NUMBER_ONLY = re.compile(r"^\(?\w{1,2}[.)]$")  # "2.", "(b)": an item's number, split off before it
MAX_ITEMS_BACK = 12


def _with_list_opening(pieces: list[str], i: int, max_words: int = 20) -> str:
    """Piece `i`, after the words that open its list when it is a list's item: "Be risk-based, …
    and voluntary." names nothing alone, and the answer opens with the quote ("The AI RMF strives
    to: 1. Be risk-based, … and voluntary."). A later item is quoted after the opening, the
    items between left out ("The AI RMF strives to: … 2. Be consensus-driven …"), when every
    second piece back to the opening is an item's number alone."""
    sentence = " ".join(pieces[i].split())
    number, k = "", i - 1
    if k > 0 and _NUMBER_ONLY.match(pieces[k].strip()):
        number = pieces[k].strip()
        while k > 0 and i - k <= 2 * MAX_ITEMS_BACK and _NUMBER_ONLY.match(pieces[k].strip()):
            k -= 2  # back over an item and its number: to the item before's number, or the opening
    opening = " ".join(pieces[k].split()) if k >= 0 else ""
    if not opening or not _OPENS_LIST.search(opening) or len(opening.split()) > max_words:
        return sentence
    return f"{opening} {sentence}" if k == i - 1 else f"{_ENUMERATOR.sub('', opening)} … {number} {sentence}"


@dataclass
class PremiseCheck:
    """The premise stage's result, for the answer's lead, the checker and the trace."""
    premises: list[Premise] = field(default_factory=list)
    contradicted: Contradiction | None = None

    @property
    def lead(self) -> str:
        """The answer's opening when a premise is contradicted ('' otherwise): "Not quite." and the
        passage's sentence, quoted and cited, before the reader's text. Written here, not asked of
        the reader: told to open with the correction, the 0.5B reader restated the premise after
        a "No," or declined (docs/decisions.md). A quote of the passage verifies as supported."""
        c = self.contradicted
        return "" if c is None else f"Not quite. \"{quote(c.sentence)}\" [{c.passage}]\n\n"

    def to_dict(self) -> dict:
        c = self.contradicted
        return {"premises": [asdict(p) for p in self.premises],
                "contradicted": None if c is None else {"claim": c.premise.claim, "passage": c.passage,
                                                        "sentence": c.sentence, "cue": c.cue, "shared": c.shared}}


_ENUMERATOR = re.compile(r"(?<=:)\s+(?:\(?\w\)|\d+\.)\s*$")  # "…: 1.": the list's first number, split off with it


_CITED_TAIL = re.compile(r"\s*\[\d")  # "[6] …": a citation mark the split put at a piece's start


def _quotable(text: str) -> list[str]:
    """The passage's sentences for a quote: a piece opening with a citation mark joined back to
    the one before it, which the split ended at a period: a glossary's source after its entry
    ("… to inputs. [1]") or a name misspelt before its mark ("Smith at al. [6] use …"); alone,
    "[6] use …" misquotes, whole it names who did."""
    pieces: list[str] = []
    for piece in split_sentences(text, "plain"):
        if pieces and _CITED_TAIL.match(piece):
            pieces[-1] = f"{pieces[-1]} {piece.strip()}"
        else:
            pieces.append(piece)
    return pieces


def settling(question: str, passages: list[Passage], context: str = "", min_shared: int = 2,
             max_words: int = 80, min_words: int = 5) -> tuple[int, str] | None:
    """The passage sentence a yes/no question turns on: the one whose words shared with it weigh
    most, a word weighing less the more of the passages' sentences hold it (their common topic,
    "sprocket" all through a sprocket manual, tells no sentence apart: counted alike, a short
    heading sharing it and one more word beat the sentence on the question's subject); then the
    higher-ranked passage, which retrieval judged on the whole resolved question (a table's cells
    lose such a tie to prose); then most of `context`'s words (what a follow-up was resolved to:
    "it" is there); then the shorter, which says less beside the point. At least `min_shared`
    words in all. A "sentence" over `max_words` is a table or a run-on chunk, no quote; one under
    `min_words` says nothing on its own, nor does a short one opening a list ("The framework
    strives to:"). Nor is a table's cells (its caption, header and rows run together), which a
    person cannot read as a quote: when they match best, there is none, as a lesser prose
    sentence would be beside the point. As (passage number, 1-based; the sentence), or None:
    what an answer that only said "Yes" is replaced by."""
    asked, around = stems(question, _QUESTION_NOISE), stems(context, _QUESTION_NOISE)
    sentences = [(n, _ENUMERATOR.sub("", s)) for n, p in enumerate(passages, 1) for s in _quotable(p.text)]
    held = [stems(s) for _, s in sentences]
    weight = _rarity(held)
    best: tuple[tuple[float, bool, int, float, int], int, str] | None = None
    for (n, sentence), words in zip(sentences, held):
        size = len(sentence.split())
        if not (2 * min_words if sentence.endswith(":") else min_words) <= size <= max_words \
                or len((asked | around) & words) < min_shared:
            continue
        rank = (weight(asked & words), "|" not in sentence, -n, weight(around & words), -len(words))
        if best is None or rank > best[0]:
            best = (rank, n, " ".join(sentence.split()))
    return (best[1], best[2]) if best and "|" not in best[2] else None


def _rarity(held: list[set[str]]) -> Callable[[set[str]], float]:
    """The weight of a set of word stems among sentences holding `held`: each stem's inverse
    sentence frequency, summed (rounded, so that equal sets tie and the next key decides)."""
    count, total = Counter(w for words in held for w in words), len(held) + 1
    return lambda words: round(sum(math.log(total / (count[w] + 0.5)) for w in words), 6)


def quote(sentence: str, limit: int = 300) -> str:
    text = " ".join(sentence.replace('"', "'").split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


_REFERENT = re.compile(r"^(?:it|they|this|that|these|those|its|their)\b", re.IGNORECASE)


def with_subject(claim: str, subject: str) -> str:
    """The claim with the pronoun it opens with replaced by `subject` ("its" by a possessive), or
    the claim as it is."""
    m = _REFERENT.match(claim)
    if not subject or not m:
        return claim
    return subject + ("'s" if m.group().lower() in ("its", "their") else "") + claim[m.end():]


def check(question: str, passages: list[Passage], subject: str = "") -> PremiseCheck:
    """The question's premises and the first one the passages contradict. `subject` is what a
    follow-up's pronoun stands for ("why is it binding?" after a turn on the AI RMF claims "the
    AI RMF is binding"): "it is binding" alone has one word to meet a passage with, too few to be
    checked."""
    found = [replace(p, claim=with_subject(p.claim, subject)) for p in claims(question)]
    for premise in found:
        hit = contradiction(premise, passages, subject=subject if premise.claim.startswith(subject) else "")
        if hit is not None:
            return PremiseCheck(found, hit)
    return PremiseCheck(found)


def traced(question: str, passages: list[Passage], trace: Trace, subject: str = "") -> PremiseCheck:
    """`check`, timed into the answer's trace as the "premise" stage (what was assumed, what said otherwise)."""
    with trace.timed("premise") as stage:
        result = check(question, passages, subject)
        stage.items.append(result.to_dict())
        if result.contradicted is not None:
            stage.note = f"passage [{result.contradicted.passage}] contradicts the question's premise"
    return result


_CORRECTS = re.compile(r"^\W*(?:no\b|not\b|nope\b|actually\b|in fact\b|contrary\b|that is not|that's not|"
                       r"this is not|it is not|it's not|incorrect\b|false\b)", re.IGNORECASE)
# An opening that agrees with the question: a confirmed premise here, a bare "Yes" in verify.py
# (whose check also counts these words as the question's own).
AGREEING_WORDS = ("yes", "yeah", "correct", "right", "indeed", "true", "exactly", "absolutely")
CONFIRMS = re.compile(rf"^\W*(?:(?:{'|'.join(AGREEING_WORDS)})\b|that'?s (?:right|correct|true))", re.IGNORECASE)


def reader_part(answer: str, premise: PremiseCheck) -> str:
    """The answer without the premise's lead: what the reader wrote."""
    lead = premise.lead.rstrip()
    return answer[len(lead):].lstrip() if lead and answer.startswith(lead) else answer


def opening(answer: str, contradicted: Contradiction) -> str:
    """How an answer's first sentence meets a contradicted premise: "corrects" (opens with No, or
    negates or flips the premise's words), "confirms" (opens with Yes, or restates the premise
    with its polarity: half its content words, no negation, no opposite word), else "neither"."""
    sentences = split_sentences(answer or "")
    if not sentences:
        return "neither"
    first = sentences[0]
    if CONFIRMS.match(first):
        return "confirms"
    if _CORRECTS.match(first):
        return "corrects"
    claim = stems(contradicted.premise.claim, _QUESTION_NOISE)
    words = stems(first)
    flipped = {o for s in claim for o in _opposite(s)} & words
    if flipped or any(claim & stems(scope) for scope in _negated_scope(first)):
        return "corrects"
    if claim and len(claim & words) >= max(2, (len(claim) + 1) // 2) and not NEGATION.search(first):
        return "confirms"
    return "neither"


AGREES_WITH_PREMISE = "agrees with what the question assumes, which the sentence quoted first contradicts"


def opening_verdict(answer: str, premise: PremiseCheck) -> Verdict | None:
    """An unsupported verdict on the reader's first sentence (after the lead) when it confirms a
    premise the passages contradict; None otherwise. What follows such an opening builds on the
    premise (reasons it holds, what happens when it is broken), so the answer keeps the lead alone
    (the pipeline's PREMISE_RETRY)."""
    c = premise.contradicted
    answer = reader_part(answer, premise)
    if c is None or opening(answer, c) != "confirms":
        return None
    first = split_sentences(answer)[0]
    return Verdict(first, False, None, AGREES_WITH_PREMISE)
