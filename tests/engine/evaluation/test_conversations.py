"""The conversation evaluation: each turn is retrieved with the history the chat would pass (earlier
questions, expected answers as the assistant's text, with their passages) and scored like the retrieval evaluation; and
`nistchat eval conversations` on the real session runtime, stored as a run."""
import json
import re

from click.testing import CliRunner

from nistchat.cli import main
from nistchat.engine.evaluation.conversation_answers import key_term_share
from nistchat.engine.evaluation.conversations import Conversation, Turn, format_table, run_conversations
from nistchat.engine.types import Passage, Retrieval, Trace

from tests.conftest import SHORT_ANSWERS


def turn(question, kind, evidence, answer="ans"):
    return Turn(question, kind, "D", evidence, ["x"], answer)


CONVS = [
    Conversation("c1", [turn("q1", "first", ["alpha beta"], "answer one"),
                        turn("q2", "ellipsis", ["gamma"], "answer two"),
                        turn("q3", "drill_down", ["delta"])]),
    Conversation("c2", [turn("q4", "other_language", ["alpha beta"]), turn("q5", "pronoun", ["zeta"])]),
]
TEXTS = {"q1": ["x Alpha  **beta** y"], "q2": ["gamma"], "q3": ["nothing"], "q4": ["alpha", "beta"], "q5": ["zeta"]}


class Scripted:
    def __init__(self):
        self.histories = {}

    def retrieve(self, question, *, k=6, history=None):
        self.histories[question] = history
        passages = [Passage(i, f"p{i}", "D", "T", "S", "prose", None, t, 1.0)
                    for i, t in enumerate(TEXTS[question][:k], start=1)]
        return Retrieval(question, passages, Trace(), {"total": 5.0})


def test_history_is_earlier_questions_with_expected_answers_and_their_passages():
    r = Scripted()
    run_conversations(r, CONVS)
    assert r.histories["q1"] == [] and r.histories["q4"] == []
    assert [(m["role"], m["content"]) for m in r.histories["q3"]] == [
        ("user", "q1"), ("assistant", "answer one"), ("user", "q2"), ("assistant", "answer two")]
    # each answer carries the passages retrieved for its turn, as the chat stores them
    assert [s["text"] for s in r.histories["q3"][1]["sources"]] == TEXTS["q1"]
    assert [s["id"] for s in r.histories["q3"][3]["sources"]] == ["p1"] and not r.histories["q3"][3]["sources"][0]["cited"]


def test_a_runs_passages_keep_what_a_replay_gives_back_as_sources():
    """A stored run is replayed offline with its passages as each turn's sources: a rewrite is
    answered from them by id and number, so the run keeps both, not only the text."""
    first = run_conversations(Scripted(), CONVS).turns[0]
    assert first.passages == [{"id": "p1", "rank": 1, "doc": "D", "section": "S", "text": TEXTS["q1"][0]}]


def test_first_turns_against_follow_ups_and_per_kind():
    rep = run_conversations(Scripted(), CONVS, gate=lambda r: r.question == "q5")  # the gate refuses q5
    s = rep.summary()
    # q4 opens its conversation in another language and its evidence is split across passages: a miss
    assert s["groups"]["first turns"] == {"n": 2, "hits": 1, "hit": 0.5, "refused": 0, "gate_refused": 0, "failed": 0}
    assert s["groups"]["follow-up turns"] == {"n": 3, "hits": 2, "hit": 0.6667, "refused": 1, "gate_refused": 1,
                                              "failed": 0}
    assert s["kinds"]["other_language"]["hits"] == 0 and s["kinds"]["drill_down"]["hits"] == 0
    assert "correction" not in s["kinds"] and s["conversations"] == 2
    assert [m.id for m in rep.misses()] == ["c1.3", "c2.1"]
    table = format_table({"dev": rep, "test": rep})
    assert "follow-up turns evidence-hit@6" in table and "2/3 (0.67)" in table and "c1.3 [drill_down] q3" in table
    assert re.search(r"follow-up turns refused by the gate\s+1\s+1", table)


def test_an_answer_in_the_questions_language_may_hold_its_key_terms_in_that_language():
    assert key_term_share(["widget", "blue gear"], "Das Widget hat ein blaues Zahnrad.") == 0.5
    assert key_term_share(["widget", "blue gear"], "Das Widget hat ein blaues Zahnrad.",
                          ["widget", "blaue zahnrad|blaues zahnrad"]) == 1.0
    assert key_term_share(["widget", "blue gear"], "Ein Zahnrad.", ["widget", "blaues zahnrad"]) == 0.0


