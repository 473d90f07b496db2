"""Citations in a real browser (Chromium via Playwright, the app on waitress, the real index): 20
answers over all seven documents, stored through the chat's own store (start_message /
finish_message) with sources from real retrieval over the real index and real `[n]` marks, so no
reader is needed. Every citation opens the viewer at its passage, highlighted, each in under
300 ms measured in the page; the pane beside the chat on a wide screen, the viewer's page on a
phone; Back, Forward and Esc do what a reader expects. Then every page a person can reach is
crawled for document file stems, and a 👎 goes from the chat to the export, /metrics and a
`reported` item that an evaluation run started from /evals scores. Screenshots land in
test-artifacts/."""
from __future__ import annotations

import csv
import io
import json
import re
import uuid
from dataclasses import dataclass

import pytest

from nistchat.docs.render import units
from nistchat.engine.corpus.catalog import doc_short_name
from nistchat.engine.types import Passage
from nistchat.engine.verification.citations import source_list

from ..web_support import ADMIN_PASSWORD
from .test_browser import ARTIFACTS, browser, live_server, wait_until  # noqa: F401  (fixtures: one server here)

pytestmark = pytest.mark.browser

ANSWERS = 20
WIDE = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
OPEN_BUDGET_MS = 300

# Armed before each click: the time of the click on a citation (the event's own timestamp) and
# the first frame in which the expected passage is highlighted and in the pane's view (its top
# in the upper half, or a long passage filling it).
WATCH = """
(expected) => {
  window.__shown = null;
  const start = {t: null};
  document.addEventListener('click', (e) => {
    start.link = e.target.closest && e.target.closest('a[data-pane]');
    if (start.link) { start.t = e.timeStamp; start.y = start.link.getBoundingClientRect().top; }
  }, {capture: true, once: true});
  const visible = () => {
    const pane = document.getElementById('doc-pane');
    const scroller = pane && !pane.hidden && pane.querySelector('.pane-scroll');
    const cited = scroller && scroller.querySelector('section.doc-passage.at');
    if (!cited || cited.id !== expected) return false;
    const box = cited.getBoundingClientRect(), view = scroller.getBoundingClientRect();
    const lit = getComputedStyle(cited).backgroundColor !== 'rgba(0, 0, 0, 0)';
    const middle = (view.top + view.bottom) / 2;  // in view: its top, or (a long one) most of the pane
    return lit && (box.top >= view.top - 1 ? box.top < middle : box.bottom > middle);
  };
  const tick = () => {
    if (start.t !== null && visible()) {
      window.__shown = {ms: performance.now() - start.t, moved: start.link.getBoundingClientRect().top - start.y,
        marks: document.querySelectorAll('#doc-pane section.doc-passage.at mark.match').length};
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""


@dataclass
class Cited:
    """One stored answer: its conversation, document, and the passage ids its [n] marks cite."""
    conv_id: str
    message_id: int
    doc: str
    cited: dict[int, str]  # mark number -> passage id
    kinds: dict[int, str]


def claim_of(parent) -> str | None:
    """A sentence (or a table row's cells) of the passage that an answer could say, as plain text."""
    for unit in units(parent):
        text = " ".join(c.strip() for c in unit.strip().strip("|").split("|") if c.strip()) if parent.kind == "table" \
            else unit.strip()
        text = re.sub(r"\s+", " ", text).strip().rstrip(".")
        if 6 <= len(text.split()) <= 60 and "[" not in text:
            return text
    return None


def questions(runtime) -> list[tuple[str, str]]:
    """(document, question) pairs, 20 in all, about every document's sections spread over it; made
    from the index's headings, so no evaluation question is used."""
    docs = list(dict.fromkeys(p.doc for p in runtime.index.parents.values()))
    assert len(docs) == 7
    out = []
    for i, doc in enumerate(docs):
        wanted = 3 if i < ANSWERS - 2 * len(docs) else 2
        headed = [p for p in runtime.index.parents.values() if p.doc == doc and p.heading_path]
        headings = list(dict.fromkeys(p.heading_path[-1] for p in headed))
        for k in range(wanted):
            heading = headings[(k + 1) * len(headings) // (wanted + 1)]
            out.append((doc, f"What does {doc_short_name(doc)} say about {heading}?"))
    return out


@pytest.fixture(scope="module")
def owner() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="module")
def answers(live_server, runtime, owner) -> list[Cited]:
    """The 20 answers, in one conversation per document, through the chat's store: the question
    as `start_message` records it (limited to its document), the outcome as `finish_message`
    writes it, with retrieval's passages as the sources and one sentence of each cited passage,
    marked [n], as the answer."""
    from flask import session

    from nistchat.chat.store import Outcome, finish_message, start_message
    from nistchat.engine import Answer, Verdict
    from nistchat.extensions import db
    from nistchat.models import Conversation

    _base, app = live_server
    out: list[Cited] = []
    conversations: dict[str, str] = {}
    for number, (doc, question) in enumerate(questions(runtime)):
        passages = runtime.retrieve(question, k=6, docs=[doc]).passages
        assert passages and all(p.id in runtime.index.parents for p in passages), question
        chosen = [n for n, p in enumerate(passages, 1) if claim_of(runtime.index.parents[p.id])]
        chosen = chosen[:2] if number % 2 else chosen[:3]  # two or three citations, some skipping a passage
        assert chosen, question
        sentences = [f"{claim_of(runtime.index.parents[passages[n - 1].id])} [{n}]." for n in chosen]
        answer = " ".join(sentences)
        shown = [Passage(n, p.id, p.doc, p.title, p.section, p.kind, p.page, p.text, p.score)
                 for n, p in enumerate(passages, 1)]
        sources = source_list(shown, answer)
        with app.test_request_context("/"):
            session["owner"] = owner
            conv = db.session.get(Conversation, conversations[doc]) if doc in conversations else None
            message = start_message(question, None, conversation=conv, docs=[doc])
            conversations[doc] = message.conversation_id
            final = Answer(answer, question=question, risk="LOW", sources=sources,
                           sentences=[Verdict(s, True, n) for s, n in zip(sentences, chosen)])
            finish_message(message.id, Outcome(final, wall_ms=1500.0))
            out.append(Cited(message.conversation_id, message.id, doc, {n: passages[n - 1].id for n in chosen},
                             {n: passages[n - 1].kind for n in chosen}))
    assert len(out) == ANSWERS and len({a.doc for a in out}) == 7
    from nistchat.docs.service import warm_up

    warm_up(app)  # as `nistchat serve` does at start
    return out


def new_page(browser, live_server, owner, viewport=WIDE):  # noqa: F811
    base, app = live_server
    cookie = app.session_interface.get_signing_serializer(app).dumps({"owner": owner, "_permanent": True})
    context = browser.new_context(base_url=base, viewport=viewport, accept_downloads=True)
    context.add_cookies([{"name": app.config["SESSION_COOKIE_NAME"], "value": cookie, "url": base}])
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def answer_marks(page, message_id: int):
    return page.locator(f"#answer-{message_id} a.cite-reader")


def open_in_pane(page, mark, passage_id: str) -> dict:
    page.evaluate(WATCH, passage_id)
    mark.click()
    wait_until(page, "window.__shown !== null", 10_000)
    return page.evaluate("window.__shown")


def test_every_citation_of_20_answers_opens_the_viewer_beside_the_answer_at_its_passage(
        browser, live_server, answers, owner):  # noqa: F811
    """Wide screen: each [n] of each answer opens the pane at its passage, highlighted, with the
    answer's sentence marked in it, in under 300 ms from the click (in the page's clock; one over it
    is opened once more and must then be under, as this machine is shared); the chat
    does not move or reload; Esc closes the pane and gives focus back to the mark."""
    page = new_page(browser, live_server, owner)
    timings, kinds, retried = [], {}, []
    try:
        for conv_id in dict.fromkeys(a.conv_id for a in answers):
            page.goto(f"/c/{conv_id}")
            page.evaluate("window.__sameDocument = true")  # gone if anything reloads the chat
            for answer in (a for a in answers if a.conv_id == conv_id):
                marks = answer_marks(page, answer.message_id)
                assert marks.count() == len(answer.cited)
                for i, (n, passage_id) in enumerate(answer.cited.items()):
                    mark = marks.nth(i)
                    assert mark.inner_text() == f"[{n}]"
                    shown = open_in_pane(page, mark, passage_id)
                    if shown["ms"] >= OPEN_BUDGET_MS:  # once more: on a shared machine one stall is not the viewer's
                        retried.append(round(shown["ms"]))
                        page.keyboard.press("Escape")
                        shown = open_in_pane(page, mark, passage_id)
                    assert shown["marks"] >= 1, (answer.doc, passage_id)  # the answer's sentence, marked
                    assert page.evaluate("window.__sameDocument") and page.url.endswith(f"/c/{conv_id}")
                    assert abs(shown["moved"]) < 30, shown  # the chat stayed in place, the mark where it was
                    pane, chat = page.locator("#doc-pane").bounding_box(), page.locator("main").bounding_box()
                    assert chat["x"] + chat["width"] <= pane["x"] + 1  # beside the answer, not over it
                    if not timings:
                        page.screenshot(path=str(ARTIFACTS / "viewer-wide.png"))
                    timings.append((shown["ms"], answer.doc, passage_id))
                    kinds[answer.kinds[n]] = kinds.get(answer.kinds[n], 0) + 1
                    page.keyboard.press("Escape")  # Back, then the popstate closes it: a moment later
                    page.locator("#doc-pane").wait_for(state="hidden", timeout=5_000)
                    assert page.evaluate("document.activeElement.getAttribute('aria-describedby')") == \
                        mark.get_attribute("aria-describedby")  # focus back on the mark
    finally:
        page.context.close()
    slowest = max(timings)
    report = {"citations": len(timings), "answers": len(answers), "documents": len({a.doc for a in answers}),
              "kinds": kinds, "slowest_ms": round(slowest[0], 1),
              "median_ms": round(sorted(t for t, _, _ in timings)[len(timings) // 2], 1),
              "over_budget_then_measured_again_ms": retried}
    (ARTIFACTS / "viewer-timings.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(report)
    assert len(timings) == sum(len(a.cited) for a in answers) >= 2 * ANSWERS
    assert slowest[0] < OPEN_BUDGET_MS, slowest


def test_back_forward_and_escape_close_and_reopen_the_pane(browser, live_server, answers, owner):  # noqa: F811
    """Enter on a mark opens the pane with focus on the passage; Back closes the pane and Forward
    (or a reload) opens it again, the contents scroll the pane
    without touching the address, the close button acts as Esc, and a pane whose request fails
    says so and links to the page."""
    page = new_page(browser, live_server, owner)
    answer = next(a for a in answers if len(a.cited) >= 2)
    first, second = list(answer.cited.values())[:2]
    try:
        page.goto(f"/c/{answer.conv_id}")
        marks = answer_marks(page, answer.message_id)
        marks.nth(0).scroll_into_view_if_needed()
        y = page.evaluate("window.scrollY")
        marks.nth(0).focus()
        page.keyboard.press("Enter")  # from the keyboard: the pane opens with focus on the passage
        page.wait_for_selector(f"#doc-pane section.doc-passage.at[id='{first}']")
        wait_until(page, f"document.activeElement && document.activeElement.id === {json.dumps(first)}", 5_000)
        marks.nth(1).click()  # another citation while the pane is open: the pane follows, no new entry
        page.wait_for_selector(f"#doc-pane section.doc-passage.at[id='{second}']")
        toc = page.locator("#doc-pane .pane-toc")
        toc.locator("summary").click()
        toc.locator("a").nth(1).click()  # the contents scroll the pane, the address stays
        assert page.url.endswith(f"/c/{answer.conv_id}")
        page.go_back()  # Back closes the pane; the chat is where it was
        page.locator("#doc-pane").wait_for(state="hidden")
        assert page.url.endswith(f"/c/{answer.conv_id}") and abs(page.evaluate("window.scrollY") - y) < 40
        page.go_forward()  # Forward opens it again at the last passage
        page.wait_for_selector(f"#doc-pane section.doc-passage.at[id='{second}']")
        page.reload()  # and so does a reload of that entry
        page.wait_for_selector(f"#doc-pane section.doc-passage.at[id='{second}']")
        page.locator("#doc-pane [data-pane-close]").click()  # the close button, like Esc
        page.locator("#doc-pane").wait_for(state="hidden")
        page.route("**/docs/**", lambda route: route.abort("connectionreset"))  # the server gone meanwhile
        marks.nth(0).click()
        problem = page.locator("#doc-pane .problem[role=alert]")
        problem.wait_for()
        assert "could not be loaded" in problem.inner_text() and problem.locator("a").get_attribute("href")
        page.unroute("**/docs/**")
        page.keyboard.press("Escape")
        page.locator("#doc-pane").wait_for(state="hidden")
        page.go_back()  # each entry opening pushed is spent: Back leaves the conversation
        page.wait_for_url(lambda url: not url.endswith(f"/c/{answer.conv_id}"))
    finally:
        page.context.close()


# Run in every page before its own scripts: the first frame in which the cited passage (the
# `at` of the address) is highlighted and inside the window, in the page's clock, which starts
# when the navigation does (the click on the chat page).
FIRST_SEEN = """
(() => {
  const expected = new URLSearchParams(location.search).get('at');
  if (!location.pathname.startsWith('/docs/') || !expected) return;
  const tick = () => {
    const cited = document.querySelector('section.doc-passage.at');
    if (cited && cited.id === expected) {
      const box = cited.getBoundingClientRect();  // in view: its top, or (a long one) most of the window
      const inView = box.top >= -1 ? box.top < innerHeight / 2 : box.bottom > innerHeight / 2;
      if (inView && getComputedStyle(cited).backgroundColor !== 'rgba(0, 0, 0, 0)') {
        window.__seen = performance.now();
        return;
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();
"""


def open_as_page(page, answer: Cited, doc: str, passage_id: str) -> float:
    """Click the answer's first mark on the chat page; ms until the viewer's page shows the passage."""
    page.goto(f"/c/{answer.conv_id}")
    answer_marks(page, answer.message_id).first.click()
    page.wait_for_url(lambda url: f"/docs/{doc}?at=" in url and url.endswith(f"#{passage_id}"))
    wait_until(page, "window.__seen !== undefined", 10_000)
    return page.evaluate("window.__seen")


def test_on_a_phone_a_citation_opens_the_viewers_page_at_the_passage(browser, live_server, answers, owner):  # noqa: F811
    """Narrow screen: the mark is a plain link to the viewer's page, which opens at the passage,
    highlighted, in under 300 ms from the click (one citation per document; one over it is loaded
    once more and must then be under); Back returns to the chat."""
    page = new_page(browser, live_server, owner, PHONE)
    page.context.add_init_script(FIRST_SEEN)
    seen, retried = [], []
    try:
        for doc in dict.fromkeys(a.doc for a in answers):
            answer = next(a for a in answers if a.doc == doc)
            passage_id = next(iter(answer.cited.values()))
            ms = open_as_page(page, answer, doc, passage_id)
            if ms >= OPEN_BUDGET_MS:  # once more: on a shared machine one stall is not the viewer's
                retried.append(round(ms))
                ms = open_as_page(page, answer, doc, passage_id)
            cited = page.locator("section.doc-passage.at")
            assert cited.get_attribute("id") == passage_id and cited.locator("mark.match").count() >= 1
            box = cited.bounding_box()
            assert box["y"] < PHONE["height"] and box["x"] + box["width"] <= PHONE["width"] + 1
            assert page.locator("#doc-pane").is_hidden()
            seen.append(ms)
            if len(seen) == 1:
                page.screenshot(path=str(ARTIFACTS / "viewer-narrow.png"))
            page.go_back()
            page.wait_for_url(lambda url: url.endswith(f"/c/{answer.conv_id}"))
    finally:
        page.context.close()
    print(f"viewer page on a phone: at the passage in {max(seen):.0f} ms at most over {len(seen)} documents"
          f" (over budget at first, then measured again: {retried})")
    assert len(seen) == 7 and max(seen) < OPEN_BUDGET_MS


def log_in(page) -> None:
    page.goto("/admin")
    if page.locator("form.login").count():
        page.fill("form.login input[name=password]", ADMIN_PASSWORD)
        page.click("form.login button[type=submit]")
        page.wait_for_load_state("load")


def test_a_down_vote_reaches_the_export_the_metrics_and_a_reported_item_an_eval_run_scores(
        browser, live_server, answers, owner):  # noqa: F811
    """The whole way of a 👎 in one browser: voted with a reason under an answer, it is in the CSV
    and JSONL logs, counted on /metrics (reason, risk class, cited document), listed on the admin's
    feedback page, made an evaluation item there with evidence copied from the viewer pane, and
    scored by a retrieval run of the `reported` set started from /evals."""
    from nistchat.extensions import db
    from nistchat.models import EvalItem, EvalRun, Feedback

    _base, app = live_server
    answer = answers[0]
    title = next(d.display for d in app_runtime_of(live_server).documents() if d.id == answer.doc)
    page = new_page(browser, live_server, owner)
    try:
        page.goto(f"/c/{answer.conv_id}")
        form = page.locator(f"#feedback-{answer.message_id}")
        form.locator("summary").click()
        form.locator("input[value=incomplete]").check()
        form.locator("textarea[name=text]").fill("leaves out the second half of the section")
        form.locator("button[value=down]").click()
        page.wait_for_selector(f"#feedback-{answer.message_id} .saved")
        with app.app_context():
            vote = db.session.query(Feedback).filter_by(message_id=answer.message_id).one()
            assert (vote.vote, vote.reason) == ("down", "incomplete")
            feedback_id = vote.id
        rows = list(csv.DictReader(io.StringIO(page.request.get("/logs.csv").text())))
        row = next(r for r in rows if int(r["message"] if "message" in r else r["id"]) == answer.message_id)
        assert [(f["vote"], f["reason"]) for f in json.loads(row["feedback"])] == [("down", "incomplete")]
        records = [json.loads(line) for line in page.request.get("/logs.jsonl").text().splitlines()]
        record = next(r for r in records if r["feedback"])
        assert record["feedback"][0]["text"] == "leaves out the second half of the section"

        log_in(page)
        page.goto("/metrics")
        assert "Incomplete 1" in page.locator("#feedback-totals").inner_text()
        assert page.locator("#feedback-risk tr", has_text="LOW").inner_text().split()[-1] == "1"
        assert page.locator("#feedback-docs tr", has_text=title).inner_text().split()[-1] == "1"

        page.goto("/admin/feedback")
        item_row = page.locator(f"#feedback-row-{feedback_id}")
        assert "Incomplete" in item_row.inner_text() and "leaves out the second half" in item_row.inner_text()
        item_row.locator("summary", has_text="Make it an evaluation item").click()
        item_form = item_row.locator("form.item-form")
        assert item_form.locator("select[name=doc]").input_value() == answer.doc  # the cited document, by title
        item_row.locator(".feedback-sources a").first.click()  # the passage in the pane, beside the form
        cited = page.locator("#doc-pane section.doc-passage.at")
        cited.wait_for()
        evidence = cited.inner_text().split("\n")[0].strip()  # copied from the pane, as the admin would
        evidence = evidence[:200].rsplit(" ", 1)[0] if len(evidence) > 200 else evidence
        assert len(evidence) >= 25, evidence
        item_form.locator("textarea[name=answer]").fill("What the section says, in full.")
        item_form.locator("textarea[name=evidence]").fill(evidence)
        page.screenshot(path=str(ARTIFACTS / "admin-feedback.png"))
        page.keyboard.press("Escape")
        item_form.locator("button[type=submit]").click()
        page.wait_for_selector("p.notice[role=status]")
        assert "Saved as evaluation item r001" in page.locator("p.notice").inner_text()

        page.goto("/evals")
        page.select_option("form[hx-post] select[name=kind]", "retrieval")
        page.select_option("form[hx-post] select[name=set]", "reported")
        page.click("form[hx-post] button[type=submit]")
        page.wait_for_selector("#eval-job .job-status:text-is('done')", timeout=120_000)
        page.click("#eval-job a")
        page.wait_for_url("**/evals/*")
        assert "r001" in page.locator("main").inner_text()
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[1].split("?")[0])
        with app.app_context():
            run = db.session.get(EvalRun, run_id)
            items = db.session.query(EvalItem).filter_by(run_id=run_id).all()
            assert run.status == "done" and run.sets == "reported"
            assert items and {i.question_id for i in items} == {"r001"} and all(i.passed is not None for i in items)
            assert {i.set_name for i in items} == {"reported"}
    finally:
        page.context.close()


STEMS_IN = """
() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('script, style, template, noscript').forEach((e) => e.remove());
  const said = [document.title, body.textContent];
  document.querySelectorAll('[title], [aria-label], [placeholder], [alt]').forEach((e) => {
    for (const name of ['title', 'aria-label', 'placeholder', 'alt']) if (e.hasAttribute(name)) said.push(e.getAttribute(name));
  });
  const links = [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'));
  return {text: said.join('\\n'), links};
}
"""
NOT_PAGES = re.compile(r"\.(csv|jsonl|json|prom)(\?|$)|/export\.|^/static/|^/ask/stream/")


def stems_shown(text: str, stems: list[str]) -> list[str]:
    """The document ids (file stems) a person could read in `text`: in words, not in a web address
    (a passage may quote its own DOI, https://doi.org/10.6028/NIST.AI.600-1)."""
    words = re.sub(r"\S*(://|doi\.org/)\S*", " ", text)
    return [s for s in stems if re.search(rf"(?<![\w/.]){re.escape(s)}(?![\w-])", words)]


def crawl(page, seeds: list[str], stems: list[str], limit: int = 120) -> dict[str, list[str]]:
    """Every same-site page reachable from the seeds (one per path, the seeds' own queries kept),
    with the stems each shows; downloads and streams are left out (they are not pages)."""
    seen, queue, found = set(), list(seeds), {}
    while queue and len(seen) < limit:
        url = queue.pop(0)
        path = url.split("#")[0]
        key = path if path in seeds else path.split("?")[0]
        if key in seen or NOT_PAGES.search(path):
            continue
        seen.add(key)
        response = page.goto(path)
        if response is None or "text/html" not in (response.headers.get("content-type") or ""):
            continue
        shown = page.evaluate(STEMS_IN)
        found[path] = stems_shown(shown["text"], stems)
        queue.extend(h for h in shown["links"] if h.startswith("/") and not h.startswith("//"))
    return found


def test_no_file_stem_is_shown_on_any_page(browser, live_server, answers, owner):  # noqa: F811
    """Crawl what a person and an admin can open (chat, every conversation, history and a search,
    the documents and a cited passage, the pane beside the chat, a refused document choice, an
    audit and its best passage in the pane, status, admin pages,
    questions, feedback, evaluation runs and a comparison, metrics) and fail on any document file
    stem in the text they read (text, titles, labels, placeholders, options), ids in addresses aside.
    Runs after the 👎 test in this module, so the feedback and evaluation pages hold its vote,
    item and run."""
    runtime = app_runtime_of(live_server)
    stems = [d.id for d in runtime.documents()]
    assert stems_shown(f"[2] {stems[0]} — 1. Scope", stems) == [stems[0]]  # the check can fail
    assert stems_shown(f"see https://doi.org/10.6028/{stems[0]} and /docs/{stems[1]}", stems) == []
    page = new_page(browser, live_server, owner)
    try:
        answer = answers[1]
        page.goto(f"/c/{answer.conv_id}")  # the pane beside the chat
        answer_marks(page, answer.message_id).first.click()
        page.locator("#doc-pane section.doc-passage.at").wait_for()
        pane = stems_shown(page.evaluate(STEMS_IN)["text"], stems)
        page.keyboard.press("Escape")
        page.goto("/")  # a document choice the index no longer has (a page loaded before a rebuild)
        page.evaluate("(() => { const box = document.querySelector('#ask-form input[name=docs]');"
                      " box.value = 'NIST.AI.404'; box.checked = true; })()")
        page.fill("#question", "What is in it?")
        page.click("#ask-form button[type=submit]")
        problem = page.locator("#turns .problem")
        problem.wait_for()
        assert "not in the index" in problem.inner_text()
        pane += stems_shown(page.evaluate(STEMS_IN)["text"], stems)
        page.goto("/audit")  # an audit of a pasted answer (no verifier model), so its page has passages
        page.fill("#audit-answer", " ".join(claim_of(runtime.index.parents[p]) + "." for p in answer.cited.values()))
        page.locator("#audit-form input[name=judge]").uncheck()
        page.click("#audit-form button[type=submit]")
        page.wait_for_selector("#audit-result")
        audit_page = page.url
        best = page.locator(".audit-sentence details").first  # the audit's best passage, in the same pane
        best.locator("summary").click()
        best.locator("a[data-pane]").click()
        page.locator("#doc-pane section.doc-passage.at mark.match").first.wait_for()
        pane += stems_shown(page.evaluate(STEMS_IN)["text"], stems)
        page.keyboard.press("Escape")
        first_passage = next(iter(answer.cited.values()))
        user_seeds = ["/", f"/c/{answer.conv_id}", "/history", "/history?q=risk", "/docs",
                      f"/docs/{answer.doc}?at={first_passage}", "/audit", "/status", "/topics"]
        as_user = crawl(page, user_seeds, stems)
        log_in(page)
        runs = [int(h.rsplit("/", 1)[1]) for h in re.findall(r'href="(/evals/\d+)"', page.request.get("/evals").text())]
        admin_seeds = ["/admin", "/admin/questions", "/admin/feedback", "/evals", "/metrics", "/status", "/history",
                       *([f"/evals/compare?a={runs[-1]}&b={runs[0]}"] if runs else [])]
        as_admin = crawl(page, admin_seeds, stems)
    finally:
        page.context.close()
    visited = set(as_user) | set(as_admin)
    print(f"crawled {len(visited)} pages ({len(as_user)} as a user, {len(as_admin)} as an admin)")
    for wanted in ("/", "/history", "/docs", "/status", "/admin/feedback", "/evals", "/metrics", "/admin/questions"):
        assert any(p.split("?")[0] == wanted for p in visited), wanted
    assert any(p.startswith("/c/") for p in visited) and any(p.startswith("/docs/") for p in visited)
    assert any(p.startswith("/audit/") for p in visited) or audit_page, visited
    shown = {p: s for p, s in {**as_user, **{f"{k} (admin)": v for k, v in as_admin.items()}}.items() if s}
    assert not pane, pane
    assert not shown, shown


def app_runtime_of(live_server):
    from nistchat.extensions import app_runtime

    return app_runtime(live_server[1])
