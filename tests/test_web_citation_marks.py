"""Citation marks on the page: the reader's own [n] and, where the reader wrote none, the
checker's passage, shown apart and stored with the answer (engine/verification/citations.py, web.answer_html)."""
from __future__ import annotations

import re

from nistchat.models import Message

from .web_support import DIRECT_LABEL, ask_and_stream, stored


def test_the_checkers_marks_are_shown_apart_from_the_readers_and_stored_with_the_answer(client):
    """An answer whose first sentence the reader left unmarked and the checker matched to passage 2:
    the page shows [2] as the checker's (its own class, and its preview says so), the reader's [1] as
    the reader's, each opening the viewer at its passage with its sentence to match, and the text
    stays escaped around both."""
    from nistchat.chat import store
    from nistchat.engine.verification.citations import checker_marks, source_list
    from nistchat.engine.types import Answer, Passage, Verdict

    passages = [Passage(rank=i, id=f"p{i}", doc="NIST.AI.100-1", title="AI RMF", section="Core", kind="prose",
                        page=None, text=t, score=0.5)
                for i, t in enumerate(["GOVERN cultivates a culture of risk management.",
                                       "MAP establishes the context to frame risks <of AI>."], 1)]
    answer = "MAP frames risks <in context>. GOVERN builds a risk culture [1]."
    marks = checker_marks(answer, passages, [Verdict("MAP frames risks <in context>.", True, 2),
                                            Verdict("GOVERN builds a risk culture [1].", True, 1)])
    mid, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    with client.application.test_request_context("/"):
        store.finish_message(mid, store.Outcome(Answer(answer, sources=source_list(passages, answer, marks))))
    assert stored(client, Message, mid).sources[1]["checker_sentences"] == ["MAP frames risks <in context>."]
    page = client.get(f"/c/{stored(client, Message, mid).conversation_id}").get_data(as_text=True)
    shown = re.search(rf'id="answer-{mid}">(.*?)</div>', page, re.S).group(1)
    previews = re.findall(r'<span class="cite-preview" role="tooltip" id="(pv-\d+)">(.*?)</span></span>', shown, re.S)
    assert [p for _, p in previews if "matched by the checker" in p] == [previews[0][1]]  # the checker's says so
    assert all("AI RMF (NIST AI 100-1)</strong> · Core" in p for _, p in previews)
    bare = re.sub(r'<span class="cite-preview".*?</span></span></span>', "</span>", shown, flags=re.S)
    assert bare == ('MAP frames risks &lt;in context&gt;. <span class="cite-wrap"><a class="cite cite-checker" '
                    'href="/docs/NIST.AI.100-1?at=p2&amp;claim=MAP+frames+risks+%3Cin+context%3E.#p2"\n  data-pane '
                    f'aria-describedby="{previews[0][0]}">[2]</a></span> GOVERN builds a risk culture '
                    '<span class="cite-wrap"><a class="cite cite-reader" '
                    'href="/docs/NIST.AI.100-1?at=p1&amp;claim=GOVERN+builds+a+risk+culture+%5B1%5D.#p1"\n  data-pane '
                    f'aria-describedby="{previews[1][0]}">[1]</a></span>.')


def test_a_quotes_own_reference_marks_are_no_links(client):
    """A quoted passage keeps the document's own "[2]" (a reference of the document, not passage 2
    of the answer): the page shows it as text, and the reader's mark after the quote as a link."""
    from nistchat.chat import store
    from nistchat.engine.verification.citations import source_list
    from nistchat.engine.types import Answer, Passage

    passages = [Passage(rank=i, id=f"p{i}", doc="NIST.AI.100-1", title="AI RMF", section="Core", kind="prose",
                        page=None, text=t, score=0.5)
                for i, t in enumerate(["Sprockets wear [2] under load.", "Gadgets hold."], 1)]
    answer = 'The sources say: "Sprockets wear [2] under load." [1]'
    mid, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    with client.application.test_request_context("/"):
        store.finish_message(mid, store.Outcome(Answer(answer, sources=source_list(passages, answer, {}))))
    page = client.get(f"/c/{stored(client, Message, mid).conversation_id}").get_data(as_text=True)
    shown = re.search(rf'id="answer-{mid}">(.*?)</div>', page, re.S).group(1)
    assert re.findall(r'<a class="cite cite-(\w+)"[^>]*>\[(\d)\]</a>', shown) == [("reader", "1")]
    assert "Sprockets wear [2] under load." in shown