def test_eval_conversations_command_stores_a_run(runtime, tmp_path):
    f = tmp_path / "convs.jsonl"
    f.write_text(json.dumps({"id": "c900", "turns": [
        {"question": "what does TEVV stand for", "kind": "first", "doc": "NIST.AI.100-1",
         "evidence": ["test, evaluation, verification, and validation"], "key_terms": ["tevv"],
         "answer": "TEVV is test, evaluation, verification, and validation."},
        {"question": "and who does it in the lifecycle?", "kind": "pronoun", "doc": "NIST.AI.100-1",
         "evidence": ["Test, Evaluation, Verification, and Validation"], "key_terms": ["tevv"], "answer": "AI actors."},
    ]}), encoding="utf-8")
    out = CliRunner().invoke(main, ["eval", "conversations", "--set", str(f), "--json"], obj=runtime)
    assert out.exit_code == 0, out.output
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    assert rep["summaries"]["convs"]["groups"]["first turns"]["n"] == 1
    assert rep["summaries"]["convs"]["groups"]["follow-up turns"]["n"] == 1
    assert rep["summaries"]["convs"]["groups"]["follow-up turns"]["refused"] == 0  # the gate ran on each turn
    runs = CliRunner().invoke(main, ["eval", "runs", "--json", "--last", "1"], obj=runtime)
    stored = json.loads(runs.stdout.strip().splitlines()[-1])
    assert stored["id"] == rep["run"] and stored["kind"] == "conversations" and stored["sets"] == "convs"
    assert stored["metrics"]["sets"]["convs"]["n"] == 2
    bad = CliRunner().invoke(main, ["eval", "conversations", "--set", "nope"], obj=runtime)
    assert bad.exit_code != 0 and "No conversation set 'nope'" in bad.output


def test_every_evidence_string_sits_in_one_passage_of_the_index(index):
    """A turn whose evidence no passage holds could never hit: its misses would be the set's fault."""
    from nistchat.engine.evaluation.conversations import SET_FILES, load_conversations
    from nistchat.engine.evaluation.retrieval import match_norm
    from tests.engine.evaluation.test_test_set import EVAL_DIR

    hays = [match_norm(p.text) for p in index.parents.values()]
    unreachable = [f"{c.id}.{i}: {e!r}" for f in SET_FILES.values() for c in load_conversations(EVAL_DIR / f)
                   for i, t in enumerate(c.turns, 1) for e in t.evidence
                   if not any(match_norm(e) in h for h in hays)]
    assert not unreachable, "\n".join(unreachable)


def test_an_answered_turns_refusal_says_whose_it_was():
    """The issue's target is about the gate: a reader that declines after reading the passages is
    counted as refused, not as refused by the gate."""
    from nistchat.engine.evaluation.conversations import GATE, ConversationReport, TurnResult

    rows = [TurnResult("c1", i, "pronoun", f"q{i}", False, ["e"], "", [], 1.0, None, refused, why, answer="a",
                       key_terms=0.0)
            for i, (refused, why) in enumerate([(False, ""), (True, GATE), (True, "reader_declined"), (True, "unsupported")])]
    groups = ConversationReport(6, rows).summary()["groups"]
    assert groups["follow-up turns"]["refused"] == 3 and groups["follow-up turns"]["gate_refused"] == 1
    table = format_table({"dev": ConversationReport(6, rows)})
    assert [line.split()[-1] for line in table.splitlines() if "of them by the gate" in line] == ["0", "1"]
    misses = [line.strip() for line in table.splitlines() if line.startswith("  c1.")]
    assert misses == ["c1.1 [pronoun] q0", "c1.2 [pronoun] q1  (refused by the gate)",
                      "c1.3 [pronoun] q2  (refused: reader_declined)", "c1.4 [pronoun] q3  (refused: unsupported)"]


def test_answers_on_a_conversation_lean_on_the_real_earlier_answer(runtime):
    from nistchat.engine.evaluation import run_conversation_answers

    class Spy:  # the real runtime, with the history each answer was given written down
        def __init__(self, inner):
            self.inner, self.queue, self.histories = inner, inner.queue, []

        def answer(self, question, history, **kw):
            self.histories.append(history)
            return self.inner.answer(question, history, **kw)

    conv = Conversation("c901", [
        Turn("what does TEVV stand for", "first", "NIST.AI.100-1", ["test, evaluation, verification, and validation"],
             ["verification", "validation"], "TEVV is test, evaluation, verification, and validation."),
        Turn("and who does it in the lifecycle?", "pronoun", "NIST.AI.100-1",
             ["Test, Evaluation, Verification, and Validation"], ["tevv"], "AI actors.")])
    spy = Spy(runtime.derived(SHORT_ANSWERS))  # the history's plumbing, not the answers' quality
    rep = run_conversation_answers(spy, [conv])
    first, second = rep.turns
    assert spy.histories[0] == [] and spy.histories[1][0] == {"role": "user", "content": conv.turns[0].question}
    assert spy.histories[1][1]["content"] == first.answer and spy.histories[1][1]["sources"]  # the real answer
    assert [p["id"] for p in first.passages] == [p["id"] for p in spy.histories[1][1]["sources"]]
    assert first.answer is not None and 0.0 <= first.key_terms <= 1.0 and second.follow_up
    s = rep.summary()["groups"]
    assert s["first turns"]["key_terms"] == first.key_terms and s["follow-up turns"]["n"] == 1
    table = format_table({"dev": rep})
    assert "follow-up turns key-term share" in table and "follow-up turns refused " in table


