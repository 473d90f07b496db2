"""Caps, parent mapping, duplicate merge, table-neighbour pull and the token budget, on hand-built parents."""
from nistchat.engine.retrieval.expand import ELLIPSIS, ExpandConfig, expand, select, trim, Piece
from nistchat.engine.text import count_tokens
from nistchat.engine.types import Candidate, Parent


def P(pid, text, section=("Doc", "Sec"), kind="prose", doc="D", **kw):
    return Parent(pid, doc, "Doc title", list(section), kind, text, **kw)


def C(child, parent, score):
    return Candidate(child, parent, score)


def test_children_map_to_parents_and_duplicates_merge():
    parents = {"p1": P("p1", "alpha text"), "p2": P("p2", "beta text", section=("Doc", "Other"))}
    cands = [C("c1", "p1", 0.9), C("c2", "p2", 0.8), C("c3", "p1", 0.7)]
    passages, slots, _ = expand(cands, parents, "q", ExpandConfig(k=6))
    assert [p.id for p in passages] == ["p1", "p2"]
    assert slots[0].hits == ["c1", "c3"]
    assert [p.rank for p in passages] == [1, 2] and passages[0].score == 0.9
    assert passages[0].section == "Doc > Sec" and passages[0].title == "Doc title"


def test_section_cap_makes_room_then_backfills():
    parents = {f"s{i}": P(f"s{i}", f"same section text {i}") for i in range(4)}
    parents["o"] = P("o", "other section", section=("Doc", "Elsewhere"))
    cands = [C(f"c{i}", f"s{i}", 1 - i / 10) for i in range(4)] + [C("co", "o", 0.1)]
    slots, decisions = select(cands, parents, ExpandConfig(k=3, max_per_section=2))
    assert [s.parent.id for s in slots] == ["s0", "s1", "o"]
    assert {d["parent"] for d in decisions if d["action"] == "capped"} == {"s2", "s3"}
    slots, decisions = select(cands, parents, ExpandConfig(k=4, max_per_section=2))
    assert [s.parent.id for s in slots] == ["s0", "s1", "o", "s2"]  # no other material: backfill
    assert any(d["action"] == "backfilled" for d in decisions)


def test_figure_cap_is_tighter():
    parents = {f"f{i}": P(f"f{i}", f"Figure 3 caption variant {i}", section=("Doc", "Figure 3"), kind="figure")
               for i in range(3)}
    parents["x"] = P("x", "prose", section=("Doc", "Body"))
    cands = [C("a", "f0", 0.9), C("b", "f1", 0.8), C("c", "f2", 0.7), C("d", "x", 0.1)]
    slots, _ = select(cands, parents, ExpandConfig(k=2, max_per_figure=1))
    assert [s.parent.id for s in slots] == ["f0", "x"]


def test_identical_text_under_another_id_merges():
    parents = {"a": P("a", "Figure 1: Distribution"), "b": P("b", "figure 1:  distribution", section=("Doc", "X"))}
    slots, decisions = select([C("c1", "a", 1), C("c2", "b", 0.5)], parents, ExpandConfig())
    assert len(slots) == 1 and slots[0].hits == ["c1", "c2"]
    assert decisions[0]["action"] == "merged-duplicate"


def test_budget_is_respected_and_small_passages_stay_whole():
    long_text = " ".join(f"Sentence number {i} talks about filler material." for i in range(200))
    parents = {"big": P("big", long_text), "small": P("small", "Short and complete.", section=("Doc", "B"))}
    passages, slots, _ = expand([C("a", "big", 1), C("b", "small", 0.5)], parents, "q",
                                ExpandConfig(budget_tokens=300))
    assert sum(count_tokens(p.text) for p in passages) <= 300
    assert passages[1].text == "Short and complete."
    assert slots[0].trimmed and not slots[1].trimmed


