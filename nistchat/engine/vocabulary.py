"""The engine's one vocabulary: the function words each stage leaves out, and the framework
identifiers it keeps whole. Every list is here, so a change to one is seen beside the others.

Why several lists and not one: each leaves out what its own measure found to be noise, and each
was measured on dev as it stands (docs/decisions.md): BM25 drops words that only match everywhere;
a follow-up is judged by the topic words left once pronouns and conversation words are gone; a
claim's words are matched against a passage; the passage trimmer keeps sentences holding the
question's words; key terms of an expected answer are its long, specific words. They share one
core of function words.
"""
from __future__ import annotations

import re


# Framework identifiers as people write them: "GOVERN 1.2", "PW.1.1", "MP-5.1-005".
FUNCTION_ID = re.compile(r"\b(GOVERN|MAP|MEASURE|MANAGE)\s*-?\s*(\d+(?:\.\d+)*)\b", re.IGNORECASE)
DOTTED_ID = re.compile(r"\b[A-Z]{2}\.\d+(?:\.\d+)*(?:\.R\d+)?\b", re.IGNORECASE)
ACTION_ID = re.compile(r"\b[A-Z]{2}-\d+(?:\.\d+)*-\d{3}\b", re.IGNORECASE)
FRAMEWORK_IDS = (FUNCTION_ID, ACTION_ID, DOTTED_ID)  # in the order overlapping matches are resolved

# The functions' identifiers as BM25 joins them into one token ("govern_1.2"), two-letter forms too.
FUNCTION_ID_TOKEN = re.compile(r"\b(govern|map|measure|manage|gv|mp|ms|mg)\s+(\d+(?:\.\d+)*)\b", re.I)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words no list counts (articles, auxiliaries, question words, pronouns).
FUNCTION_WORDS = _words("""
a an and are be did do does for how in is it its of on or that the their there they this to what
which why with
""")

# BM25's index and queries (index/sparse.py).
BM25_STOPWORDS = FUNCTION_WORDS | _words("""
all also any as at been being but by can could each from had has have i if into may must no nor not
our should so such than them then these those was we were when where while who whom will would you
your
""")

# Acronyms every document of the corpus uses (all are NIST's, on AI, most for the US): in a turn they
# name nothing of its own, so "which sprockets does NIST list under that heading?" still leans on
# the conversation (retrieval/followup.py, where a turn leans).
CORPUS_ACRONYMS = frozenset({"AI", "AIs", "NIST", "US", "USA"})

# Not a topic word of a follow-up (retrieval/query.py): conversation words too.
FOLLOW_UP_STOPWORDS = FUNCTION_WORDS | _words("""
about also any but can could else first last me more next one ones other please same say second
should so some tell them then these third those was were when where who would
""")

# Not a content word of a claim matched to a passage (verification/verify.py).
CLAIM_STOPWORDS = FUNCTION_WORDS | _words("""
about all also any as at been being by can could each from into may might more most no not only
other over shall should some such than them then these those under was were when where who will
would
""")

# Not a question word the passage trimmer keeps sentences for (retrieval/expand.py).
TRIM_STOPWORDS = FUNCTION_WORDS | _words("""
about as at by from nist s
""")

# Long words that are no key term of an expected answer (evaluation/answers.py; words under four
# letters are never key terms).
KEY_TERM_STOPWORDS = _words("""
about above after again against also among because been before being below between both can could
does doing down during each from further have having here into itself just may more most must only
other over same should some such than that their them then there these they this those through under
until used uses using very were what when where which while whom will with would your
""")