def test_a_turn_the_reader_did_not_finish_is_counted_and_says_why(runtime):
    """A reader that fails mid-run (here: the first token not come within its limit) was scored as
    an empty answer, which read as a bad answer; the run now keeps what was written, the failure,
    and counts such turns."""
    from nistchat.engine.evaluation import run_conversation_answers

    conv = Conversation("c902", [Turn("what does TEVV stand for", "first", "NIST.AI.100-1",
                                      ["test, evaluation, verification, and validation"], ["validation"], "")])
    pace = runtime.models.pace
    limits = pace.floor_s, pace.ceiling_s
    pace.floor_s = pace.ceiling_s = 0.001
    try:
        rep = run_conversation_answers(runtime, [conv])
    finally:
        pace.floor_s, pace.ceiling_s = limits
    (row,) = rep.turns
    assert row.error.startswith("timeout:") and row.answer == "" and row.key_terms == 0.0
    assert rep.summary()["groups"]["first turns"]["failed"] == 1
    assert re.search(r"first turns the reader did not finish\s+1", format_table({"dev": rep}))


def test_other_language_turns_against_their_english_per_list(runtime, tmp_path):
    """`--languages`: each other-language turn as written and in English, per list (each alone:
    the others weighted 0) and fused; the second embedder's list is left out while it is off."""
    from nistchat.engine.evaluation.languages import in_english, one_list

    retriever = runtime.retriever
    assert one_list(retriever, "hybrid") is retriever and one_list(retriever, "dense2") is None  # off in tests
    alone = one_list(retriever, "bm25").config.weights
    assert alone["bm25"] == 1.0 and alone["dense"] == alone["exact"] == alone["dense2"] == 0.0
    conv = Conversation("c1", [Turn("q1", "first", "D", ["e"], ["x"], "a"),
                               Turn("wie viele?", "other_language", "D", ["e"], ["x"], "a", "how many?")])
    assert [t.question for t in in_english(conv).turns] == ["q1", "how many?"]

    f = tmp_path / "langs.jsonl"
    f.write_text(json.dumps({"id": "c901", "turns": [
        {"question": "welche Merkmale haben vertrauenswürdige KI-Systeme?", "english":
         "which characteristics do trustworthy AI systems have?", "kind": "other_language", "doc": "NIST.AI.100-1",
         "evidence": ["valid and reliable, safe, secure and resilient, accountable and transparent"],
         "key_terms": ["valid and reliable"], "answer": "Gültig und zuverlässig, sicher, ..."}]}) + "\n" +
                 json.dumps({"id": "c902", "turns": [  # the corpus does not answer it: only gated
                     {"question": "was verlangt der Sarbanes-Oxley Act für Modellprüfungen?", "english":
                      "what does the Sarbanes-Oxley Act require for model audits?", "kind": "other_language",
                      "doc": None, "evidence": [], "key_terms": [], "answer": ""}]}), encoding="utf-8")
    out = CliRunner().invoke(main, ["eval", "conversations", "--set", str(f), "--languages", "--json"], obj=runtime)
    assert out.exit_code == 0, out.output
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    summary, (row, negative) = rep["summaries"]["langs"], rep["turns"]["langs"]
    assert summary["turns"] == 1 and list(summary["lists"]) == ["dense", "bm25", "hybrid"]
    assert negative["id"] == "c902.1" and negative["negative"] and not negative["hit"]
    assert summary["negatives"] == 1 and summary["negatives_refused_english"] == 1  # an unknown name: refused
    assert summary["negatives_refused"] == int(negative["refused"])
    assert row["translation"] in ("done", "deadline", "busy", "error") and sum(summary["translations"].values()) == 2
    assert row["id"] == "c901.1" and row["english"].startswith("which characteristics")
    assert row["hit_english"]["hybrid"] and summary["lists"]["hybrid"]["hits_english"] == 1
    assert summary["refused_with_evidence"] == summary["refused_english_with_evidence"] == 0
    assert isinstance(row["refused"], bool) and row["refused_english"] is False  # English: never refused
    assert row["searched_for"] and not row["searched_for"].startswith("welche")  # searched in English


def test_an_answers_serialised_trace_reads_like_a_retrievals():
    """The answers run reads the translation's status from the answer's trace, which arrives serialised."""
    from nistchat.engine.evaluation.conversations import translation_of

    trace = Trace()
    trace.add("translate", 12.0, [{"language": "French", "status": "deadline"}], "typed in French")
    back = Trace.from_dict(trace.to_dict())
    assert back == trace and translation_of(back) == "deadline" and translation_of(Trace()) == ""