def test_trim_keeps_the_matching_sentence_and_marks_gaps():
    text = " ".join(f"Filler sentence {i} about nothing in particular." for i in range(60))
    text += " The six monitoring categories are listed in Table 1. " + text
    piece = Piece(P("p", text), ["The six monitoring categories are listed in Table 1."])
    out = trim(piece, 60, {"monitoring", "categories"})
    assert "The six monitoring categories are listed in Table 1." in out
    assert ELLIPSIS in out and count_tokens(out) <= 60


def test_trim_keeps_who_showed_it_with_what_they_showed():
    """A sentence citing "Smith et al. [6]" is one trim unit: cut at "al.", the passage kept
    "[…] [6] introduced …" and lost who did."""
    text = " ".join(f"Filler sentence {i} about nothing in particular." for i in range(60))
    text += " In sprocket studies, Smith et al. [6] introduced gadget inversion for sprockets. " + text
    out = trim(Piece(P("p", text), []), 30, {"gadget", "inversion"})
    assert "In sprocket studies, Smith et al. [6] introduced gadget inversion for sprockets." in out


def test_trim_keeps_table_header_with_matching_row():
    rows = "\n".join(f"| row {i} | filler value {i} |" for i in range(80))
    text = "Table 2 Things\n| Name | Value |\n| --- | --- |\n" + rows + "\n| target row | the answer |"
    out = trim(Piece(P("t", text, kind="table"), ["| target row | the answer |"]), 40, set())
    lines = out.split("\n")
    assert lines[:3] == ["Table 2 Things", "| Name | Value |", "| --- | --- |"]
    assert "| target row | the answer |" in lines


def test_tiny_budget_drops_tail_passages_rather_than_starving_all():
    parents = {f"p{i}": P(f"p{i}", f"word{i} " * 100, section=("Doc", str(i))) for i in range(6)}
    passages, _, _ = expand([C(f"c{i}", f"p{i}", 1 - i / 10) for i in range(6)], parents, "q",
                            ExpandConfig(budget_tokens=200, min_passage_tokens=60))
    assert [p.id for p in passages] == ["p0", "p1", "p2"]
    assert sum(count_tokens(p.text) for p in passages) <= 200


def test_unknown_parent_is_skipped():
    passages, _, _ = expand([C("c", "missing", 1.0)], {}, "q", ExpandConfig())
    assert passages == []


def test_trim_splits_a_huge_row_and_keeps_the_matched_sentence():
    filler = " ".join(f"GOVERN 1.{i}: filler outcome number {i} is documented here." for i in range(3, 40))
    row = f"| GOVERN 1: Policies are in place. | GOVERN 1.1: Legal requirements are understood. " \
          f"GOVERN 1.2: The characteristics of trustworthy AI are integrated. {filler} |"
    text = "Table 1 Govern\n| Categories | Subcategories |\n|---|---|\n" + row
    child = "NIST AI 100-1 | 5.1 Govern\nGOVERN 1.2: The characteristics of trustworthy AI are integrated."
    out = trim(Piece(P("t", text, kind="table"), [child]), 60, {"govern", "1", "2"})
    assert out.startswith("Table 1 Govern\n| Categories | Subcategories |\n|---|---|")
    assert "GOVERN 1.2: The characteristics of trustworthy AI are integrated." in out
    assert count_tokens(out) <= 60


def test_trim_prefers_the_row_of_the_best_ranked_matching_child():
    # every row matched (each row child carries the caption), but the third ranked first
    rows = [f"| ID {i} | task {i} text about data and models and more words here |" for i in range(12)]
    text = "Table 9 Tasks\n| ID | Task |\n| --- | --- |\n" + "\n".join(rows)
    hits = [rows[3]] + [r for i, r in enumerate(rows) if i != 3]
    out = trim(Piece(P("t", text, kind="table"), hits), 45, set())
    assert rows[3] in out and rows[0] not in out  # one row fits: the best-ranked one, not the first


