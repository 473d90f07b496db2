"""Markdown headers and bold are stripped from the stream even when split across tokens."""
import pytest

from nistchat.engine.answer.generate import MarkdownStripper, stream_answer, strip_markdown

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
