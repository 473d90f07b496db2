"""Repair words that PDF-to-text conversion glued together or split apart.

Why: "onpostdeployment" or "techn ical" match nothing in BM25, embed as noise and look broken in
the sources users read. The repair is general, not a list of known damage: it acts only when an
English dictionary and the document's own usage both say the result is a word and the input was
not. Precision over recall -- a real word broken costs more than a broken word left alone:

- join "techn ical": one part is a fragment (no dictionary word, not used alone in the document,
  or a lone letter) and the joined word is a dictionary word or one the document uses;
- split "onpostdeployment": a non-dictionary token that is a function word plus a word the
  document uses much more often;
- split "trainingdata": two content words, only with the document's own evidence -- it writes
  the pair apart, both halves are common words in it, or the converter keeps gluing onto the
  second one. Closed compounds ("cyberattacks", "metadata", "workflow") lack that evidence.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

# Closed-class words the converter glues onto the next word ("onpostdeployment", "tomitigate").
# Productive prefixes that are also words (under, over, per, out, up) are left out on purpose:
# "underexplored" and "performant" are words, not glue.
FUNCTION_WORDS = frozenset("""
    a an the and or nor but of to on in into onto for from about between through throughout how what
    which who whom whose when where why is are was were be been being with within without regarding
    after before at by as that this these those its their our your his her such than then upon via
    across against among during both each either any all some most can may should would could will
    must not
""".split())

# English prefixes that form closed compounds ("cyberattacks", "multistakeholder",
# "hyperparameters"): such a word is written whole on purpose, whatever the dictionary lacks.
COMPOUNDING_PREFIXES = frozenset("""
    anti auto counter cross cyber down extra hyper inter intra macro mega meta micro mini multi
    over post pseudo self semi super trans ultra under
