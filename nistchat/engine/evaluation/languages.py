"""Questions in other languages: is their evidence retrieved as often as for the same questions in
English, list by list?

Why per list: the corpus is English, MiniLM and BM25 are English-only, the second embedder
(EmbeddingGemma) is multilingual; what to do with a Spanish, German or French question is chosen on
how each list fares with it. Each `other_language` turn of the conversation sets carries `english`,
a faithful translation of its question. Every conversation holding such turns is run through
`run_conversations` twice, as written and with those turns in English (the other turns and the
expected answers unchanged), once per list: each list alone (the others weighted 0 in the same
fusion, so caps and parent expansion are the hybrid's) and the fused hybrid. The gate counts the
other-language turns it would refuse although their evidence was retrieved (hybrid), as written and
in English: a question refused both ways is refused for its own sake, not its language's. A
translated question the corpus does not answer (a one-turn conversation without evidence) is only
gated, as written and in English: the gate should refuse it as often in either language.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from ..backends.base import Reader, move_kept_prompt
from ..errors import BackendError
from ..retrieval import Retriever
from ..types import Retrieval
from .conversations import Conversation, run_conversations, search_text_of, translation_of

KIND = "other_language"
LISTS = ("dense", "bm25", "dense2", "hybrid")
LIST_LABELS = {"dense": "MiniLM dense", "bm25": "BM25", "dense2": "second embedder (multilingual)",
               "hybrid": "fused hybrid"}


def in_english(conv: Conversation) -> Conversation:
    """The conversation with each other-language turn asked in English (its `english`)."""
    return Conversation(conv.id, [replace(t, question=t.english) if t.kind == KIND and t.english else t
                                  for t in conv.turns])


def one_list(retriever: Retriever, name: str) -> Retriever | None:
    """The retriever ranking by list `name` alone (every other list weighted 0), the retriever
    itself for "hybrid", None when the list is not in use (the second embedder's vectors unbuilt)."""
    if name == "hybrid":
        return retriever
    if name == "dense2" and not (retriever.second is not None and retriever.second.available()):
        return None
    names = set(retriever.config.weights) | {"dense", "bm25", "exact", "dense2"}
    return retriever.with_config(weights={n: float(n == name) for n in sorted(names)})


def answer_between(reader: Callable[[], Reader]) -> Callable[[], None]:
    """What an answer does to the reader between two questions of a chat, for `run_languages`'
    `between`: it leaves its own prompt there, so the next translation reads its prompt anew. No
    reader is no error here: the translations fail too, and their questions are searched as written."""
    def between() -> None:
        try:
            move_kept_prompt(reader())
        except BackendError:
            pass
    return between


@dataclass
class LanguageTurn:
    id: str
    question: str
    english: str
    hit: dict[str, bool] = field(default_factory=dict)  # list -> evidence-hit as written
    hit_english: dict[str, bool] = field(default_factory=dict)  # list -> evidence-hit in English
    searched: str = ""  # what the hybrid searched for, as written
    refused: bool = False  # the gate refuses it (hybrid, as written)
    refused_english: bool = False  # ... and in English: a refusal of both is not the language's doing
    negative: bool = False  # the corpus does not answer it: no evidence, only the refusals count
    translation: str = ""  # how its translation went in the hybrid's pass ("done", "cached", "deadline", ...)


@dataclass
class LanguageReport:
    k: int
    lists: list[str]  # the lists measured (dense2 missing while its vectors are unbuilt)
    turns: list[LanguageTurn] = field(default_factory=list)

    def summary(self) -> dict:
        turns = [t for t in self.turns if not t.negative]
        negatives = [t for t in self.turns if t.negative]
        n = len(turns)
        per = {name: {"n": n, "hits": sum(t.hit[name] for t in turns),
                      "hits_english": sum(t.hit_english[name] for t in turns)} for name in self.lists}
        for entry in per.values():
            entry["hit"] = round(entry["hits"] / n, 4) if n else None
            entry["hit_english"] = round(entry["hits_english"] / n, 4) if n else None
        return {"k": self.k, "turns": n, "lists": per,
                "refused": sum(t.refused for t in turns),
                "refused_with_evidence": sum(t.refused and t.hit.get("hybrid", False) for t in turns),
                "refused_english": sum(t.refused_english for t in turns),
                "refused_english_with_evidence": sum(t.refused_english and t.hit_english.get("hybrid", False)
                                                     for t in turns),
                "negatives": len(negatives), "negatives_refused": sum(t.refused for t in negatives),
                "negatives_refused_english": sum(t.refused_english for t in negatives),
                "translations": dict(Counter(t.translation or "none" for t in self.turns))}


def run_languages(retriever: Retriever, conversations: list[Conversation], *, k: int = 6,
                  gate: Callable[[Retrieval], bool] | None = None,
                  between: Callable[[], None] | None = None, lists: tuple[str, ...] = LISTS) -> LanguageReport:
    """Each other-language turn's evidence-hit@k per list, as written and in English (module doc).
    `between()` runs after each turn: in a chat an answer comes between two questions and leaves its
    own prompt in the reader (backends.base.move_kept_prompt), so each translation reads its prompt
    anew, as it does there. The hybrid's pass runs first, so that its translation is the one try a
    person's question gets; the single lists' passes (`lists`: those measured) run back to back,
    where one cut by its deadline is tried again, quickly, on the kept prompt."""
    convs = []
    for c in conversations:  # up to the last other-language turn: later turns are not scored here
        last = max((i for i, t in enumerate(c.turns) if t.kind == KIND), default=-1)
        if last >= 0:
            convs.append(Conversation(c.id, c.turns[:last + 1]))
    retrievers = {name: r for name in LISTS if name in lists and (r := one_list(retriever, name)) is not None}
    report = LanguageReport(k, list(retrievers))
    rows: dict[str, LanguageTurn] = {}
    for name, r in sorted(retrievers.items(), key=lambda item: item[0] != "hybrid"):
        own = run_conversations(r, convs, k=k, gate=gate if name == "hybrid" else None,
                                on_turn=(lambda _row: between()) if between and name == "hybrid" else None)
        english = run_conversations(r, [in_english(c) for c in convs], k=k, gate=gate if name == "hybrid" else None)
        for mine, theirs in zip(own.turns, english.turns):
            if mine.kind != KIND:
                continue
            row = rows.setdefault(mine.id, LanguageTurn(mine.id, mine.question, theirs.question))
            row.hit[name], row.hit_english[name] = mine.hit, theirs.hit
            if name == "hybrid":
                row.searched, row.refused, row.refused_english = mine.search_text, mine.refused, theirs.refused
                row.translation = mine.translation
    report.turns = list(rows.values())
    for c in conversations if gate is not None else ():  # one-turn questions the corpus does not answer
        turn = c.turns[0]
        if turn.kind == KIND and not turn.evidence and turn.english:
            if between:
                between()
            own = retriever.retrieve(turn.question, k=k)
            report.turns.append(LanguageTurn(f"{c.id}.1", turn.question, turn.english, searched=search_text_of(own.trace),
                                             refused=gate(own), negative=True, translation=translation_of(own.trace),
                                             refused_english=gate(retriever.retrieve(turn.english, k=k))))
    return report


def in_time(summary: dict) -> str:
    """Turns whose translation came by the deadline (or from the cache), of all the set's turns."""
    statuses = summary["translations"]
    return f"{statuses.get('done', 0) + statuses.get('cached', 0)}/{sum(statuses.values())}"


def format_languages(reports: dict[str, LanguageReport], *, turns: bool = True) -> str:
    """Per list, evidence-hit@k as written against in English, one column pair per set; then the
    gate's refusals and (with `turns`) each turn's hits."""
    names = list(reports)
    k = next(iter(reports.values())).k
    summaries = {n: r.summary() for n, r in reports.items()}

    def cell(s: dict, name: str, which: str) -> str:
        entry = s["lists"].get(name)
        if not entry or not entry["n"]:
            return "-"
        return f"{entry[f'hits{which}']}/{entry['n']} ({entry[f'hit{which}']:.2f})"

    head = [f"{n} {side}" for n in names for side in ("as written", "in English")]
    rows = [(f"evidence-hit@{k}", head)]
    for name in LISTS:
        rows.append((f"  {LIST_LABELS[name]}", [cell(summaries[n], name, w) for n in names for w in ("", "_english")]))
    rows.append(("refused by the gate", [v for n in names for v in (str(summaries[n]["refused"]),
                                                                    str(summaries[n]["refused_english"]))]))
    rows.append(("  ... with its evidence retrieved",
                 [v for n in names for v in (str(summaries[n]["refused_with_evidence"]),
                                             str(summaries[n]["refused_english_with_evidence"]))]))
    rows.append(("translated in time (all turns)",
                 [v for n in names for v in (in_time(summaries[n]), "")]))
    if any(s["negatives"] for s in summaries.values()):
        rows.append(("not in the corpus: refused by the gate",
                     [v for n in names for v in (f"{summaries[n]['negatives_refused']}/{summaries[n]['negatives']}",
                                                 f"{summaries[n]['negatives_refused_english']}/"
                                                 f"{summaries[n]['negatives']}")]))
    label_w = max(len(r[0]) for r in rows) + 2
    width = max(14, *(len(v) + 2 for _label, values in rows for v in values))
    lines = [f"{label:<{label_w}}" + "".join(f"{v:>{width}}" for v in values) for label, values in rows]
    if turns:
        for set_name, rep in reports.items():
            lines += ["", f"{set_name} turns (hit as written / in English, per list: "
                          f"{', '.join(rep.lists)}):"]
            for t in rep.turns:
                marks = ("not in the corpus: refused " + ("+" if t.refused else "-") + ("+" if t.refused_english else "-")
                         if t.negative else
                         " ".join(f"{'+' if t.hit[n] else '-'}{'+' if t.hit_english[n] else '-'}" for n in rep.lists))
                lines.append(f"  {t.id} {marks}  {t.question}" + ("  (refused by the gate)" if t.refused else ""))
                if t.searched and t.searched != t.question.lower():
                    lines.append(f"      searched for: {t.searched!r}")
    return "\n".join(lines)
