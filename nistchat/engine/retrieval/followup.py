"""Follow-ups: a standalone question for every turn, resolved against what was said before.

People follow up ("and for MAP?", "what does the third one mean?", "is the GAI Profile's the
same?", "briefer please"). Searched on its own words such a turn finds nothing or the wrong
thing, so each turn is resolved here, by rules measured on the conversation set's dev split
(docs/decisions.md, "Follow-ups resolved"), into a `Resolution`: the question searched for, why,
and the documents the search is limited to. What a turn can lean on is the conversation: earlier
questions (each resolved in turn, so a chain of ellipses keeps its topic), the previous answer
(its list items) and the passages that answer was given (its sources, carried in the history).

- An item reference ("the 2nd one", "the last one") is replaced by that item of the previous
  answer's list, or of its passages' list when the answer only counted the items; so is "the
  gadget one", naming the one item of such a list that holds its words.
- A choice among the items ("which of them is mandatory?") is searched with their names.
- Scope carries over: a turn that names no document keeps the documents the turn it leans on was
  limited to; a turn naming another document switches to it, unless it compares ("the same?",
  "too?"), which keeps both and retrieves from each; a correction ("no, I meant …") replaces the
  scope; a new standalone question (or "new q: …") drops it.
- A turn that acts on the previous answer ("briefer", "in a table", "in one line", "auf
  deutsch") starts no new search: it is answered from the previous answer's passages.
- A turn opening with "and" / "what about" with words enough of its own is searched on them, in
  the documents the conversation was about; "the monitoring one" names a document when "one"
  stands for a noun of the question before ("… which report …").

Plain history messages ({"role", "content"}) still work; an assistant message may also carry
`sources` (the passages it was given, as the chat stores them: id, doc, title, section, page,
kind, text, cited) and `refused`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..text import CITATION_MARK, FRAMEWORK_IDS, neutralise, without_source_line
from ..types import Passage, Resolution
from ..vocabulary import CORPUS_ACRONYMS
from .query import (ASKS_FOR_MORE, FOLLOW_UP_MAX_CONTENT_WORDS, _PRONOUN, _content_words, identifiers, is_follow_up,
                    normalise, word_set)
from .translate import ASKED_LANGUAGE, asked_language, typed_language

# Openings that drop everything before: "new q:", "different question -", "unrelated:", "diff topic:".
_NEW_TOPIC = re.compile(
    r"^\s*(?:(?:new|different|diff|another|other|separate|unrelated)\s+(?:q|qn|question|topic|thing)\b|unrelated\b|"
    r"(?:switching|changing)\s+(?:the\s+)?topics?\b|on\s+another\s+note\b)[\s:,;.!?-]*", re.IGNORECASE)
# A correction of the turn before: "no i meant …", "sorry, i meant …", "actually i meant …", "not X, Y".
_CORRECTION = re.compile(
    r"^\s*(?:(?:no|nope|sorry|oops|wait|actually|err?|hmm)\b[\s,.!-]*)*(?:i\s+meant|i\s+mean|i\s+was\s+asking\s+about|"
    r"make\s+that)\b[\s:,-]*|^\s*(?:no|nope|sorry|actually)\b[\s,.!-]+(?=(?:the|for|about|in)\b)", re.IGNORECASE)
# A turn comparing with what was said: both documents stay in scope.
_COMPARE = re.compile(r"\b(same|similar|differ\w*|compare\w*|comparison|both|too|as well|also|agree\w*|vs\.?|versus|"
                      r"likewise|contrast)\b", re.IGNORECASE)
# Requests for a briefer answer, in English and the corpus' likely other languages.
_BRIEF_WORDS = (r"shorter|short|briefer|brief|(?:one|1|a single|a) (?:sentence|line)|one[- ]liner|tl;?dr|"
                r"summari[sz]e|summary|kurz\w*|zusammenfass\w*|zusammen|r[eé]sum[eé]\w*|resumen|res[uú]m\w*|"
                r"m[aá]s corto|plus court|(?:una|une) (?:frase|phrase)|(?:einem|einen) satz")
# Requests that act on the previous answer, in English and the corpus' likely other languages.
_ACT = re.compile(
    rf"\b({_BRIEF_WORDS}|(?:one|1|a single|a) (?:paragraph|word)|"
    r"(?:\d|two|three|four|five) (?:bullets?|points?|sentences?|lines?)|"
    r"simpler|simplify|in plain (?:english|words|language)|plainer|"
    r"as a (?:table|list|bullet(?:ed)? list|bullets)|in(?:to)? a (?:table|list|bullet(?:ed)? list)|(?:as|in) bullets?|"
    r"bullet points?|table form(?:at)?|tabular|rephrase|reword|explain (?:it |that )?(?:simply|like)|"
    r"for (?:my|the|our|your|a) (?:manager|boss|team|exec\w*|director|ciso)(?: (?:mtg|meeting))?|"
    r"(?:para|pour|für) (?:mi|mis|mon|ma|mes|notre|nuestro|nuestra|mein|meine|meinen|meinem|unser|unsere|unseren|"
    r"el|la|le|das|den) (?:jef[ea]|equipo|chef\w*|[ée]quipe|team|direct\w*|gerente|manager)|"
    r"in (?:spanish|german|french|english)|translate\w*|auf deutsch|auf englisch|en fran[cç]ais|en espa[nñ]ol|"
    r"en ingl[eé]s|en anglais|tabelle|tableau|tabla)\b", re.IGNORECASE)
# Words that may surround such a request without making it a new question.
_ACT_FILLER = {
    "say", "put", "make", "give", "write", "do", "redo", "turn", "show", "can", "could", "u", "you", "pls", "plz",
    "please", "thanks", "thx", "ok", "okay", "now", "just", "again", "that", "this", "it", "those", "them", "these",
    "me", "my", "us", "for", "in", "as", "a", "an", "the", "and", "into", "of", "version", "more", "bit", "little",
    "way", "form", "mtg", "meeting", "email", "slide", "kannst", "du", "das", "es", "bitte", "sagen", "mir", "noch",
    "mal", "machen", "le", "la", "les", "ça", "ca", "svp", "stp", "peux", "tu", "dire", "faire", "por", "favor",
    "eso", "lo", "decir", "puedes", "hacer", "en", "auf", "please?", "so", "then", "also", "same", "one", "per",
    "each", "doc", "docs", "document", "als", "sous", "forme", "de", "hazlo", "fasse", "fass", "mach",
}
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5,
             "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "7th": 7, "eighth": 8, "8th": 8, "ninth": 9, "9th": 9,
             "tenth": 10, "10th": 10, "last": -1, "final": -1}
# "the 2nd one", "the last item", "the third," / "the 4th?": an ordinal that stands for an item (not
# "the first step", which names a thing of its own).
# Or a number after a word for a place in a list: "number 3", "no. 3", "item 3", "#3".
_ITEM_REF = re.compile(r"\b(?:the\s+)?(?:(?P<ordinal>" + "|".join(_ORDINALS) + r")"
                       r"(?:\s+(?:one|item|point|entry|bullet)s?\b|(?=\s*(?:[,;:.!?]|$)))|"
                       r"(?:number|no\.|item|point|entry|bullet)\s*(?P<number>\d{1,2})\b)|"
                       r"(?<!\w)#\s?(?P<hash>\d{1,2})\b", re.IGNORECASE)
# "the sprocket audit one": an item of the previous answer's list named by its words, not its place.
_NAMED_ITEM = re.compile(r"\bthe\s+(?P<name>[^\W\d_][\w&/'-]*(?:\s+[\w&/'-]+){0,4}?)\s+one\b", re.IGNORECASE)
# "what does it say about gadgets?": what a turn names after "about", at its end.
_ABOUT_TOPIC = re.compile(r"\babout\s+(?P<topic>[^?!.]+?)\s*[?!.]*$", re.IGNORECASE)
# A choice among what the previous answer listed: "which of these applies to us?", "which one of them …".
_CHOICE = re.compile(r"\b(?:which|what|who)(?:\s+one)?\s+of\s+(?:those|them|these|the\s+above)\b", re.IGNORECASE)
# Words that open a turn without meaning anything ("right, and for MAP?", "thanks, and for MAP?").
_FILLER_START = re.compile(r"^\s*(?:(?:ok(?:ay)?|right|great|cool|thanks|thank you|thx|got it|i see|hmm+|alright|"
                           r"perfect|nice)\b[\s,.!-]*)+", re.IGNORECASE)
# An ellipsis: the turn swaps one thing of the question it leans on ("and for MAP?", "how about GV-1.2-001?").
_ELLIPSIS = re.compile(r"^(?:and|or|what about|how about|and what about|and for|same for|now for|also)\b",
                       re.IGNORECASE)
# The same openings' words (and an article), all of them stripped: what the ellipsis itself names ("and for X?" -> X).
_ELLIPSIS_OPENING = re.compile(r"^(?:(?:and|or|what|how|about|for|same|now|also|the|with)\b\s*)+", re.IGNORECASE)
# A turn whose subject is a pronoun: "so it requires …", "since they list …", "why is it …", "it's …".
# However many topic words it has, its subject is what the conversation was about; a pronoun
# that stands for nothing ("is it true that …", "it's possible to …") does not count.
_AUX = r"(?:is|are|was|were|does|do|did|can|could|will|would|should|has|have)"
# Words that open a question of their own, not a name: "and what does it say about …?".
_CLAUSE = re.compile(rf"^(?:{_AUX}|what|which|who|how|why|when|where)\b", re.IGNORECASE)
# What follows a pronoun that stands for nothing: "it's true …", "is it possible …".
_STANDS_FOR_NOTHING = (r"(?!'?s?\s+(?:true|possible|ok|okay|worth|the case|necessary|important|fine|enough|likely|"
                       r"unclear|clear)\b)")
_PRONOUN_SUBJECT = re.compile(
    r"^(?:(?:so|and|but|since|because|now|then)\b[\s,]*)*(?:(?:why|how|when|where)\s+)?"
    rf"(?:{_AUX}\s+)?(?:it|they|this|that|these|those|its|their)\b{_STANDS_FOR_NOTHING}", re.IGNORECASE)
# What a turn says that points back at what the conversation was about, wherever it stands in the
# turn: "it" or "they" as the subject ("which audits would it suggest for sprockets", "the gadget
# it cites"), "it" as the turn's last word ("so calibrating stops it, right"), "in it", "under this
# heading", "those gadgets", "that way", and "there" at the end ("whats sprocket drift there", "how
# many were there?"). A pronoun after an "and" or a comma inside the turn may stand for a noun of
# the turn itself ("what is a sprocket, and why is it used"): that does not count; neither does "is
# it true that …".
_ASKS_OF_IT = (r"^(?:and\s+)?(?:(?!\band\b)[^,;])*?\b(?:it\s+(?!is\b|was\b|has\b)[a-z]+s\b|"
               rf"{_AUX}\s+(?:it|they)\b{_STANDS_FOR_NOTHING}|"
               r"it\s*(?:,\s*(?:right|correct|then|too)\s*)?[?.!]*$)")
_POINTS_BACK = (r"\b(?:in|inside|within|from|of|under)\s+(?:it|them|there|that one|this one)\b|"
                r"\b(?:in|inside|within|from|of|under|per|about|by)\s+(?:that|this)\s+[a-z]|"
                r"\b(?:those|these)\b|\bthat\s+way\b|\bthere\s*[?.!]*$")
_ANAPHOR = re.compile(f"{_ASKS_OF_IT}|{_POINTS_BACK}", re.IGNORECASE)
# A turn typed in Spanish, German or French reaches these rules as typed only when no translation
# came (the reader busy, the deadline passed: translate.py), and the English patterns above see
# nothing in it. What marks it as leaning on the conversation then is its own language's "and"
# at the start, or a word of it pointing back ("ese engranaje", "darüber", "que dit-il"). Words
# in a phrase that points at nothing do not count: German "gibt es" ("is there"), French "qu'est-ce
# que" ("what is"), "il y a" / "y a-t-il" ("there is"), "il faut" ("one must").
_LEANS_IN = {
    "Spanish": re.compile(r"^\W*(?:y|e|pero|entonces|también)\b|\b(?:ello|ellos|ellas|eso|esa|ese|esas|esos|"
                          r"dicho|dicha|dichos|dichas)\b", re.IGNORECASE),
    "German": re.compile(r"^\W*(?:und|aber|also|dann)\b|(?<!gibt\s)\bes\b|\b(?:dies|diese|dieser|dieses|diesem|"
                         r"diesen|dafür|dazu|davon|darin|darüber|damit|dabei|daran|dort)\b", re.IGNORECASE),
    "French": re.compile(r"^\W*(?:et|mais|alors|donc)\b|\b(?:cela|ça|cet|cette|ces|elle|ils|elles)\b|"
                         r"(?<!est-)\bce\s+(?!que\b|qui\b|dont\b)\w|(?<!a-t-)(?<!faut-)\bil\b(?!\s+(?:y\s+a|faut)\b)",
                         re.IGNORECASE),
}
# Such a turn may name what it asks in this many words of its own and still need the document
# discussed (the conversation set's dev splits: up to seven).
ANAPHOR_MAX_CONTENT_WORDS = 8
# What the reader is asked for an ellipsis with no name to swap ("and the sprocket kind?"):
# asked the turn as typed, a small reader restated the earlier answer; asked this, it answered
# from the passage on the turn's own words (docs/decisions.md, "A follow-up reads the section it
# names first").
ELLIPSIS_ASK = "What do the passages say {about}, in the context of: {frame}?"
# An ellipsis naming a place of its own ("and in the MAP function?") is asked what is said there,
# not "about in the MAP function".
_PLACE = re.compile(r"^(?:in|under|within|inside|during|across|at|on|per)\b", re.IGNORECASE)
# What the reader is asked for a turn that acts on the previous answer: that answer itself, to
# rewrite. Told "rewrite your previous answer to \"<question>\"", a small reader rewrote the question
# in 3 of 11 dev and dev2 turns (docs/decisions.md, "… the answer itself to rewrite").
REWRITE_ASK = "Rewrite this answer as asked ({request}):\n\n{answer}"
# A rewrite asked to be brief, of an answer long enough to need it, is asked for one sentence of at
# most BRIEF_WORDS words: given a list of 250 words and the plain ask, the 1.5B reader copied it
# whole for "in one sentence" and for "shorter"; told a count of words, a paragraph, or two
# sentences, it copied it still; told one sentence of 30 words, it summarised (docs/decisions.md,
# "A new user's walk again"). A short answer is left to the plain ask, which shortened it.
BRIEF_ASK = "Summarise this answer in one sentence of at most {words} words, as asked ({request}):\n\n{answer}"
BRIEF_WORDS = 30
_BRIEF = re.compile(rf"\b(?:{_BRIEF_WORDS})\b", re.IGNORECASE)
MAX_CHOICES = 12  # a longer "list" is more likely prose split at its commas
_CITATION = re.compile(r"\s*" + CITATION_MARK)
# A prose sentence's words before its list: an opening that names nothing ("However, …", "In
# short, …"), or a part that opens the list ("…, such as A, B and C").
_DISCOURSE = re.compile(
    r"^\s*(?:however|additionally|also|furthermore|moreover|therefore|thus|overall|specifically|notably|similarly|"
    r"finally|instead|in (?:summary|short|addition|particular|general|practice|brief)|for (?:example|instance)|"
    r"as a result|first(?:ly)?|second(?:ly)?|third(?:ly)?|lastly|together|according to [^,]{1,60})\s*,\s*",
    re.IGNORECASE)
# The verb a prose list follows ("The risks are A, B and C", "It describes A, B and C").
_LEAD_VERB = re.compile(r"\b(?:are|include|includes|including|is|were|has|have|describes?|lists|names|covers|"
                        r"identifies|outlines|mentions|highlights|recommends|provides|son|sind|sont)\b\s*")
_QUALIFIES = re.compile(r"\s+(?:that|which|who|whose|que|die|qui)\s")
_LIST_OPENS = re.compile(r"^\s*(?:such as|including|like|namely|e\.g\.,?|i\.e\.,?)\s+", re.IGNORECASE)
# The word before a list's last item, in the languages a question may be asked in.
_AND = r"(?:and/or|and|or|y|o|und|oder|et|ou)"
LIST_LINE = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+(.+)$")


@dataclass(frozen=True)
class _Turn:
    """One earlier exchange: the user's text, the assistant's answer and the passages it was given."""
    question: str
    answer: str = ""
    refused: bool = False
    sources: tuple[Passage, ...] = ()

    @property
    def answered(self) -> bool:
        return bool(self.answer.strip()) and not self.refused


def _passage(n: int, source: dict, parents: dict | None) -> Passage | None:
    """A stored source back as a Passage (its stored text, else its parent's in the index)."""
    pid = str(source.get("id") or "")
    parent = (parents or {}).get(pid)
    text = str(source.get("text") or (parent.text if parent is not None else ""))
    if not pid or not text:
        return None
    return Passage(rank=n, id=pid, doc=str(source.get("doc") or (parent.doc if parent else "")),
                   title=str(source.get("title") or (parent.title if parent else "")),
                   section=str(source.get("section") or (parent.section if parent else "")),
                   kind=source.get("kind") or (parent.kind if parent else "prose"),
                   page=source.get("page", parent.page if parent else None), text=text,
                   score=float(source.get("score") or 0.0))


def asks_brief(request: str) -> bool:
    """Whether a turn acting on the previous answer asks for it shorter ("briefer", "in one line")."""
    return bool(_BRIEF.search(request))


def rewrite_ask(request: str, last: _Turn) -> str:
    """The ask for a turn that acts on the previous answer, the request neutralised as all typed
    text is. The answer keeps its `[n]` marks when its passages come back numbered as it cited
    them (the rewrite is given those same passages), so the rewrite can cite them too; else they
    are neutralised, as in the conversation window. A request for brevity, of a long answer, asks
    for one sentence (BRIEF_ASK)."""
    numbered = [p.rank for p in last.sources] == list(range(1, len(last.sources) + 1))
    answer = without_source_line(last.answer).strip()
    shown = answer if numbered else neutralise(answer)
    if len(answer.split()) > 2 * BRIEF_WORDS and asks_brief(request):
        return BRIEF_ASK.format(words=BRIEF_WORDS, request=neutralise(request), answer=shown)
    return REWRITE_ASK.format(request=neutralise(request), answer=shown)


def turns_of(history: list[dict] | None, current: str, parents: dict | None = None) -> list[_Turn]:
    """The history's exchanges, oldest first. A history that already ends with this question
    (some callers pass it) has that last user message dropped."""
    turns: list[_Turn] = []
    for msg in history or []:
        role, content = msg.get("role"), str(msg.get("content") or "")
        if role == "user":
            turns.append(_Turn(normalise(content)))
        elif role == "assistant" and turns:
            sources = [p for p in (_passage(i, s, parents) for i, s in enumerate(msg.get("sources") or [], 1)
                                   if isinstance(s, dict)) if p is not None]
            last = turns[-1]
            turns[-1] = _Turn(last.question, content, bool(msg.get("refused")), tuple(sources))
    if turns and turns[-1].question == current and not turns[-1].answer:
        turns.pop()
    return [t for t in turns if t.question]


def item_name(line: str) -> str:
    """A list line's item less its explanation ("Data Privacy: leakage of personal data …", or the
    sentences after its first: "Scientifically sound standards. Standards are most likely …")."""
    name = re.split(r"\s*(?::|\s[-–—]\s)\s*", line, maxsplit=1)[0]
    return re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", name, maxsplit=1)[0].strip(" .*")


def _lines_listed(answer: str) -> bool:
    """Whether the answer lists items line by line (numbered or bulleted)."""
    return sum(bool(LIST_LINE.match(line)) for line in (answer or "").splitlines()) >= 2


def answer_items(answer: str) -> list[str]:
    """The items of a list answer: numbered or bulleted lines, else the longest run of
    semicolon- or comma-separated parts (after a "Six:" / "… are" lead-in)."""
    text = _CITATION.sub("", answer or "")
    lines = [m.group(1).strip() for m in map(LIST_LINE.match, text.splitlines()) if m]
    if len(lines) >= 2:
        return [item_name(line) for line in lines]
    best: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        body = _DISCOURSE.sub("", sentence.split(":", 1)[1] if ":" in sentence[:60] else sentence)
        lead = _LEAD_VERB.search(body)
        if lead and lead.start() < min((body.find(c) for c in ",;" if c in body), default=-1):
            body = body[lead.end():]  # "… are A, B and C"; an "are" after the list qualifies it
        parts = [p for p in re.split(r";\s*", body) if p.strip()]
        commas = len(parts) < 2
        if commas:
            parts = re.split(r",\s*", body)
        opens = [i for i, p in enumerate(parts) if i and _LIST_OPENS.match(p)]
        if opens:  # "…, such as A, B and C": the list is what follows
            parts = [_LIST_OPENS.sub("", parts[opens[0]], count=1), *parts[opens[0] + 1:]]
        if len(parts) >= 2:
            tail = re.split(rf"\s+{_AND}\s+", parts[-1], maxsplit=1)
            opens_joined = bool(re.match(rf"{_AND}\s", parts[-1]))
            if commas and len(tail) == 1 and not opens_joined and (
                    len(parts) == 2 or all(len(p.split()) == 1 for p in parts[1:-1]) and len(parts[-1].split()) > 1):
                continue  # "Yes, it does …", "aims for clear, specific, achievable goals": commas, no list
            if len(tail) == 2 and not opens_joined:
                parts = parts[:-1] + tail
        items = _parallel([re.sub(rf"^{_AND}\s+|\s+{_AND}$", "", p.strip(" .")).strip() for p in parts])
        items = [i for i in items if i]
        if len(items) >= 2 and len(items) > len(best):
            best = items
    return best


def _parallel(items: list[str]) -> list[str]:
    """A prose list's first and last items cut to the length of those between them: the sentence's
    subject and verb lead into the first ("The plan adds practices, tasks, …"), a clause qualifying
    the whole list trails the last ("…, and notes that are specific to …")."""
    if len(items) < 3:
        return items
    size = max(len(i.split()) for i in items[1:-1])
    first, last = items[0].split(), items[-1]
    if len(first) > size + 2:
        first = first[-size:]
    if len(last.split()) > size + 2:
        last = _QUALIFIES.split(last, maxsplit=1)[0]
    return [" ".join(first), *items[1:-1], last]


def passage_items(text: str) -> list[str]:
    """The first list of a passage: a run of bulleted or numbered lines (its top level; deeper
    lines belong to an item), or a table's rows (their first cell). What "the third one" means when
    the answer it follows named the list's length and not its items ("it names five kinds")."""
    return passage_list(text)[0]


def passage_list(text: str) -> tuple[list[str], str]:
    """`passage_items`, with the line that leads into the list ("… four sets of outcomes:")."""
    run: list[str] = []
    indent, lead = 0, ""
    for line in (text or "").splitlines():
        bullet = LIST_LINE.match(line)
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        depth = len(line) - len(line.lstrip())
        if bullet:
            if not run:
                indent = depth
            if depth <= indent:
                run.append(item_name(bullet.group(1).strip()))
        elif cells and not all(set(c) <= set("-: ") for c in cells):
            run.append(item_name(cells[0]))
        elif cells:  # a table's rule: the header above it is no item
            run = run[:-1]
        elif line.strip():
            if len(run) >= 2:
                return run, lead
            run, lead = [], line.strip()
    return (run, lead) if len(run) >= 2 else ([], "")


def _items_of(turn: _Turn, n: int, topic: str) -> tuple[list[str], str]:
    """The list an ordinal points into: the answer's, else (the answer had none, or a shorter one)
    the list in the passages it was given that is long enough and says most what `topic` (the
    question it answered) asked for: first by the words its heading and lead-in line share with
    it, the document's title left out ("what outcomes …" picks the list led by "… four sets of
    outcomes:" over another list of the same document), then by how many of its items share a
    word with it ("which attack types" picks a list of "… attacks" over a figure's list of themes
    beside it); with where it came from ('' for the answer). A list sharing no word with it but
    the document's name is none: "number 4" of an answer in prose became the 4th of a list of
    the framework's aims."""
    items = answer_items(turn.answer)
    if items and n <= len(items):
        return items, ""
    asked = word_set(topic)
    best, where, most = [], "", (0, 0)
    for passage in turn.sources:
        listed, lead = passage_list(passage.text)
        if len(listed) < n:
            continue
        own = asked - word_set(passage.title)  # the document's own name is every passage's
        says = (len(own & word_set(f"{passage.section} {lead}")), sum(bool(own & word_set(item)) for item in listed))
        if says > most:
            best, where, most = listed, passage.id, says
    return best, where


def compare_ask(text: str, base: str, docs: tuple[str, ...], catalog) -> str:
    """What the reader is asked for a comparison: each document's own answer in turn. Asked the turn
    alone ("and the other document, same?"), a small reader answers "Yes" with nothing behind it;
    each document's passages are in its context (the comparison retrieves from each)."""
    if len(docs) < 2:
        return ""
    names = [catalog.display.get(d, d) if catalog else d for d in docs]
    return (f'{text} (the earlier question: "{base}")\nAnswer for each document in turn, from its own passages: '
            f'{", then ".join(names)}. Say they agree only where the passages of both say so.')


def _comparison(base: str, text: str, docs: tuple[str, ...], why: str, answered: bool, catalog) -> Resolution:
    return Resolution(f"{_topic(base, catalog, 'it')} {text}", why, "comparison", docs, compare=len(docs) > 1,
                      leans_on_answered=answered, ask=compare_ask(text, base, docs, catalog), compared=(base, text))


def _compared_again(previous: Resolution, meant: str, named: list[str], answered: bool, catalog) -> Resolution:
    """A correction naming a document after a comparison ("does the AI RMF say the same?", "no, I
    meant the GenAI profile"): the same comparison, the document meant in place of the one that
    turn named, the documents it was compared with kept."""
    base, typed = previous.compared
    earlier = [d for d in previous.scope if d not in catalog.named(typed)]
    docs = tuple(dict.fromkeys((*earlier, *named)))
    again = catalog.without_names(typed, meant)
    return _comparison(base, again, docs, "follow-up, a correction of a comparison: the document it names in "
                       "place of the one compared", answered, catalog)


def _topic(question: str, catalog, instead: str = "") -> str:
    """A resolved question less the documents it names: what a comparison asks of another document."""
    return catalog.without_names(question, instead) if catalog else question


# Names of one kind, so that "and for MAP?" after a GOVERN question swaps GOVERN out: the AI RMF's
# functions, and each shape of framework identifier (GOVERN 1.2, GV-1.3-002, PW.1.1).
_SWAPPABLE = (re.compile(r"\b(?:govern|map|measure|manage)\b(?![\s-]*\d)", re.IGNORECASE), *FRAMEWORK_IDS)


def _swap(frame: str, turn: str) -> str:
    """The frame with its name of the turn's kind replaced by the turn's ("what does GOVERN do" +
    "and for MAP?" -> "what does MAP do"); '' when the turn names none, or the frame has none."""
    for kind in _SWAPPABLE:
        new, old = kind.search(turn), kind.search(frame)
        if new and old:
            return f"{frame[:old.start()]}{new.group(0)}{frame[old.end():]}"
    return ""


# A correction's own question, after the name it meant: what opens a `_CLAUSE`, after a comma or dash.
_ASKED_AFTER = re.compile(rf"[,;:-]\s*(?P<asked>{_CLAUSE.pattern.lstrip('^')}.*)$", re.IGNORECASE)


def _asked_of_meant(rest: str) -> str:
    """A correction's own question after the name it meant ("PW.1.2 not 1.1, what's in that
    one?" -> "what's in that one?"); '' when it only names ("make that PW.1.2 instead")."""
    m = _ASKED_AFTER.search(rest)
    return m.group("asked").strip() if m else ""


def _meant_root(before: list[_Turn], rest: str) -> str:
    """The latest earlier question, as typed and standing on its own, that named what a
    correction replaces, with the name meant in its place ('' when none did). A correction that
    asks a question of its own asks it of the name meant: swapped into a whole chain of
    follow-ups, it was searched with the last turn's question ("who should do that"), which it
    no longer asks, and declined."""
    for turn in reversed(before):
        swapped = _swap(turn.question, rest)
        if swapped and not is_follow_up(turn.question):
            return swapped
    return ""


def _position(ref: re.Match) -> int:
    """The place in a list an `_ITEM_REF` points at (-1: the last)."""
    return _ORDINALS[ref["ordinal"].lower()] if ref["ordinal"] else int(ref["number"] or ref["hash"])


def _swap_slot(previous: Resolution, turn: str) -> str:
    """After a drill-down ("the third one, how is it measured?"), "and for privacy?" asks the
    same of another item: the turn's words, to take the place of the item the previous turn
    picked (`_in_place`); '' when the previous turn picked no item, or the turn's words are a
    question of their own ("and what does it say about …?"), no item."""
    words = _named_by_ellipsis(turn)
    if not previous.slot or previous.slot not in previous.frame or not words or _CLAUSE.match(words):
        return ""
    return words


def _parts(text: str) -> set[str]:
    """`word_set` with compounds split: an item "gadget-ready" is named by "gadgets"."""
    return word_set(re.sub(r"[-/]", " ", text))


def _sibling(drill: Resolution, bare: str) -> str:
    """The item of the list a drill-down picked from that the turn names after "about" instead of
    the one picked ("what does it say about gadgets?" after "the 3rd one", the list's 5th item
    being "Gadget-ready"): the one item sharing a word with what the turn asks about, else ''
    (the turn asks more of the item picked, or names no item of that list). Searched with the
    drill-down's item and question, such a turn found the section on the item it left."""
    about = _ABOUT_TOPIC.search(bare)
    if not about:
        return ""
    wanted = _parts(about.group("topic"))
    named = [item for item in drill.items if item != drill.slot and wanted & _parts(item)]
    return named[0] if wanted and len(named) == 1 else ""


def _item_named(items: list[str], name: str) -> str:
    """The one item holding every word of `name` ("the audit one" -> "Sprocket audits"), else ''."""
    wanted = _parts(name)
    named = [item for item in items if wanted and wanted <= _parts(item)]
    return named[0] if len(named) == 1 else ""


def _picked(text: str, ref: re.Match, picked: str, items: list[str], base: str, why: str, scope: tuple[str, ...],
            answered: bool, names_document: bool = False) -> Resolution:
    """A turn pointing at one item of a list ("the 2nd one", "the gadget one"), searched with the
    item in place of its pointer and the question the list answered (unless the turn names a
    document of its own), and asked with the item in place: asked about "the second one", a small
    reader answers "the second one is about …", even about a list it wrote itself."""
    rest = _with_item(text, ref, picked)
    question = rest if names_document else f"{rest} ({base})"
    return Resolution(question, why, "item", scope, leans_on_answered=answered, frame=question, slot=picked, ask=rest,
                      focus=picked, items=tuple(items))


def _named_in(turn: _Turn, name: str) -> tuple[list[str], str]:
    """The list holding the item `name` names, and that item: the answer's list, else (as for an
    ordinal: the answer may only have counted the items, "six categories") the first list of a
    passage it was given; ([], '') when none holds it."""
    for items in (answer_items(turn.answer), *(passage_items(p.text) for p in turn.sources)):
        picked = _item_named(items, name)
        if picked:
            return items, picked
    return [], ""


def _with_item(text: str, ref: re.Match, item: str) -> str:
    """`text` with the item in place of the ordinal `ref` matched ("the 2nd one, how" -> "Gadgets, how")."""
    return re.sub(r"\s+([,;:.!?])", r"\1", re.sub(r"\s+", " ", f"{text[:ref.start()]} {item} {text[ref.end():]}")).strip()


def _drilled(previous: Resolution) -> Resolution | None:
    """The drill-down `previous` is, or the one it still speaks of; None when neither."""
    return previous if previous.items and previous.slot and previous.slot in previous.frame else previous.drilled


def _in_place(previous: Resolution, item: str, why: str, scope: tuple[str, ...], answered: bool,
              kind: str = "item") -> Resolution:
    """The drill-down `previous` asked again of another `item` (of its list, or an ellipsis's words)."""
    question = previous.frame.replace(previous.slot, item, 1)
    ask = previous.ask.replace(previous.slot, item, 1) if previous.slot in previous.ask else ""
    return Resolution(question, why, kind, scope, leans_on_answered=answered, frame=question, slot=item, ask=ask,
                      focus=item, items=previous.items)


def _strip(pattern: re.Pattern, text: str) -> str:
    return pattern.sub("", text, count=1).strip(" ,:;-")


def _bare(text: str) -> str:
    """`text` without the filler it opens with ("ok", "thanks,", "hmm"): what the turn asks."""
    return _strip(_FILLER_START, text) or text


def _named_by_ellipsis(bare: str) -> str:
    """What an ellipsis names of its own: "and for sprocket audits?" -> "sprocket audits"."""
    return _ELLIPSIS_OPENING.sub("", bare).strip(" ?.!,")


def _ellipsis_focus(bare: str) -> str:
    """What an ellipsis asks about (`ELLIPSIS_ASK`'s topic): its words less the opening ("and for
    sprocket audits?" -> "sprocket audits"); for one asking a clause of its own ("and what does it
    say about X?"), the X it asks about, else nothing, and the turn is asked as typed. Put whole into
    the ask, such a clause read "What do the passages say about does it say about X", and the small
    reader said that back."""
    named = _named_by_ellipsis(bare)
    if not _CLAUSE.match(named):
        return named
    about = _ABOUT_TOPIC.search(bare)
    return about.group("topic").strip() if about else ""


def _ellipsis_ask(focus: str, frame: str) -> str:
    """`ELLIPSIS_ASK` for `focus`, said of the question it leans on."""
    return ELLIPSIS_ASK.format(about=focus if _PLACE.match(focus) else f"about {focus}", frame=frame.rstrip(" ?"))


def _unasked(text: str) -> str:
    """`text` without its request for a language, nor the "please" and colon around it."""
    for rx in ASKED_LANGUAGE.values():
        text = rx.sub(" ", text)
    text = re.sub(r"^[\s,:;-]*(?:(?:please|pls|plz|svp|s'il te plaît|bitte|por favor)\b[\s,:;-]*)*", "", text)
    return " ".join(text.split()).strip(" ,;:-")


def goes_on(text: str) -> bool:
    """Whether `text` opens like an ellipsis ("and sprockets??", "what about gadgets?") and names
    something of its own, or asks for more of what was said ("give me an example", "go on"):
    after an answer it goes on with the conversation, whatever else its
    words resemble (a small-talk classifier took one such turn, two words and its question
    marks, for a question about the assistant)."""
    bare = _bare(normalise(text))
    return bool(_ELLIPSIS.match(bare)) and bool(_content_words(_named_by_ellipsis(bare))) or bool(
        ASKS_FOR_MORE.match(bare))


def _leans_as_typed(text: str) -> bool:
    """Whether `text`, left in Spanish, German or French, opens with that language's "and" or
    points back with one of its words (`_LEANS_IN`)."""
    language = typed_language(text)
    return bool(language) and bool(_LEANS_IN[language].search(text))


def _acts_on_previous(text: str) -> bool:
    """"briefer please", "in a table", "two lines for the board", "auf deutsch": the
    request names how to say the previous answer and nothing new to look up."""
    if not _ACT.search(text):
        return False
    rest = _ACT.sub(" ", text)
    words = [w for w in re.findall(r"[^\W\d_]+|\d+", rest.lower()) if w not in _ACT_FILLER]
    return len(words) <= 1


def _named(text: str, previous: Resolution | None, catalog) -> list[str]:
    """The documents a turn names; "the monitoring one" after a question about a report is the
    monitoring report: "one" stands for a noun of the question it follows, tried in its place."""
    if not catalog:
        return []
    named = catalog.named(text)
    one = re.search(r"\b(?:the|that)\s+((?:[\w.-]+\s+){1,3})(one)\b", text, re.IGNORECASE)
    if named or not one or previous is None or set(one.group(1).lower().split()) & _ORDINALS.keys():
        return named  # "the 2nd one" points into a list, never at a document
    words = (w.lower() for w in _content_words(previous.question))
    for noun in dict.fromkeys(form for w in words for form in (w, w[:-1] if w.endswith("s") else w)):
        named = catalog.named(f"{text[:one.start(2)]}{noun}{text[one.end(2):]}")
        if named:
            return named
    return []


def _scope(turn_docs: list[str], previous: Resolution | None) -> tuple[str, ...]:
    return tuple(turn_docs) if turn_docs else (previous.scope if previous else ())


def resolve(question: str, history: list[dict] | None = None, catalog=None, parents: dict | None = None) -> Resolution:
    """The standalone question for `question` given the conversation before it. `catalog` (the
    index's document names) finds the documents a turn names; `parents` rebuilds stored sources
    that carry no text."""
    text = normalise(question)
    turns = turns_of(history, text, parents)
    resolved: list[Resolution] = []
    for i, turn in enumerate(turns):  # each earlier turn resolved against those before it
        resolved.append(_resolve_one(turn.question, turns[:i], resolved, catalog))
    return _resolve_one(text, turns, resolved, catalog)


# A request that points at many things ("put those in a table") after a drill-down into one item of
# a list: the list is what it acts on, not the one item's answer.
_MANY = re.compile(r"\b(?:those|these|them|all|each|every|the list|ell[oa]s|diese|sie alle|ceux|celles|tous)\b",
                   re.IGNORECASE)


def _rewritten(text: str, before: list[_Turn], resolved: list[Resolution]) -> tuple[_Turn, Resolution]:
    """The turn a request acting on the previous answer rewrites, and how that turn was understood:
    the previous one, or the list before a drill-down when the request points at many."""
    previous = resolved[-1]
    if _MANY.search(text) and previous.kind == "item" and len(before) >= 2 and before[-2].answered \
            and before[-2].sources:
        return before[-2], resolved[-2]
    return before[-1], previous


def _resolve_one(text: str, before: list[_Turn], resolved: list[Resolution], catalog) -> Resolution:
    previous = resolved[-1] if resolved else None
    named = _named(text, previous, catalog)
    bare = _bare(text)  # "ok, new question: …": the filler before a new topic's marker
    new_topic = _NEW_TOPIC.match(bare)
    if new_topic:
        rest = bare[new_topic.end():].strip()
        return Resolution(rest or text, "a new topic: earlier turns and their documents dropped", "new_topic",
                          tuple(named))
    if not before or previous is None:
        return Resolution(text, "standalone", scope=tuple(named))
    last = before[-1]
    answered = last.answered
    base = previous.question

    if _acts_on_previous(text) and last.sources:
        # a small reader asked "briefer please" alone answers "Please": it is given what to rewrite
        target, understood = _rewritten(text, before, resolved)
        answered = target.answered
        ask = rewrite_ask(text, target) if answered else ""
        why = "the list before the drill-down" if target is not last else "the previous answer"
        return Resolution(understood.question, f"follow-up acting on {why}: answered from its passages, no new "
                          "search", "acts_on_previous", understood.scope, leans_on_answered=answered,
                          reuse=target.sources, ask=ask, drilled=_drilled(understood), compared=understood.compared,
                          rewritten=target.answer)

    correction = _CORRECTION.match(text)
    if correction:
        rest = text[correction.end():].strip() or text
        if named:  # "no, I meant the monitoring report, …": that document replaces the scope
            own = _content_words(_topic(rest, catalog))
            if previous.compared and len(own) <= 1:  # after a comparison, the one compared stays
                return _compared_again(previous, rest, named, answered, catalog)
            query = rest if len(own) > 1 else f"{_topic(base, catalog, 'it')} {rest}"
            return Resolution(query, "follow-up, a correction: the document it names replaces the scope",
                              "correction", tuple(named), leans_on_answered=answered)
        swapped = _swap(base, rest)
        if swapped:  # "no, I meant PW.1.2": searched for the one meant, not for both
            asked = _asked_of_meant(rest)
            root = _meant_root(before, rest) if asked else ""
            if root:  # "i meant PW.1.2, what's in that one": the question that named the wrong one
                query = f"{root} {asked}" if len(_content_words(asked)) > 1 else root
                return Resolution(query, "follow-up, a correction asking of the name it meant: the question that "
                                  "named the wrong one, with the one meant in its place", "correction",
                                  previous.scope, leans_on_answered=answered)
            return Resolution(swapped, "follow-up, a correction: its name in place of the previous question's",
                              "correction", previous.scope, leans_on_answered=answered)
        return Resolution(f"{base} {rest}", "follow-up, a correction of the previous question", "correction",
                          previous.scope, leans_on_answered=answered)

    item = _ITEM_REF.search(text)
    if item:
        n = _position(item)
        drill = _drilled(previous)
        if drill and len(drill.items) >= max(n, 1) and not _lines_listed(last.answer):
            # "and the 4th one?" after a drill-down (or a turn still speaking of it: a rewrite, a
            # question leaning on it) whose answer lists nothing line by line: the list it picked
            # from, before the commas of its prose ("… autonomy, identity, and dignity") or a list
            # in its passages; asked like that drill-down, or as typed when the turn asks something
            # of its own ("and the 4th one, who signs it off?")
            picked = drill.items[n - 1] if n > 0 else drill.items[-1]
            again = _in_place(drill, picked, f"follow-up, item {n if n > 0 else 'last'} of the list the drill-down "
                                             f"picked from: {picked!r}", _scope(named, previous), answered)
            own = _content_words(_named_by_ellipsis(_bare(f"{text[:item.start()]} {text[item.end():]}")))
            if not own:
                return again
            asked = _with_item(text, item, picked)
            return replace(again, question=f"{asked} ({again.question})", ask=asked)
        items, passage = _items_of(last, max(n, 1), base)
        if items:
            picked = items[n - 1] if n > 0 else items[-1]
            where = f"the list in the previous answer's passage {passage}" if passage else "the previous answer's list"
            return _picked(text, item, picked, items, base, f"follow-up, item {n if n > 0 else 'last'} of {where}: "
                           f"{picked!r}", _scope(named, previous), answered, bool(named))

    ref = _NAMED_ITEM.search(text) if answered and not named else None
    items, picked = _named_in(last, ref["name"]) if ref else ([], "")
    if picked:
        return _picked(text, ref, picked, items, base, f"follow-up, the item of the previous answer's list it "
                       f"names: {picked!r}", _scope(named, previous), answered)

    choice = _CHOICE.search(text)
    items = answer_items(last.answer) if choice and answered else []
    if 2 <= len(items) <= MAX_CHOICES:  # searched with the items' names, which the turn only points at
        rest = f"{text[:choice.start()]}which of {', '.join(items)}{text[choice.end():]}"
        return Resolution(f"{rest} ({base})", "follow-up, a choice among the items of the previous answer's list",
                          "follow_up", _scope(named, previous), leans_on_answered=answered)

    # "in German please: who signs it off?": asking for the answer's language speaks to the
    # conversation, so a short question with it leans on what was said
    unasked = _unasked(bare) if asked_language(bare) else None
    asked_back = unasked is not None and len(_content_words(unasked)) <= FOLLOW_UP_MAX_CONTENT_WORDS
    if asked_back:
        bare = unasked or bare
    drill = _drilled(previous)
    sibling = _sibling(drill, bare) if drill else ""
    if sibling:  # asked like the drill-down it follows, with the item it names in place of the one picked
        return _in_place(drill, sibling, f"follow-up, another item of the list the drill-down picked from: "
                                         f"{sibling!r}", _scope(named, previous), answered)
    continues = bool(_ELLIPSIS.match(bare))  # opens with "and" / "what about"
    ids = identifiers(bare)
    ellipsis = continues and (len(_content_words(bare)) <= FOLLOW_UP_MAX_CONTENT_WORDS or bool(ids))
    own = _topic(bare, catalog) if named else bare  # the words naming a document are no topic of its own
    own_words = len(_content_words(own))
    # an acronym every document shares ("NIST", "AI") names nothing of the turn's own, but only a
    # pronoun as its subject or words pointing back make such a turn lean: "does NIST say that …"
    # has a "that" and asks something new
    leans = ellipsis or asked_back or is_follow_up(bare) or _leans_as_typed(bare) or set(ids) <= CORPUS_ACRONYMS and bool(
        _PRONOUN_SUBJECT.match(bare) or _PRONOUN.search(own) and own_words <= 4 and not ids
        or _ANAPHOR.search(own) and own_words <= ANAPHOR_MAX_CONTENT_WORDS)
    if named and set(named) != set(previous.scope) and (leans or _COMPARE.search(text)):
        if _COMPARE.search(text) and previous.scope:  # "is the GAI Profile's the same?": both documents
            docs = tuple(dict.fromkeys((*previous.scope, *named)))
            return _comparison(base, text, docs, "follow-up, a comparison: the documents of both turns searched, "
                               "each on its own", answered, catalog)
        # "and the SSDF one?" after "what about the GenAI profile?": the question both asked of a document
        switched = previous.frame if previous.kind == "comparison" and not previous.compare else ""
        asked = switched or _topic(base, catalog, "it")
        only_names = not _content_words(_topic(_named_by_ellipsis(bare), catalog))
        return Resolution(f"{asked} {text}", "follow-up, the previous question asked of the document this turn "
                          "names", "comparison", tuple(named), leans_on_answered=answered,
                          frame=asked if only_names else "")
    if ellipsis:
        frame = previous.frame or base
        focus = _ellipsis_focus(bare)
        swapped = _swap(frame, bare)
        if swapped:  # a whole question again, asked as such: told "and MAP?", a small reader restates GOVERN
            return Resolution(swapped, "follow-up, an ellipsis: its name swapped into the question it leans on",
                              "follow_up", _scope(named, previous), leans_on_answered=answered, frame=frame,
                              ask=swapped, focus=focus)
        slot = _swap_slot(previous, bare)
        if slot:  # asked like the drill-down it follows: the item swapped in what the reader was asked
            return _in_place(previous, slot, "follow-up, an ellipsis: its words in place of the item the question it "
                             "leans on picked", _scope(named, previous), answered, kind="follow_up")
        return Resolution(f"{frame} {bare}", "follow-up, an ellipsis: the question it leans on searched with it",
                          "follow_up", _scope(named, previous), leans_on_answered=answered, frame=frame,
                          focus=focus, ask=_ellipsis_ask(focus, frame) if focus else "")
    if leans:
        scope = _scope(named, previous)
        subject = catalog.display.get(scope[0], scope[0]) if catalog and len(scope) == 1 and not named else ""
        return Resolution(f"{base} {bare}", "follow-up: the previous question (as resolved) searched with it",
                          "follow_up", scope, leans_on_answered=answered, subject=subject, drilled=drill)
    if continues and previous.scope and not named:
        # "and which defences against poisoning do the authors describe": too many words of its own
        # to lean on the question before, but "and …" continues the conversation: its documents stay
        return Resolution(bare, "follow-up opening with 'and' / 'what about': its own words searched, in the "
                          "documents the conversation was about", "follow_up", previous.scope,
                          leans_on_answered=answered)
    return Resolution(text, "standalone", scope=tuple(named))