""".split())

MIN_SPLIT_TOKEN = 6  # shorter tokens are rarely glued and too often real
MIN_PART = 4  # each content part of a split, and the rest after a function word
FREQUENT = 3  # the rest after a function word must be a word the document uses this often
MAX_GLUED = 2  # a glued form is an accident; one used more often is likely a word of its own
GLUE_PRONE = 3  # a word found glued after this many different function words attracts glue
MIN_JOINED = 2  # "o r" -> "or"; a two-letter result must be a word the document uses

TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")  # "don't" is one token, not "don" + "t"
PAIR = re.compile(r"(?<![A-Za-z])([A-Za-z]+)([ -])(?=([A-Za-z]+))")
CHUNK = re.compile(r"\S+")
NOT_PROSE = re.compile(r"[/@\\=_]|www\.|\.[a-z]{2,4}\b")  # URLs, paths, e-mails, identifiers
SPLIT_CANDIDATE = re.compile(rf"(?<![\w'’.])[A-Za-z]{{{MIN_SPLIT_TOKEN},}}(?![\w'’]|\.\w)")
# The right part sits in a lookahead so overlapping pairs ("the techn ical") are all seen.
JOIN_CANDIDATE = re.compile(r"(?<![\w'’@/\\.])([A-Za-z]+)(?= ([a-z]+)(?![\w'’@/\\-]|\.\w))")


@lru_cache(maxsize=1)
def _dictionary() -> dict[str, int]:
    """English word -> frequency, loaded once on first use; stray letters ("t", "g") are not words."""
    from spellchecker import SpellChecker

    words = SpellChecker(language="en").word_frequency.dictionary
    return {w: n for w, n in words.items() if w.isalpha() and (len(w) > 1 or w in ("a", "i"))}


def is_dictionary_word(word: str) -> bool:
    return word.lower() in _dictionary()


def english_frequency(word: str) -> int:
    return _dictionary().get(word.lower(), 0)


def _plain_case(token: str) -> bool:
    """lowercase or Capitalised; inner capitals (OpenAI, DeepMind) or all caps mark a name."""
    return token.islower() or (token[:1].isupper() and token[1:].islower())


def _word_counts(texts: Iterable[str]) -> tuple[Counter[str], Counter[str]]:
    """Case-insensitive counts of words and of adjacent pairs ("training data", "risk-based")."""
    words: Counter[str] = Counter()
    pairs: Counter[str] = Counter()
    for text in texts:
        words.update(re.sub(r"['’]s$", "", t.lower()) for t in TOKEN.findall(text))
        pairs.update(f"{m[1]}{m[2]}{m[3]}".lower() for m in PAIR.finditer(text))
    return words, pairs


@dataclass(frozen=True)
class WordRepair:
    """Split and join rules bound to one document's own word usage."""
    words: Counter[str]
    pairs: Counter[str]

    @classmethod
    def for_texts(cls, texts: Iterable[str]) -> "WordRepair":
        return cls(*_word_counts(texts))

    def count(self, word: str) -> int:
        return self.words[word.lower()]

    def is_stray(self, part: str) -> bool:
        """A fragment: not a dictionary word, and a lone letter or not used on its own elsewhere.

        A lone letter recurs as debris ("t here", "no t") however often it occurs.
        """
        return not is_dictionary_word(part) and (len(part) == 1 or self.count(part) < 2)

    # -- glued words
    def split(self, token: str) -> str | None:
        """'onpostdeployment' -> 'on postdeployment'; None when the token should stay whole."""
        if not _plain_case(token) or is_dictionary_word(token):
            return None
        return self._after_function_word(token) or self._between_content_words(token)

    def _after_function_word(self, token: str) -> str | None:
        """A function word glued to a word the document uses much more often than the glued form."""
        options = []
        for cut in range(1, len(token) - MIN_PART + 1):
            head, rest = token[:cut], token[cut:]
            if head.lower() in FUNCTION_WORDS and rest.islower() and self._rest_outweighs(rest, token):
                options.append((self.count(rest), cut))
        if not options:
            return None
        cut = max(options)[1]
        return self._joined_as_written(token[:cut], token[cut:])

    def _rest_outweighs(self, rest: str, token: str) -> bool:
        glued = self.count(token)
        return self.count(rest) >= max(FREQUENT, 2 * glued if glued > MAX_GLUED else 0)

    def _between_content_words(self, token: str) -> str | None:
        """Two content words, split only when the document itself says they are two."""
        glued = self.count(token)
        if not token.islower() or glued > MAX_GLUED:
            return None
        options = []
        for cut in range(MIN_PART, len(token) - MIN_PART + 1):
            left, right = token[:cut], token[cut:]
            if left in COMPOUNDING_PREFIXES:
                continue
            apart = self.written_apart(left, right)
            if apart > glued or (apart and glued == 1):
                options.append((2, apart, cut))
            elif glued == 1 and self.both_common_words(left, right):
                options.append((1, 0, cut))
            elif is_dictionary_word(left) and self.glue_prone(right):
                options.append((0, 0, cut))
        if not options:
            return None
        cut = max(options)[-1]
        return self._joined_as_written(token[:cut], token[cut:])

    def written_apart(self, left: str, right: str) -> int:
        """How often the document writes the pair as two words ("training data", "context-specific")."""
        return self.pairs[f"{left} {right}"] + self.pairs[f"{left}-{right}"]

    def both_common_words(self, left: str, right: str) -> bool:
        """Both halves are dictionary words the document uses on their own ("domain", "specific")."""
        return all(is_dictionary_word(part) and self.count(part) >= FREQUENT for part in (left, right))

    def glue_prone(self, word: str) -> bool:
        """The converter repeatedly lost the space before this word ("inpostdeployment", "topostdeployment")."""
        if self.count(word) < FREQUENT:
            return False
        heads = sum(1 for head in FUNCTION_WORDS if self.count(head + word))
        return heads >= GLUE_PRONE

    def _joined_as_written(self, left: str, right: str) -> str:
        """Hyphen when the document hyphenates this pair at least as often as it spaces it."""
        key = f"{left}{{}}{right}".lower()
        hyphened, spaced = self.pairs[key.format("-")], self.pairs[key.format(" ")]
        return f"{left}{'-' if hyphened and hyphened >= spaced else ' '}{right}"

    # -- split words
    def join(self, left: str, right: str) -> str | None:
        """'techn', 'ical' -> 'technical'; None when the two tokens are words of their own."""
        if len(left) > 1 and not _plain_case(left):
            return None
        joined = left + right
        if len(joined) < MIN_JOINED or not (self.is_stray(left) or self.is_stray(right)):
            return None
        if (len(joined) >= 4 and is_dictionary_word(joined)) or self.count(joined) >= 2:
            return joined
        return None

    # -- text
    def fix(self, text: str) -> str:
        """Join split words first (so their halves are never split again), then split glued ones."""
        return CHUNK.sub(lambda m: self._split_chunk(m[0]), self._join_all(text))

    def _split_chunk(self, chunk: str) -> str:
        if NOT_PROSE.search(chunk) or any(ch.isdigit() for ch in chunk):
            return chunk
        return SPLIT_CANDIDATE.sub(lambda m: self.split(m[0]) or m[0], chunk)

    def _join_all(self, text: str) -> str:
        matches = list(JOIN_CANDIDATE.finditer(text))
        joins = [self.join(m[1], m[2]) for m in matches]
        pieces, pos = [], 0
        for i, (m, joined) in enumerate(zip(matches, joins)):
            if not joined or m.start() < pos:  # overlaps a pair just joined ("E uropean U nion")
                continue
            if self._next_join_wins(matches, joins, i):
                continue
            pieces += [text[pos:m.start()], joined]
            pos = m.end(2)
        return "".join(pieces) + text[pos:]

    def _next_join_wins(self, matches: list[re.Match], joins: list[str | None], i: int) -> bool:
        """'for t heir': the letter starts 'their' rather than ending 'fort' -- the commoner word wins."""
        if i + 1 >= len(matches) or matches[i + 1].start() != matches[i].start(2) or not joins[i + 1]:
            return False
        return self._commonness(joins[i + 1]) > self._commonness(joins[i])

    def _commonness(self, word: str) -> tuple[int, int]:
        return self.count(word), english_frequency(word)
