"""The document viewer in a real browser (Chromium via Playwright, the server on waitress): a
stored answer's citation shows its preview on hover and on keyboard focus, a 👎 with a reason is
sent in place, and clicking the citation opens the viewer beside the answer at the cited passage,
highlighted, with the matching table row marked, and from there as a page of its own. Screenshots
of the preview, the vote and the viewer's page (wide and narrow) land in test-artifacts/."""
from __future__ import annotations

import uuid

import pytest

from nistchat.engine.verification.citations import source_list
from nistchat.engine.types import Passage
from nistchat.extensions import db
from nistchat.models import Conversation, Feedback, Message

from .test_browser import ARTIFACTS, browser, live_server  # noqa: F401  (fixtures, one server for this module)

pytestmark = pytest.mark.browser


def cited_table(index):
    """A real table passage of the corpus with a few rows, and the text of its second row."""
    for parent in index.parents.values():
        rows = [line for line in parent.text.split("\n") if line.startswith("| ")]
        if parent.kind == "table" and len(rows) >= 4 and parent.doc != "NIST.AI.100-1":
            cells = [c.strip() for c in rows[2].strip("|").split("|") if c.strip()]
            if len(" ".join(cells).split()) >= 6:
                return parent, " ".join(cells)
    raise AssertionError("no table in the index")


def test_a_citation_previews_and_opens_the_viewer_at_the_highlighted_passage(browser, live_server, runtime):  # noqa: F811
    base, app = live_server
    parent, row = cited_table(runtime.index)
    claim = f"{row} [1]."
    owner = uuid.uuid4().hex
    passage = Passage(1, parent.id, parent.doc, parent.title, parent.section, parent.kind, parent.page, parent.text, 1.0)
    with app.app_context():  # an answer as the chat stores it, in this browser's conversation
        conv = Conversation(owner=owner, title="a table")
        db.session.add(conv)
        db.session.flush()
        db.session.add(Message(conversation_id=conv.id, owner=owner, question="What does the table say?", status="done",
                               answer=claim, risk="LOW", sources=[s.to_dict() for s in source_list([passage], claim)],
                               verdicts=[{"text": claim, "supported": True, "passage": 1}]))
        db.session.commit()
        conv_id = conv.id
        cookie = app.session_interface.get_signing_serializer(app).dumps({"owner": owner, "_permanent": True})
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": app.config["SESSION_COOKIE_NAME"], "value": cookie, "url": base}])
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"/c/{conv_id}")
        title = runtime.documents()[[d.id for d in runtime.documents()].index(parent.doc)].display
        source_cite = page.locator(".source-list a.cite").first
        preview = page.locator(".source-list .cite-preview").first
        assert not preview.is_visible()
        source_cite.focus()  # keyboard: the preview shows on focus
        assert preview.is_visible() and title in preview.inner_text()
        source_cite.blur()
        assert not preview.is_visible()
        page.locator(".checks a.cite").first.hover()  # and on hover
        verdict_preview = page.locator(".checks .cite-preview").first
        assert verdict_preview.is_visible() and parent.heading_path[-1] in verdict_preview.inner_text()
        page.screenshot(path=str(ARTIFACTS / "citation-preview.png"))
        page.mouse.move(0, 0)
        form = page.locator("form.feedback")  # 👎 with a reason, sent by htmx: no page load
        form.locator("summary").click()
        form.locator("input[value=wrong_source]").check()
        form.locator("textarea[name=text]").fill("the row is about another standard")
        form.locator("button[value=down]").click()
        page.wait_for_selector("form.feedback .saved")
        assert page.locator("form.feedback[data-vote=down]").count() == 1
        page.locator("form.feedback").screenshot(path=str(ARTIFACTS / "feedback.png"))
        with app.app_context():
            assert [(f.vote, f.reason) for f in Feedback.query.all()] == [("down", "wrong_source")]
        page.locator(".checks a.cite").first.click()  # a wide screen: the viewer opens beside the answer
        in_pane = page.locator("#doc-pane section.doc-passage.at")
        in_pane.wait_for()
        assert in_pane.get_attribute("id") == parent.id and in_pane.locator("table").count() == 1
        assert page.url.endswith(f"/c/{conv_id}")  # the chat stays
        marks = in_pane.locator("mark.match")
        marked = marks.count()
        assert marked >= 2 and all(t in row for t in marks.all_inner_texts())  # the row's cells, marked
        page.locator("#doc-pane a.pane-page").click()  # and as a page of its own
        page.wait_for_url(lambda url: f"/docs/{parent.doc}?at=" in url and url.endswith(f"#{parent.id}"))
        cited = page.locator("section.doc-passage.at")
        assert cited.count() == 1 and cited.get_attribute("id") == parent.id
        assert cited.locator("table").count() == 1 and cited.locator("mark.match").count() == marked
        box, height = cited.bounding_box(), page.viewport_size["height"]
        assert box and 0 <= box["y"] < height, box  # the page opened at the passage
        assert page.evaluate("getComputedStyle(document.querySelector('section.doc-passage.at')).backgroundColor") \
            != "rgba(0, 0, 0, 0)"
        page.screenshot(path=str(ARTIFACTS / "viewer-page-wide.png"))
        page.set_viewport_size({"width": 390, "height": 844})
        toc, body = page.locator(".doc-toc").bounding_box(), page.locator(".doc-body").bounding_box()
        assert toc["y"] < body["y"] and body["width"] <= 390  # contents above the text on a phone
        cited.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "viewer-page-narrow.png"))
    finally:
        context.close()
