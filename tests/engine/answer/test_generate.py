"""Markdown headers and bold are stripped from the stream even when split across tokens."""
import pytest

from nistchat.engine.answer.generate import MarkdownStripper, TurnCut, stream_answer, strip_markdown

RAW = "## Answer\nThe **GOVERN** function [1].\n### Items\n* item **bold**\n#1 priority stays\nx * y = z"
CLEAN = "Answer\nThe GOVERN function [1].\nItems\n* item bold\n#1 priority stays\nx * y = z"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_stream_strip_matches_whole_text_for_any_split(size):
    s = MarkdownStripper()
    out = "".join(s.feed(RAW[i:i + size]) for i in range(0, len(RAW), size)) + s.flush()
    assert out == CLEAN


def test_whole_text_form():
    assert strip_markdown("# Title\n**Bold** text") == "Title\nBold text"


def test_stream_answer_wraps_a_reader():
    class ScriptedReader:  # test double: yields fixed pieces, no model
        name = "scripted"

        def stream(self, messages, *, max_tokens=512, temperature=0.1, first_token_s=None):
            yield from ["#", "# He", "llo *", "*world*", "*"]

    assert "".join(stream_answer(ScriptedReader(), [])) == "Hello world"


TRANSCRIPT = "Assistant: Sprockets are audited yearly [1].\nUsers of gadgets log it.\n\nUser: sorry, I meant gadgets\nAssistant: …"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_an_answer_ends_where_the_reader_writes_the_next_turn_for_any_split(size):
    """A line opening with "User:" is the reader inventing the person's next turn: the answer ends
    before it; an "Assistant:" before any text is the reader's label for its own answer."""
    cut = TurnCut()
    out = "".join(cut.feed(TRANSCRIPT[i:i + size]) for i in range(0, len(TRANSCRIPT), size)) + cut.flush()
    assert out.strip() == "Sprockets are audited yearly [1].\nUsers of gadgets log it." and cut.done
    whole = TurnCut()
    assert whole.feed("It names User: and Assistant: roles.\nUse") + whole.flush() == \
        "It names User: and Assistant: roles.\nUse" and not whole.done


def test_the_readers_stream_is_closed_where_the_answer_ends():
    closed = []

    class ScriptedReader:  # test double: yields fixed pieces, no model
        name = "scripted"

        def stream(self, messages, *, max_tokens=512, temperature=0.1, first_token_s=None):
            try:
                yield from ["Gadgets [1].", "\nUser", ": and sprockets?", "\nAssistant: more"]
            finally:
                closed.append(True)

    assert "".join(stream_answer(ScriptedReader(), [])).strip() == "Gadgets [1]."
    assert closed == [True]
