"""The answer's event contract: one list of error kinds that every producer uses, and a wire form
that is the one docs/api.md documents."""
from __future__ import annotations

import re

from nistchat.engine import (ERROR_KINDS, EVENT_TYPES, Answer, Checked, Error, Failure, Final, Prefill, Queue, Retry,
                             Source, Sources, Token, Verdict)
from nistchat.engine.types import Passage
from tests.conftest import REPO

# Failure("kind", …), _error("kind", …), _failed(outcome, "kind", …): every place an error event is made
PRODUCERS = re.compile(r"""(?:Failure|_error|_failed)\((?:outcome,\s*)?["']([a-z_]+)["']""")


def test_every_error_an_answer_can_end_with_is_one_of_the_listed_kinds():
    found = {}
    for path in (REPO / "nistchat").rglob("*.py"):
        for kind in PRODUCERS.findall(path.read_text(encoding="utf-8")):
            found.setdefault(kind, path.relative_to(REPO))
    assert {"bad_input", "index_missing", "internal", "interrupted", "timeout"} <= set(found)  # the scan sees them
    assert {k: str(p) for k, p in found.items() if k not in ERROR_KINDS} == {}


def test_the_kind_scan_would_catch_an_unlisted_kind():
    assert PRODUCERS.findall('yield _error("exploded", "boom")\nFailure("nope", "x")') == ["exploded", "nope"]


def test_each_event_serialises_with_its_type_first():
    passage = Passage(1, "p1", "D", "Title", "Sec", "prose", None, "Text.", 0.5)
    answer = Answer("Text [1].", question="q", risk="LOW", sources=[Source(1, "p1", "D", "Title", "Sec", None, "prose",
                                                                          0.5, True, text="Text.")])
    events = [Sources([passage], "LOW"), Queue(0), Prefill(120, 1, 60.0, None), Token("Te", 1),
              Checked(Verdict("Text [1].", True, 1), 1), Retry("1 of 1 sentences were not supported", 2),
              Final(answer), Error(Failure("timeout", "too slow", "Te"))]
    wire = [e.to_dict() for e in events]
    assert [w["type"] for w in wire] == list(EVENT_TYPES) and all(next(iter(w)) == "type" for w in wire)
    assert wire[0]["passages"][0]["n"] == 1 and wire[4] == {"type": "verdict", "text": "Text [1].", "supported": True,
                                                             "passage": 1, "attempt": 1}
    assert wire[6]["answer"] == "Text [1]." and wire[6]["sources"][0]["text"] == "Text."
    assert wire[7] == {"type": "error", "kind": "timeout", "message": "too slow", "partial": "Te", "incomplete": True}


def test_the_final_events_fields_are_the_documented_ones():
    doc = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| `final`"))
    documented = set(re.findall(r"`([a-z_]+)`", row.split("|")[2]))
    wire = Answer("x", gate={}, chosen_attempt=1, direct=True, small_talk="greeting").to_dict()
    assert set(wire) <= documented, set(wire) - documented