def test_allocate_shares_by_weight_above_a_floor_and_refills_surplus():
    from nistchat.engine.retrieval.expand import _allocate
    assert _allocate([1000, 1000], 300) == [150, 150]  # equal weights: equal shares
    assert _allocate([1000, 1000], 300, [3.0, 1.0], floor=60) == [195, 105]  # 60 each, the other 180 split 3:1
    assert _allocate([50, 1000, 1000], 400, [1.0, 1.0, 2.0], floor=60) == [50, 136, 213]  # small stays whole
    assert sum(_allocate([500, 700, 900], 1000, [0.5, 0.3, 0.2], floor=60)) <= 1000


def test_evidence_weight_favours_the_best_ranked_and_discounts_repeats():
    from nistchat.engine.retrieval.expand import evidence_weight
    assert evidence_weight([1]) > evidence_weight([6])
    assert evidence_weight([1, 2, 3, 4]) > evidence_weight([5, 7, 13])
    # twenty low rows of one big table do not outweigh a passage that ranked first
    assert evidence_weight([1]) > evidence_weight(list(range(8, 28)))


def test_budget_goes_mostly_to_the_passage_the_ranking_backs():
    def long(tag):
        return " ".join(f"Sentence {tag} {i} talks about filler material." for i in range(120))
    parents = {"top": P("top", long("top")), "low": P("low", long("low"), section=("Doc", "B"))}
    cands = [C("a1", "top", 1), C("a2", "top", 0.9), C("b", "low", 0.5)]
    passages, _, _ = expand(cands, parents, "q", ExpandConfig(budget_tokens=400))
    top, low = (count_tokens(p.text) for p in passages)
    assert top > 1.5 * low and top + low <= 400
    passages, _, _ = expand(cands, parents, "q", ExpandConfig(budget_tokens=400, weighted_budget=False))
    assert abs(count_tokens(passages[0].text) - count_tokens(passages[1].text)) < 20


def test_split_prose_of_one_section_joins_the_chosen_neighbours_passage():
    parents = {
        "a": P("a", "First half of the section.", next_id="b"),
        "b": P("b", "Second half of the section.", prev_id="a", next_id="c"),
        "c": P("c", "Next section starts.", section=("Doc", "Other"), prev_id="b"),
        "x": P("x", "Unrelated.", section=("Doc", "X")),
    }
    cands = [C("cb", "b", 0.9), C("cx", "x", 0.5), C("ca", "a", 0.4), C("cc", "c", 0.3)]
    passages, slots, decisions = expand(cands, parents, "q", ExpandConfig(k=6))
    assert [p.id for p in passages] == ["b", "x", "c"]  # c is another section: a slot of its own
    assert [pc.parent.id for pc in slots[0].pieces] == ["a", "b"]  # document order
    assert passages[0].text == "First half of the section.\nSecond half of the section."
    assert any(d["action"] == "joined-prose" and d["parent"] == "a" for d in decisions)
    off, _, _ = expand(cands, parents, "q", ExpandConfig(k=6, join_split_prose=False))
    assert [p.id for p in off] == ["b", "x", "a", "c"]


def test_a_joined_piece_brings_its_own_budget_share():
    from nistchat.engine.retrieval.expand import evidence_weight, slot_weight
    parents = {
        "a": P("a", "First half.", next_id="b"),
        "b": P("b", "Second half.", prev_id="a"),
        "x": P("x", "Elsewhere.", section=("Doc", "X")),
    }
    slots, _ = select([C("ca", "a", 0.9), C("cx", "x", 0.8), C("cb", "b", 0.7)], parents, ExpandConfig())
    assert [pc.parent.id for pc in slots[0].pieces] == ["a", "b"]
    assert slot_weight(slots[0]) == evidence_weight([1]) + evidence_weight([3])
    assert slot_weight(slots[0]) > evidence_weight([1, 3])  # not discounted as a repeat hit
