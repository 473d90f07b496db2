"""An answer made whole: the end a length limit left unfinished, and the rest of a list the reader
was shown only part of (made-up sprocket lists; no model)."""
from nistchat.engine.answer.complete import list_rest, rest_lines, without_unfinished
from nistchat.engine.answer.generate import Sent

WHOLE = ("The sprocket risks are:\n1. Drift: teeth wear unevenly.\n2. Jamming: the chain slips.\n"
         "3. Rust: water gets in.\n4. Noise: the gears whine.\n5. Heat: friction builds up.\n6. Wobble: the axle bends.")
SHOWN = ("The sprocket risks are:\n1. Drift: teeth wear unevenly.\n[…] 3. Rust: water gets in.\n"
         "4. Noise: the gears whine.\n5. Heat: friction builds up.\n[…]")
ANSWER = "The risks include:\n- Drift: uneven wear [1].\n- Rust: water [1].\n- Heat: friction [1]."
QUESTION = "which risks does the sprocket guide list?"


def test_the_end_a_length_limit_left_unfinished_is_left_out():
    assert without_unfinished("Sprockets wear [1]. Gadgets rust when wet and") == "Sprockets wear [1]."
    assert without_unfinished("Sprockets wear [1].") == "Sprockets wear [1]."
    # a list line cut inside its explanation keeps its item's name; cut inside the name, it goes
    assert without_unfinished("- Drift: teeth wear [1].\n- Jamming: the chain sl") == "- Drift: teeth wear [1].\n- Jamming"
    assert without_unfinished("- Drift [1]\n- Jamm") == "- Drift [1]"
    assert without_unfinished("1. Drift: teeth wear. Gadgets slip when") == "1. Drift: teeth wear."
    assert without_unfinished("Sprockets wear when the teeth of the") == "Sprockets wear when the teeth of the"
    assert without_unfinished("| Drift | wear |\n| Rust | water |") == "| Drift | wear |\n| Rust | water |"


def test_a_stream_that_reached_its_limit_is_told_from_one_that_ended():
    sent = Sent()
    for _ in range(78):
        sent.add("x")
    assert sent.reached(80) and not sent.reached(100)
    few = Sent("a few words", 3)
    assert not few.reached(80)
    assert few.reached(80, lambda text: 79)  # a server that joins tokens into fewer pieces: counted again

    def fails(text):
        raise RuntimeError("no tokenizer")
    assert not few.reached(80, fails)


def test_the_rest_of_a_list_the_reader_was_shown_only_part_of_is_named():
    n, names = list_rest(ANSWER, ["Gadgets are small.", SHOWN], ["Gadgets are small.", WHOLE], QUESTION)
    assert (n, names) == (2, ["Jamming", "Wobble"])  # not Noise: the reader was shown it, and left it out
    assert rest_lines(n, names) == ["The list in [2] also names:", "- Jamming [2]", "- Wobble [2]"]
    assert rest_lines(n, names, "German")[0] == "Die Liste in [2] nennt außerdem:"


def test_a_list_named_in_part_on_purpose_is_left_as_it_is():
    for question, count in (("which of the sprocket risks concern water?", None), ("name three sprocket risks", 3),
                            ("give some examples of sprocket risks", None)):
        assert list_rest(ANSWER, [SHOWN], [WHOLE], question, count=count) == (0, [])
    assert list_rest(ANSWER, [SHOWN], [WHOLE], "which sprocket risks concern water?", selection=True) == (0, [])
    assert list_rest(ANSWER, [SHOWN], [WHOLE], "name four sprocket risks", count=4) == (1, ["Jamming"])  # what it lacks
    assert list_rest(ANSWER, [WHOLE], [WHOLE], QUESTION) == (0, [])  # shown whole: the reader chose
    two = "The risks include Drift [1] and Rust [1]."
    assert list_rest(two, [SHOWN], [WHOLE], QUESTION) == (0, [])  # two items may meet a list by chance
